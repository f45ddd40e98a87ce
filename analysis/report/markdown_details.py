"""The folded <details> blocks of report.md: per-rep values, top movers, callers, the
per-thread view and the reasons behind each verdict. They are what gives way first when
the comment must fit GitHub's limit (markdown.render)."""
from __future__ import annotations

from analysis.compare.results import Results, Side
from analysis.report.fmt import THREAD_LABEL, fmt_ns, row_name, share
from analysis.report.markdown_tables import fdr_line, fn_table, function_level, movers_level, notes_lines
from analysis.report.mdtext import esc
from analysis.report import tables
from analysis.report.table import markdown, md_table


def details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def _rep_rows(r: Results, sides: tuple[tuple[Side, Side], tuple[Side, Side]], fmt) -> list[str]:
    """Variant | reps | flat per rep | cum per rep, for base and cand."""
    return md_table(["Variant", "reps", "flat per rep", "cum per rep"],
                    [[esc(v), ", ".join(map(str, a.reps)), ", ".join(fmt(x) for x in a.values),
                      ", ".join(fmt(x) for x in b.values)] for v, (a, b) in zip((r.base, r.cand), sides)])


def _per_op_reps(r: Results) -> list[str]:
    p = r.profile
    body = [f"**{esc(p.per_op_command)} commands in each profile window (ops/s × seconds "
            f"perf was attached, or the load's request count)**", ""]
    tot = p.per_op_total
    rows = []
    for v in (r.base, r.cand):
        side = (tot.base if v == r.base else tot.cand) if tot else None
        rows.append([esc(v), ", ".join(map(str, p.reps.get(v, []))), ", ".join(f"{x:,.0f}" for x in p.ops.get(v, [])),
                     ", ".join(fmt_ns(x) for x in side.values) if side else "n/a"])
    body += md_table(["Variant", "reps", "operations", "all samples per op"], rows) + [""]
    for fr in p.focus:
        if fr.base_flat_ns is None:
            continue
        body += [f"**{esc(fr.name)} flat / cum, CPU time per {esc(p.per_op_command)} "
                 f"({THREAD_LABEL[fr.thread]})**", ""]
        body += _rep_rows(r, ((fr.base_flat_ns, fr.base_cum_ns), (fr.cand_flat_ns, fr.cand_cum_ns)),
                          fmt_ns)
        body.append("")
    return body


def per_rep(r: Results) -> list[str]:
    body = []
    for row in r.throughput + r.paired + r.latency:
        body += [f"**{esc(row_name(row))} · {esc(row.metric)} ({esc(row.unit)})**", ""]
        body += markdown(tables.rep_values(r, row)) + [""]
    for fr in r.profile.focus:
        body += [f"**{esc(fr.name)} flat / cum, % of samples ({THREAD_LABEL[fr.thread]})**", ""]
        body += _rep_rows(r, ((fr.base_flat, fr.base_cum), (fr.cand_flat, fr.cand_cum)), share)
        body.append("")
    if r.profile.per_op:
        body += _per_op_reps(r)
    return details("Per-rep values", body) if body else []


def movers(r: Results, n: int) -> list[str]:
    p = r.profile
    if not p.available or not p.movers:
        return []
    rows = p.movers[:n]
    body = [f"Flat share change, {THREAD_LABEL[p.thread]}, established moves (interval clear "
            f"of 0) first, then by size. {len(rows)} of {len(p.movers)} listed; the focus "
            "functions are in their own table above.", ""]
    body += fn_table(rows, "flat", r.base, r.cand, p.per_op_command if p.per_op else "",
                     confidence=movers_level(r))
    body += [""] + fdr_line(p.movers_fdr) + notes_lines(rows, ("flat",))
    return details(f"Top movers ({THREAD_LABEL[p.thread]})", body)


def callers(r: Results) -> list[str]:
    p = r.profile
    if not p.callers:
        return []
    body = [f"Samples of each focus function by caller, % of the {THREAD_LABEL[p.thread]}'s "
            "samples, profile reps merged. A prefetch loop inlined into a caller moves cost "
            "there; this is where to look.", ""]
    body += markdown(tables.callers(r))
    return details("Callers of the focus functions", body)


def threads(r: Results) -> list[str]:
    p = r.profile
    if not p.threads and not p.focus_other_view:
        return []
    body = []
    if p.threads:
        body += ["Share of all samples per thread group (% of samples):", ""]
        body += markdown(tables.threads(r, function_level(r)))
        body.append("")
    if p.focus_other_view:
        body += ["Focus functions over all threads (process-wide, % of all samples):", ""]
        body += fn_table(p.focus_other_view, "flat", r.base, r.cand, confidence=function_level(r)) + [""]
        body += fn_table(p.focus_other_view, "cum", r.base, r.cand, confidence=function_level(r))
    return details("Per thread", body)


def methods(r: Results) -> list[str]:
    body = []
    for row in r.throughput + r.paired + r.latency:
        c = row.change
        body.append(f"- {esc(row_name(row))} · {esc(row.metric)}: {esc(c.verdict)}: "
                    f"{esc(c.reason)} Change: {esc(c.estimator)}. Method: {esc(c.method)}.")
    for fr in r.profile.focus:
        c = fr.flat_change
        body.append(f"- {esc(fr.name)} flat: {esc(c.verdict)}: {esc(c.reason)} "
                    f"Change: {esc(c.estimator)}.")
        n = fr.flat_ns_change
        if n is not None:
            body.append(f"- {esc(fr.name)} flat per {esc(r.profile.per_op_command)}: "
                        f"{esc(n.verdict)}: {esc(n.reason)} Change: {esc(n.estimator)}. "
                        f"Method: {esc(n.method)}.")
    return details("How the verdicts were reached", body) if body else []
