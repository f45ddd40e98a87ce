"""The sweep's report.html: the same table as report.md with the crossover plot inline (one
self-contained file, no script), and a link to each point's own report.html. Everything
from the run goes through Jinja2 autoescaping; only the SVG we drew (matplotlib, which
escapes its text) is marked safe. An experiment renders several sweeps (parts) in one page
with extra columns (the seed's numbers)."""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from analysis.report.fmt import level
from analysis.report.html import code_spans
from analysis.report.markdown_tables import fdr_line
from analysis.report.table import Table
from analysis.sweep import cells, hosts
from analysis.sweep.crossover import crossovers, sentence
from analysis.sweep.tables import hosts_table, methods, mountain_table, points_table
from analysis.sweep.plot import crossover_svg, mountain_svg
from analysis.sweep.results import SweepResults

TEMPLATES = Path(__file__).with_name("templates")
# table.j2: the HTML render of analysis/report/table.py's Table, shared with report.html
TABLES = Path(__file__).parent.parent / "report" / "templates"


@dataclass
class Part:
    """One sweep in a page: its results, and its points table (an experiment's has the
    seed's columns; None: the sweep's own)."""
    res: SweepResults
    heading: str = ""
    table: Table | None = None
    plot: str | None = None          # the crossover SVG (drawn when None)


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader([str(TEMPLATES), str(TABLES)]),
                      autoescape=select_autoescape(["html", "j2"], default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(code=code_spans)
    env.globals.update(cells=cells)
    return env


def _part(p: Part) -> dict:
    res = p.res
    header, named = cells.lookup_header(res)
    return {"res": res, "heading": p.heading, "methods": methods(res),
            "turns": [sentence(c, res.x_axis) for c in crossovers(res)] if res.x_axis else [],
            "load": cells.is_load_time(res), "lookup_header": header, "lookup_named": named,
            "lookup_shown": cells.show_lookup(res), "lookup_note": cells.lookup_note(res),
            "table": p.table or points_table(res, "report.html"),
            "level": level(res.fdr.level if res.fdr else res.confidence),
            "fdr": fdr_line(res.fdr)[0] if res.fdr else "",
            "plot": Markup(p.plot if p.plot is not None else crossover_svg(res)),
            "command": shlex.join(res.command),
            "hosts": hosts_table(res) if hosts.show_hosts(res) else None,
            "where": hosts.where_text(res),
            "mountain": mountain_table(res), "mountain_plot": Markup(mountain_svg(res) or "")}


def render_page(title: str, parts: list[Part], intro: str = "", footnotes: list[str] | None = None) -> str:
    return _env().get_template("sweep.html.j2").render(
        title=title, intro=intro, parts=[_part(p) for p in parts], footnotes=footnotes or [])


def render(res: SweepResults, plot: str | None = None) -> str:
    title = f"stallscope sweep: {res.case}: {res.cand} vs {res.base}"
    intro = ""
    if res.others:
        links = Markup(", ").join(Markup('<a href="{}/report.html">{}</a>').format(d, c)
                                  for c, d in res.others.items())
        intro = Markup("Other candidates against {}: ").format(res.base) + links + "."
    return render_page(title, [Part(res, plot=plot)], intro=intro)
