"""The TMA funnel as a Markdown table, from its data (analysis.tma.funnel_doc.FunnelDoc,
schema stallscope.tma-funnel/1; docs/tma.md): in report.md's TMA section and on the terminal of
`stallscope funnel`.

Labels, node names, verdicts, sentences and warnings are escaped here, at render time:
variant labels and file names come from the run."""
from __future__ import annotations

from analysis.report.mdtext import esc_words
from analysis.report.table import md_table
from analysis.report.fmt import fmt_delta
from analysis.report.funnel_rules import explain
from analysis.stats import SMALL_N
from analysis.tma.funnel_doc import FunnelDoc, FunnelRowDoc, FunnelSide




def _cell(side: FunnelSide, ratio: bool = False) -> str:
    """Median (min–max over runs); ~ and † mark an estimate from multiplexed counters."""
    if not side.n:
        return "–"
    if ratio:
        txt = f"{side.median:.3g}"
        if side.n > 1:
            txt += f" ({side.min:.3g}–{side.max:.3g})"
        return txt
    txt = f"{side.median:.1f}%"
    if side.n > 1:
        txt += f" ({side.min:.1f}–{side.max:.1f})"
    if side.multiplex is not None:
        txt = "~" + txt + "†"
    return txt


def _slots(row: FunnelRowDoc) -> str:
    sb, sc = row.base.slots_median, row.cand.slots_median
    return "–" if sb is None or sc is None else f"{sb:.1f} → {sc:.1f} ({fmt_delta(sc - sb)})"


def _table(doc: FunnelDoc, with_ci: bool, rows: list[FunnelRowDoc] | None = None,
           first: str = "TMA Metric") -> list[str]:
    rows = doc.rows if rows is None else rows
    head = [first, "Domain", f"{esc_words(doc.base_label)} (n={doc.runs.base})",
            f"{esc_words(doc.cand_label)} (n={doc.runs.cand})", "Δ"]
    if with_ci:
        conf = min((r.confidence for r in rows if r.confidence), default=0.95)
        head += [f"CI ({conf:.0%})", "Verdict"]
    head += ["Slots Δ"]
    body = []
    for r in rows:
        depth = r.node.count(".")
        label = ("&nbsp;&nbsp;" * (depth - 1) + "└ " if depth else "") + esc_words(r.leaf)
        unit = r.delta_unit
        ratio = unit != "pp"
        cells = [label, esc_words(r.unit), _cell(r.base, ratio), _cell(r.cand, ratio),
                 fmt_delta(r.delta_pp, unit)]
        if with_ci:
            ci = r.ci_pp
            cut = len(unit) + 1
            cells += [f"[{fmt_delta(ci[0], unit)[:-cut]}, {fmt_delta(ci[1], unit)[:-cut]}] {esc_words(unit)}"
                      if ci else "n/a", esc_words(r.verdict)]
        cells.append(_slots(r))
        body.append(cells)
    return md_table(head, body)


def _notes(doc: FunnelDoc, with_ci: bool) -> list[str]:
    rows, nb, nc = doc.rows, doc.runs.base, doc.runs.cand
    notes = []
    bm = [r.base.multiplex for r in rows if r.base.multiplex is not None]
    cm = [r.cand.multiplex for r in rows if r.cand.multiplex is not None]
    if bm or cm:
        parts = ([f"{esc_words(doc.base_label)} as little as {min(bm):.0f}%"] if bm else []) + \
                ([f"{esc_words(doc.cand_label)} as little as {min(cm):.0f}%"] if cm else [])
        notes.append(f"† counters multiplexed: ran {' and '.join(parts)} of the time; "
                     "values marked ~ are estimates.")
    if not with_ci:
        notes.append("No confidence can be given: "
                     + ("1 run per side." if nb == 1 and nc == 1 else
                        f"an interval needs a node measured in at least {SMALL_N} runs per side "
                        f"({nb} vs {nc} runs)."))
    else:
        notes.append(f"CI: {esc_words(doc.method)}.")
    vendor = doc.tree.vendor if doc.tree else "intel"
    domains = sorted({r.domain for r in rows if r.domain and r.domain != "Slots"
                      and r.delta_unit == "pp"})
    if vendor == "amd":
        head = ("Domains: every node is % of dispatch slots; each level-2 pair is an absolute "
                "share of all slots and sums to its parent (AMD has no level 3)")
    elif vendor == "arm":
        head = ("Domains: level 1 is % of slots (N1: % of cycles); deeper nodes are % of cycles "
                "relative to their parent, not shares of all slots")
    else:
        head = "Domains: L1/L2 nodes are % of pipeline slots" + (
            f"; {', '.join('% ' + esc_words(d) for d in domains)} are fractions of "
            "cycles, not of the parent" if domains else "")
    notes.append(head +
                 ". Slots Δ converts each node to pipeline slots (parent slots × node / sum "
                 "of its siblings, Intel's bottleneck-metric rule; only when every sibling "
                 "was measured, else – and the reason below). Ranges in "
                 "parentheses are min–max over runs; Δ is the change in percentage points "
                 "(pp): the estimator of the CI's method (see docs/statistics.md), or the "
                 "change of medians where no CI can be given.")
    return notes


def tree_line(doc: FunnelDoc) -> str:
    """Which vendor's top-down tree the rows are nodes of."""
    t = doc.tree
    if not t:
        return ""
    slots = f", {t.slots_per_cycle} slots per cycle" if t.slots_per_cycle else ""
    return f"Tree: {esc_words(t.title or t.model)} (catalogue {esc_words(t.model)}{slots})."


def render(doc: FunnelDoc) -> str:
    """The funnel table (Stage-2 groups in a table of their own), its notes, what moved and
    the parsers' warnings."""
    with_ci = any(r.ci_pp is not None for r in doc.rows)
    tree = [r for r in doc.rows if not r.stage2]
    groups = [r for r in doc.rows if r.stage2]
    out = (tree_line(doc) + "\n\n") if doc.tree else ""
    out += "\n".join(_table(doc, with_ci, tree)) + "\n\n"
    if groups:
        out += ("Stage 2 (Arm's metric groups: ratios and % of cycles, not a tree; never summed "
                "or slot-normalised):\n\n" + "\n".join(_table(doc, with_ci, groups, "Metric"))
                + "\n\n")
    out += "\n".join(f"{n}  " for n in _notes(doc, with_ci)).rstrip()
    sentences = explain(doc.rows)
    if sentences:
        out += "\n\n**What moved**\n\n" + "\n".join(f"- {esc_words(s)}" for s in sentences)
    if doc.notes:
        out += "\n\n**Notes**\n\n" + "\n".join(f"- {esc_words(n)}" for n in doc.notes)
    if doc.warnings:
        out += "\n\n**Warnings**\n\n" + "\n".join(f"- {esc_words(w)}" for w in doc.warnings)
    return out + "\n"
