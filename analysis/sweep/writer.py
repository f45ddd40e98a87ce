"""A sweep's report directory: report.md, report.html, results.json and crossover.svg of
the sweep, and every point's own full report (the compare report) in <point id>/."""
from __future__ import annotations

from pathlib import Path

from analysis.compare.options import CompareOptions
from analysis.report.writer import write_reports
from analysis.sweep import html as sweep_html
from analysis.sweep import markdown as sweep_md
from analysis.sweep.engine import PointAnalysis, analyse_sweep
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
    paths = {"md": out / "report.md", "html": out / "report.html", "json": out / "results.json",
             "svg": out / "crossover.svg"}
    paths["svg"].write_text('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg)
    paths["md"].write_text(sweep_md.render(res))
    paths["html"].write_text(sweep_html.render(res, svg))
    paths["json"].write_text(res.dumps())
    return paths


def report_sweep(sweep_dir: Path, out: Path, opts: CompareOptions | None = None,
                 lookup: list[str] | None = None) -> tuple[SweepResults, dict[str, Path]]:
    """Analyse a sweep directory and write every report into `out`."""
    out = Path(out)
    res, points = analyse_sweep(sweep_dir, opts, lookup, out)
    write_point_reports(points, out)
    return res, write_sweep_files(res, out)
