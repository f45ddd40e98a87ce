"""On a host with a PMU: TMA's DRAM_Bound (and L3_Bound) beside the out-of-cache cost, and
whether the two tell one story (docs/statistics.md, "Memory stalls without a PMU").

They measure different things: DRAM_Bound is a share of the cycles (a % of clocks at level 4,
of stall cycles at level 3) the core stalled on DRAM, the out-of-cache cost is CPU time per
operation that grows with the working set. What can be compared is the direction: a change
that removed stall should lower both. They agree when both fell, both rose, or neither moved
by its own interval; they disagree when one fell and the other rose; otherwise (one decided,
the other not, or a funnel with too few runs for an interval) nothing can be told.
"""
from __future__ import annotations

from analysis.compare.stall_section import StallSection
from analysis.tma.funnel_doc import FunnelDoc, FunnelRowDoc


def _node(funnel: FunnelDoc, leaf: str) -> FunnelRowDoc | None:
    return next((r for r in funnel.rows if r.node.split(".")[-1] == leaf), None)


def _tma_way(row: FunnelRowDoc) -> str | None:
    """"fell", "rose", "same" (its interval holds 0), or None (no interval: too few runs)."""
    if row.ci_pp is None or None in row.ci_pp or row.delta_pp is None:
        return None
    if not row.significant:
        return "same"
    return "fell" if row.delta_pp < 0 else "rose"


def _stall_way(sec: StallSection) -> str | None:
    total = next((x for x in sec.rows if x.kind == "total"), None)
    if total is None or total.removed.low is None:
        return None
    if not total.removed.decided:
        return "same"
    return "fell" if total.removed.value > 0 else "rose"


def agreement(sec: StallSection, funnel: FunnelDoc | None) -> tuple[str, str]:
    """(the sentence, "agree" | "disagree" | "cannot tell"); ("", "") without DRAM_Bound."""
    dram = _node(funnel, "DRAM_Bound") if funnel is not None else None
    if dram is None or not sec.available:
        return "", ""
    parts = []
    for row in (dram, _node(funnel, "L3_Bound")):
        if row is not None and row.base.median is not None and row.cand.median is not None:
            ci = (f" [{row.ci_pp[0]:+.1f}, {row.ci_pp[1]:+.1f}]" if row.ci_pp and None not in row.ci_pp else "")
            parts.append(f"{row.leaf} {row.base.median:.1f}% → {row.cand.median:.1f}% of {row.domain or 'its domain'}"
                         f" ({row.delta_pp:+.1f} pp{ci})")
    t, s = _tma_way(dram), _stall_way(sec)
    if t is None or s is None:
        verdict, why = "cannot tell", "too few runs for an interval on one side"
    elif t == s:
        verdict, why = "agree", {"fell": "both fell", "rose": "both rose", "same": "neither moved"}[t]
    elif "same" in (t, s):
        verdict, why = "cannot tell", "one moved, the other not by its own interval"
    else:
        verdict, why = "disagree", f"DRAM_Bound {t}, the out-of-cache cost {s}"
    return f"TMA: {'; '.join(parts)}; beside the out-of-cache cost they {verdict} ({why}).", verdict
