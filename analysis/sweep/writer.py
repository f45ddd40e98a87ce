"""A sweep's report directory: report.md, report.html, results.json and crossover.svg of
the sweep, and every point's own full report (the compare report) in <point id>/."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from analysis.inputs.layout import CROSSOVER_SVG, REPORT_HTML, REPORT_MD, RESULTS_JSON
from analysis.compare.options import CompareOptions
from analysis.report.writer import write_reports
from analysis.sweep import html as sweep_html
from analysis.sweep import markdown as sweep_md
from analysis.sweep.point_rows import PointAnalysis, analyse_sweep
from analysis.sweep.sweep_manifest import load_sweep
from analysis.sweep.plot import crossover_svg
from analysis.sweep.results import SweepResults


def write_point_reports(points: list[PointAnalysis], out: Path) -> None:
    for pa in points:
        if pa.results is not None:
            write_reports(pa.results, out / pa.row.id)
            pa.row.report = pa.row.id


def write_sweep_files(res: SweepResults, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    svg = crossover_svg(res)
    paths = {"md": out / REPORT_MD, "html": out / REPORT_HTML, "json": out / RESULTS_JSON,
             "svg": out / CROSSOVER_SVG}
    paths["svg"].write_text('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg)
    paths["md"].write_text(sweep_md.render(res))
    paths["html"].write_text(sweep_html.render(res, svg))
    paths["json"].write_text(res.dumps())
    return paths


def report_sweep(sweep_dir: Path, out: Path, opts: CompareOptions | None = None,
                 lookup: list[str] | None = None) -> tuple[SweepResults, dict[str, Path]]:
    """Analyse a sweep directory and write every report into `out`: the first candidate
    against the baseline there, each further candidate (a sweep of more than two variants)
    against the same baseline in out/vs-NAME/, linked from the first."""
    out = Path(out)
    opts = opts or CompareOptions()
    names = load_sweep(sweep_dir).variant_names
    base = opts.base or names[0]
    cands = [opts.cand] if opts.cand else [n for n in names if n != base] or [base]
    dirs = {c: "." if i == 0 else f"vs-{c}" for i, c in enumerate(cands)}
    for c in reversed(cands):             # the first last: its results are returned
        where = out / dirs[c]
        res, points = analyse_sweep(sweep_dir, replace(opts, base=base, cand=c), lookup, where)
        write_point_reports(points, where)
        res.others = {o: os.path.relpath(d, dirs[c]) for o, d in dirs.items() if o != c}
        paths = write_sweep_files(res, where)
    return res, paths
