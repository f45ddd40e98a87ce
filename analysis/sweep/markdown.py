"""The sweep's report.md: the seed-shaped table (one row per point: base, candidate, change
with its interval at the points' family level and verdict, the lookup's CPU per operation, a link to the point's
own report), where the change turns, and the command that reproduces the sweep.
Everything from the run is escaped (analysis/report/mdtext.py)."""
from __future__ import annotations

import shlex

from analysis.sweep import cells, hosts
from analysis.sweep.crossover import crossovers, sentence
from analysis.sweep.results import SweepResults
from analysis.sweep.tables import hosts_table, methods, mountain_table, points_table
from analysis.report.markdown_tables import fdr_line
from analysis.report.mdtext import code_fence, code_span, esc, esc_spans
from analysis.report.table import Table, markdown


def render(res: SweepResults, table: Table | None = None, heading: str = "") -> str:
    """`table`: the points table (an experiment's, with its seed columns; by default the
    sweep's own); `heading`: the line over it (an experiment's part)."""
    axes = " × ".join(f"{a.name} ({len(a.values)})" for a in res.axes) or "no axis (one point)"
    heading = heading or f"## stallscope sweep: {esc(res.case)}: {esc(res.cand)} vs {esc(res.base)}"
    out = [heading, "",
           f"Sweep {code_span(res.sweep_id)} ({esc(res.size)} size, {esc(res.created)}): "
           f"{len(res.points)} points over {esc(axes)}; status {esc(res.status)}.", ""]
    if res.others:
        out += [f"Other candidates against {esc(res.base)}: " + ", ".join(
            f"[{esc(c)}]({d}/report.md)" for c, d in res.others.items()) + ".", ""]
    if res.sets:
        out += ["Every point with " + ", ".join(code_span(f"--set {k}={v}") for k, v in res.sets.items())
                + ".", ""]
    turns = [sentence(c, res.x_axis) for c in crossovers(res)]
    if res.x_axis:
        out += [f"**Along {esc(res.x_axis)}:** " + " · ".join(esc(t) for t in turns), ""]
    for n in res.notes:
        out += [f"> Note: {esc_spans(n)}", ""]
    out += markdown(table or points_table(res, "report.md")) + [""] + fdr_line(res.fdr)
    if hosts.show_hosts(res):
        out += [esc_spans(hosts.where_text(res)) + ":", ""] + markdown(hosts_table(res)) + [""]
    if cells.lookup_note(res):
        out += [esc(cells.lookup_note(res)), ""]
    mountain = mountain_table(res)
    if mountain is not None:
        out += [f"**Memory mountain:** each focus function's out-of-cache CPU per operation: its cost "
                f"at a point minus at the in-cache reference, the group's point of fewest keys "
                f"({res.mountain.reference_keys:,} keys) (docs/statistics.md, \"Memory stalls without a PMU\"); 95% intervals in "
                "results.json, the plot in report.html.", ""] + markdown(mountain) + [""]
    m = methods(res)
    what = "load time per rep (lower is better)" if cells.is_load_time(res) else "throughput"
    out += [f"Medians of the {what}; CV = spread (stdev/mean); the change is a ratio on the log "
            f"scale with its interval; verdicts use "
            + (f"the line ({res.noise * 100:g}% either way)" if res.regression == res.noise else
               f"the lines ({res.noise * 100:g}% for an improvement, {res.regression * 100:g}% for "
               "a regression)")
            + " after the interval (docs/statistics.md)."
            + (f" Measured by {esc(m[0])}." if len(m) == 1 else "")
            + (" The best columns are the fastest load of each side (the seeds' min-of-N)."
               if cells.is_load_time(res) else ""), "",
            "The crossover plot (change with its interval against the swept axis) is in "
            "report.html and crossover.svg beside this file; each point's full report is linked "
            "in the last column.", ""]
    if res.command:
        out += ["<details><summary>Reproduce</summary>", ""]
        out += code_fence(shlex.join(res.command), "sh") + ["", "</details>", ""]
    return "\n".join(out)
