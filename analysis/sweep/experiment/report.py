"""An experiment directory -> its report: every part's sweep table with the seed's number
beside each row and whether the direction agrees, the crossover plot of each part, the
points' own reports, and results.json ("stallscope.experiment-results/1").

experiment.json (analysis/sweep/experiment/manifest.py, written by collectors.sweep) names
the parts, their sweep directories and the seed rows; this module reads it alone
(docs/experiments.md)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from analysis.compare.options import CompareOptions
from analysis.inputs.layout import REPORT_HTML, REPORT_MD, RESULTS_JSON, SWEEP_JSON
from analysis.sweep import html as sweep_html
from analysis.sweep import markdown as sweep_md
from analysis.sweep.point_rows import analyse_sweep
from analysis.sweep.experiment.manifest import ExperimentManifest, load_experiment_dir
from analysis.sweep.plot import crossover_svg
from analysis.sweep.results import SweepResults, json_clean
from analysis.sweep.seeds import SeedRow, agree_cell, agreement, match, seed_cell
from analysis.sweep.tables import points_table as sweep_points_table
from analysis.sweep.writer import write_point_reports
from analysis.report.mdtext import esc
from analysis.report.table import Cell, Column, Table

SCHEMA = "stallscope.experiment-results/1"


@dataclass
class PartResult:
    id: str
    heading: str
    res: SweepResults
    seed_rows: list[SeedRow]
    svg: str

    def seeds(self) -> list[SeedRow | None]:
        return [match(self.seed_rows, p.labels) for p in self.res.points]


def analyse_experiment(exp_dir: Path, out: Path, opts: CompareOptions | None = None
                       ) -> tuple[ExperimentManifest, list[PartResult]]:
    """Every part that has a sweep directory, analysed; its points' reports written under
    out/<part id>/<point id>/."""
    d = load_experiment_dir(exp_dir)
    parts = []
    for p in d.parts:
        sweep_dir = Path(exp_dir) / p.sweep
        if not (sweep_dir / SWEEP_JSON).is_file():
            continue
        res, points = analyse_sweep(sweep_dir, opts, None, out / p.id)
        write_point_reports(points, out / p.id)
        for row in res.points:
            if row.report:
                row.report = f"{p.id}/{row.report}"
        parts.append(PartResult(p.id, p.heading or p.id, res, p.seed_rows, crossover_svg(res)))
    return d, parts


def points_table(pr: PartResult, page: str) -> Table:
    """The part's sweep table with two more columns before "Report": the seed's numbers and
    whether our verdict agrees with it (both renders, from the same data)."""
    t = sweep_points_table(pr.res, page)
    seeds = pr.seeds()
    t.insert(-1, [Column("Seed"), Column("Agrees")],
             [[Cell(seed_cell(s)), Cell(agree_cell(p, s), cls=f"agree-{agreement(p, s)}")]
              for p, s in zip(pr.res.points, seeds)])
    return t


def _md_part(pr: PartResult) -> list[str]:
    r = pr.res
    heading = f"### Part {esc(pr.id)}: {esc(r.case)}: {esc(r.cand)} vs {esc(r.base)}"
    return sweep_md.render(r, points_table(pr, "report.md"), heading).splitlines()


def render_md(d: ExperimentManifest, parts: list[PartResult]) -> str:
    out = [f"## stallscope experiment {esc(d.name)}: {esc(d.title)}", "",
           f"Seed: {esc(d.seed)}. {esc(d.technique)}", "",
           f"Size {esc(d.size)}; started {esc(d.created)}; status {esc(d.status)}.", ""]
    out += [f"> {esc(n)}" for n in d.notes] + ([""] if d.notes else [])
    for pr in parts:
        out += _md_part(pr) + [""]
    missing = [p.id for p in d.parts if p.id not in {pr.id for pr in parts}]
    if missing:
        out.append(f"Parts not run yet: {', '.join(missing)}.")
    out.append("Seed: the seed's own change and numbers for the same setup (its hardware, "
               "its sizes); Agrees: whether our verdict has the seed's direction (gain, loss or "
               "flat within 3%); below what this run could see where the seed's change is "
               "smaller than the smallest change our run could establish (at each part's "
               "interval level, 80% power); undecided where our interval decided nothing about "
               "a change it could have seen.")
    return "\n".join(out) + "\n"


def render_html(d: ExperimentManifest, parts: list[PartResult]) -> str:
    hparts = [sweep_html.Part(pr.res, heading=f"Part {pr.id}: {pr.heading}",
                              table=points_table(pr, "report.html"), plot=pr.svg) for pr in parts]
    intro = f"Seed: {d.seed}. {d.technique} Size {d.size}; status {d.status}."
    return sweep_html.render_page(f"stallscope experiment {d.name}: {d.title}", hparts,
                                  intro=intro, footnotes=list(d.notes))


def results_json(d: ExperimentManifest, parts: list[PartResult]) -> str:
    doc = {"schema": SCHEMA, "name": d.name, "title": d.title, "seed": d.seed,
           "size": d.size, "status": d.status, "parts": []}
    for pr in parts:
        rows = []
        for p, s in zip(pr.res.points, pr.seeds()):
            rows.append({"point": p.id, "seed": s.to_json() if s else None,
                         "agrees": agreement(p, s) or None})
        doc["parts"].append({"id": pr.id, "heading": pr.heading, "sweep": pr.res.to_json(),
                             "seed_rows": rows})
    return json.dumps(json_clean(doc), indent=2, ensure_ascii=False) + "\n"


def report_experiment(exp_dir: Path, out: Path, opts: CompareOptions | None = None) -> dict[str, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    d, parts = analyse_experiment(Path(exp_dir), out, opts)
    paths = {"md": out / REPORT_MD, "html": out / REPORT_HTML, "json": out / RESULTS_JSON}
    paths["md"].write_text(render_md(d, parts))
    paths["html"].write_text(render_html(d, parts))
    paths["json"].write_text(results_json(d, parts))
    for pr in parts:
        (out / f"crossover-{pr.id}.svg").write_text(
            '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + pr.svg)
    return paths
