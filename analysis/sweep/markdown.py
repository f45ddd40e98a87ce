"""The sweep's report.md: the seed-shaped table (one row per point: base, candidate, change
with its interval at the points' family level and verdict, the lookup's CPU per operation, a link to the point's
own report), where the change turns, and the command that reproduces the sweep.
Everything from the run is escaped (analysis/report/mdtext.py)."""
from __future__ import annotations

import shlex

from analysis.sweep import cells, hosts
from analysis.sweep.crossover import crossovers, sentence
from analysis.sweep.results import PointRow, SweepResults
from analysis.report.fmt import level
from analysis.report.markdown_tables import fdr_line
from analysis.report.mdtext import code_fence, code_span, esc, esc_spans, verdict


def methods(res: SweepResults) -> list[str]:
    return sorted({p.method for p in res.points if p.metric is not None and p.method})


def table(res: SweepResults) -> list[str]:
    head = [esc(a.name) for a in res.axes]
    load = cells.is_load_time(res)
    many = len(methods(res)) > 1
    lk_head, lk_named = cells.lookup_header(res)
    head += [f"Baseline ({esc(res.base)})", f"PR ({esc(res.cand)})", "Change",
             f"{level(res.fdr.level if res.fdr else res.confidence)} CI", "Verdict"]
    if load:
        head += [f"best {esc(res.base)}", f"best {esc(res.cand)}"]
    if many:
        head.append("Method")
    if cells.show_lookup(res):
        head.append(esc(lk_head))
    head.append("Report")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in res.points:
        out.append("| " + " | ".join(_row(res, p, load, many, lk_named, cells.show_lookup(res))) + " |")
    return out


def _row(res: SweepResults, p: PointRow, load: bool, many: bool, lk_named: bool,
         lookup: bool) -> list[str]:
    row = [esc(p.labels.get(a.name, "")) for a in res.axes]
    if p.metric is None:
        row += ["—", "—", "—", "", esc(cells.status(p))]
    else:
        ch, ci = cells.change(p)
        row += [esc(cells.side(p, "base")), esc(cells.side(p, "cand")), esc(ch), esc(ci),
                verdict(cells.verdict(p), cells.verdict_text(p))]
    if load:
        row += [esc(cells.best(p, res.base)), esc(cells.best(p, res.cand))]
    if many:
        row.append(esc(p.method))
    if lookup:
        row.append(esc(cells.lookup(p, lk_named)))
    row.append(f"[{esc(p.id)}]({p.report}/report.md)" if p.report else "")
    return row


def where_ran(res: SweepResults) -> list[str]:
    """Which point ran on which host (a sweep run over many runners)."""
    out = [esc_spans(hosts.where_text(res)) + ":", "", "| Point | Host | CPU | Logical CPUs |",
           "|---|---|---|---|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in hosts.host_rows(res)]
    return out


def render(res: SweepResults) -> str:
    axes = " × ".join(f"{a.name} ({len(a.values)})" for a in res.axes) or "no axis (one point)"
    out = [f"## stallscope sweep: {esc(res.case)}: {esc(res.cand)} vs {esc(res.base)}", "",
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
    out += table(res) + [""] + fdr_line(res.fdr)
    if hosts.show_hosts(res):
        out += where_ran(res) + [""]
    if cells.lookup_note(res):
        out += [esc(cells.lookup_note(res)), ""]
    m = methods(res)
    what = "load time per rep (lower is better)" if cells.is_load_time(res) else "throughput"
    out += [f"Medians of the {what}; CV = spread (stdev/mean); the change is a ratio on the log "
            f"scale with its interval; verdicts use the noise "
            f"({res.noise * 100:g}%) and regression ({res.regression * 100:g}%) waterlines after "
            "the interval (docs/statistics.md)."
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
