"""What report.md and report.html lead with, and the PR comment posts (a reviewer reads it in
ten seconds): the headline sentence (the throughput change and its interval), the counts of
verdicts, then one table per kind the seed PR comments paste: throughput per test, the TMA
funnel's memory path L1→L4 (or one line on why there is none), the focus functions' cost
per operation and share, and where the time went (results.json `profile.time_split`).

Every piece is a view of results.json: sentences are plain text (report.md escapes them,
report.html autoescapes), tables are analysis/report/table.py Tables rendered by both.
"""
from __future__ import annotations

from typing import NamedTuple

from analysis.compare.results import FunctionRow, Results
from analysis.compare.time_split import SplitRow
from analysis.report.fmt import (THREAD_LABEL, at_level, change_cells, fmt_delta, fmt_ns, fn_verdict,
                                 level, pp_ci, rank_of, row_name, share, summary_change, value)
from analysis.report.fmt import level_said as fmt_level_said
from analysis.report.markdown_tables import function_level
from analysis.report.mdtext import esc
from analysis.report.summary_text import lines as summary_lines
from analysis.report.table import Cell, Column, Table
from analysis.report.tables import change_verdict, judgement_verdict
from analysis.tma.funnel import MEMORY_PATH
from analysis.tma.funnel_doc import FunnelRowDoc

# verdict -> the word the counts line files it under
COUNTED = {"improvement": "improved", "minor improvement": "improved",
           "regression": "regressed", "minor regression": "regressed", "no change": "unchanged",
           "unstable": "undecided", "insufficient data": "undecided",
           "new in candidate": "new or gone", "gone": "new or gone",
           "negligible": "not judged", "too few samples": "not judged"}
QUIET = ("negligible", "too few samples", "undersampled")   # focus rows the lead names instead of tabulating


class Headline(NamedTuple):
    text: str        # "Paired throughput +32.0% [+22.2, +42.6]%"
    detail: str      # "prefetch vs base, 10M keys × 10 B, 50 keys per MSET; 95% CI, 5 pairs"
    verdict: str     # as printed ("no change, could see ±2.3% (80% power)")
    kind: str        # the verdict itself, for marks and colours
    note: str        # the summary item's note (the server was not the bottleneck ...), or ""


def headline(r: Results) -> Headline | None:
    """The throughput change in one sentence: the summary's first throughput item (the
    paired row when there is one), with its interval's level and reps."""
    for item, line in zip(r.summary, summary_lines(r)):
        if item.what not in ("throughput", "paired throughput") or not item.values:
            continue
        rows = r.paired if item.what == "paired throughput" else r.throughput
        row = next((m for m in rows if m.test == item.subject), rows[0] if rows else None)
        if row is None:
            continue
        v = item.values[0]
        what = ("RDB load time" if v.measure == "load time" else
                "Paired throughput" if item.what == "paired throughput" else "Throughput")
        change, ci = summary_change(v.change, v.change_unit, v.ci_low, v.ci_high)
        reps = f"{row.base.n} pairs" if item.what == "paired throughput" else f"{row.base.n}+{row.cand.n} reps"
        detail = f"{r.cand} vs {r.base}" + (f", {item.label}" if item.label else "")
        return Headline(f"{what} {change} {ci}", f"{detail}; {level_said(r, row)}, {reps}",
                        line.verdict, line.kind, item.note)
    return None


def level_said(r: Results, row) -> str:
    """The headline's level and why it is not 95% (fmt.level_said): a run that decides' look,
    the throughput family's adjustment, a rank interval's step."""
    m = r.measurement
    fam = next((f for f in r.fdr if f.family == "throughput and latency"), None)
    in_fam = fam is not None and any(row is x for x in r.throughput + r.latency)
    return fmt_level_said(row.change.confidence or r.settings.confidence, r.settings.confidence,
                          look=m.look if m is not None and m.level is not None else None,
                          looks=len(m.looks) if m is not None else 0,
                          family=(fam.comparisons, fam.level, fam.rule) if in_fam else None,
                          rank=rank_of(row.change.method or "", row.base.n))


def _verdicts(r: Results) -> list[str]:
    out = [m.change.verdict for m in r.throughput + r.paired + r.latency]
    p = r.profile
    if p.per_op_total is not None:
        out.append(p.per_op_total.change.verdict)
    out += [fn_verdict(f, k).verdict for f in p.focus for k in ("flat", "cum")]
    out += [fn_verdict(f, "flat").verdict for f in p.movers]
    if r.tma.funnel is not None:
        out += [row.verdict for row in r.tma.funnel.rows]
    return out


def counts(r: Results) -> str:
    """How many of the report's verdicts (throughput, focus functions, top movers, TMA
    nodes) are decided, unchanged and so on, in words."""
    n: dict[str, int] = {}
    verdicts = _verdicts(r)
    for v in verdicts:
        word = COUNTED.get(v, "undecided")
        n[word] = n.get(word, 0) + 1
    words = ["improved", "regressed", "unchanged", "undecided", "new or gone", "not judged"]
    parts = [f"{n.get(w, 0)} {w}" for w in words if w in ("improved", "regressed") or n.get(w)]
    return (f"Of the {len(verdicts)} verdicts in this report (throughput, focus functions, "
            f"top movers, TMA nodes): " + ", ".join(parts) + ".")


def _change(c, unit: str, digits: int = 1) -> str:
    """The change and its interval, with the interval's own level where it is not the
    column's (a row outside its family's level: fmt.at_level)."""
    change, ci = change_cells(c, unit, digits)
    return f"{change} {at_level(ci, c)}"


def throughput(r: Results) -> Table | None:
    rows = [(m, False) for m in r.throughput] + [(m, True) for m in r.paired]
    if not rows:
        return None
    fam = next((f for f in r.fdr if f.family == "throughput and latency"), None)
    conf = fam.level if fam is not None else r.settings.confidence
    t = Table([Column("Throughput", cls="name"), Column(r.base), Column(r.cand),
               Column(f"Change [{level(conf)} CI]"), Column("Verdict")], escape=esc)
    for m, paired in rows:
        name = row_name(m) + (" · paired" if paired else "")
        t.add([Cell(name), Cell(value(m.base.median, m.unit), literal=True),
               Cell(value(m.cand.median, m.unit), literal=True),
               Cell(_change(m.change, m.unit), literal=True), change_verdict(m.change, m)])
    return t


# ---------------------------------------------------------------------------- TMA

def memory_rows(r: Results) -> list[FunnelRowDoc]:
    """The funnel's rows on the path to its memory stalls (L1 → L4: Backend_Bound,
    Memory_Bound, DRAM_Bound, MEM_Latency ... on Intel; the catalogue's memory nodes
    elsewhere), with their ancestors."""
    doc = r.tma.funnel
    if doc is None:
        return []
    vendor = doc.tree.vendor if doc.tree else "intel"
    wanted = {row.node for row in doc.rows if row.memory} | (set(MEMORY_PATH) if vendor == "intel" else set())
    present = {row.node for row in doc.rows}
    keep = set()
    for node in wanted & present:
        parts = node.split(".")
        keep |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & present
    return [row for row in doc.rows if row.node in keep]


def tma_line(r: Results) -> str:
    """The one line when there is no funnel to show (plain text)."""
    item = next((i for i in r.summary if i.what == "tma absent"), None)
    why = item.note if item is not None and item.note else r.tma.reason.split(":")[0]
    if r.tma.status == "absent" or r.tma.funnel is None:
        return f"TMA: not collected ({why}; the full report's TMA section says how to get it)."
    return "TMA: no memory-stall node in the funnel (the full report's TMA section has every node)."


def tma(r: Results) -> Table | None:
    rows = memory_rows(r)
    if not rows:
        return None
    doc = r.tma.funnel
    conf = min((x.confidence for x in rows if x.confidence), default=r.settings.confidence)
    title = "TMA, memory path" + (" (REPLAY of recorded files)" if r.tma.status == "replay" else "")
    t = Table([Column(title, cls="name"), Column(f"{doc.base_label} (n={doc.runs.base})"),
               Column(f"{doc.cand_label} (n={doc.runs.cand})"), Column(f"Δ [{level(conf)} CI]"),
               Column("Verdict")], escape=esc)
    for x in rows:
        depth = x.node.count(".")
        label = "\u00a0\u00a0" * max(depth - 1, 0) + ("└ " if depth else "") + x.leaf
        ratio = x.delta_unit != "pp"
        fmt = (lambda v: "n/a" if v is None else f"{v:.3g}") if ratio else \
              (lambda v: "n/a" if v is None else f"{v:.1f}%")
        cut = len(x.delta_unit) + 1
        ci = (f" [{fmt_delta(x.ci_pp[0], x.delta_unit)[:-cut]}, {fmt_delta(x.ci_pp[1], x.delta_unit)[:-cut]}]"
              if x.ci_pp else "")
        t.add([Cell(label), Cell(fmt(x.base.median), literal=True), Cell(fmt(x.cand.median), literal=True),
               Cell(fmt_delta(x.delta_pp, x.delta_unit) + ci, literal=True), Cell(x.verdict, verdict=x.verdict)])
    return t


# ---------------------------------------------------------------------------- focus functions

def _shown(r: Results) -> list[tuple[FunctionRow, str]]:
    return [(f, k) for f in r.profile.focus for k in ("flat", "cum")
            if fn_verdict(f, k).verdict not in QUIET]


def focus(r: Results) -> Table | None:
    """The focus functions' flat and cumulative cost: CPU time per operation (with the
    share beside it) when the run counted operations, else the share."""
    p = r.profile
    rows = _shown(r)
    if not p.available or not rows:
        return None
    conf = level(function_level(r))
    per_op = p.per_op and all(f.flat_ns_change is not None for f, _ in rows)
    what = f"CPU per {p.per_op_command}" if per_op else "% of samples"
    cols = [Column(f"Focus function ({THREAD_LABEL[p.thread]}), {what}", cls="name"), Column(r.base),
            Column(r.cand), Column(f"Change [{conf} CI]")]
    t = Table(cols + ([Column("Share")] if per_op else []) + [Column("Verdict")], escape=esc)
    for f, k in rows:
        b, c, ch = ((f.base_flat, f.cand_flat, f.flat_change) if k == "flat" else (f.base_cum, f.cand_cum, f.cum_change))
        if per_op:
            bn, cn, nch = ((f.base_flat_ns, f.cand_flat_ns, f.flat_ns_change) if k == "flat"
                           else (f.base_cum_ns, f.cand_cum_ns, f.cum_ns_change))
            cells = [Cell(fmt_ns(bn.median), literal=True), Cell(fmt_ns(cn.median), literal=True),
                     Cell(_change(nch, "ns/op", 0), literal=True),
                     Cell(f"{share(b.median)} → {share(c.median)}", literal=True)]
        else:
            cells = [Cell(share(b.median), literal=True), Cell(share(c.median), literal=True),
                     Cell(f"{ch.delta:+.2f} pp {pp_ci(ch, 2)}".replace("-", "−"), literal=True)]
        t.add([Cell(f"{f.name} ({k})")] + cells + [judgement_verdict(fn_verdict(f, k))])
    return t


def focus_left_out(r: Results) -> str:
    """The focus rows the table leaves out, and why (plain text; "" when none)."""
    p = r.profile
    if not p.available:
        return f"No profile comparison: {p.reason}." if p.reason else ""
    quiet = {v: [f"{f.name} ({k})" for f in p.focus for k in ("flat", "cum") if fn_verdict(f, k).verdict == v]
             for v in QUIET}
    parts = [f"{v}: {', '.join(names)}" for v, names in quiet.items() if names]
    if p.missing_focus:
        parts.append(f"in no profile: {', '.join(p.missing_focus)}")
    return ("Not tabulated here: " + "; ".join(parts) + ".") if parts else ""


# ---------------------------------------------------------------------------- where the time went

def _signed_ns(x: float | None) -> str:
    return "n/a" if x is None else ("+" if x > 0 else "") + fmt_ns(x)


def _split_row(row: SplitRow, name: str) -> list[Cell]:
    ci = "n/a" if row.ci_low is None else f"[{_signed_ns(row.ci_low)}, {_signed_ns(row.ci_high)}]"
    return [Cell(name), Cell(fmt_ns(row.base), literal=True), Cell(fmt_ns(row.cand), literal=True),
            Cell(_signed_ns(row.delta), literal=True), Cell(ci, literal=True)]


def split(r: Results) -> Table | None:
    """Where the time went: the change in CPU time per operation by function, largest
    first, then everything else and the total (profile.time_split)."""
    s = r.profile.time_split
    if s is None or not s.available or s.total is None or s.rest is None:
        return None
    cmd = r.profile.per_op_command
    t = Table([Column(f"Own CPU per {cmd} ({THREAD_LABEL.get(s.thread, s.thread)})", cls="name"),
               Column(f"{r.base} (mean)"), Column(f"{r.cand} (mean)"), Column("Change"),
               Column(f"{level(s.confidence or r.settings.confidence)} CI")], escape=esc)
    for row in s.rows:
        new = " (new)" if row.base == 0 else " (gone)" if row.cand == 0 else ""
        t.add(_split_row(row, row.name + new))
    t.add(_split_row(s.rest, f"everything else ({s.rest.functions:,} functions)"))
    t.add(_split_row(s.total, "total (all samples)"))
    return t


def split_caption(r: Results) -> str:
    """The sentence above the table (plain text), or why there is no table ("": results
    written before the view)."""
    s = r.profile.time_split
    cmd = r.profile.per_op_command or "operation"
    if s is None:
        return ""
    if not s.available or s.total is None:
        return f"Where the time went: not split ({s.reason})."
    paired = s.estimator == "mean pair difference"
    return (f"Where the time went: CPU time per {cmd} {_signed_ns(s.total.delta)} "
            f"({fmt_ns(s.total.base)} → {fmt_ns(s.total.cand)}), by function's own cost. "
            f"Rows: differences of means over {'paired' if paired else 'unpaired'} reps that add up "
            f"to the total; their {'paired t' if paired else 'Welch t'} intervals do not, and judge nothing.")
