"""The one-glance summary as data: one item per throughput row, paired row, focus
function and the TMA funnel, each with its numbers and the verdict that counts.

The renderers (analysis/report) word it; nothing here is formatted text.
"""
from __future__ import annotations

import re

from analysis.compare.results import (FunctionRow, MetricRow, ProfileSection, ProfilerCost, Results,
                                      SaturationSection, TmaSection)
from analysis.compare.summary_items import SummaryItem, SummaryValue


def _metric(what: str, row: MetricRow, sat: SaturationSection) -> SummaryItem:
    # Beside the verdict: whether throughput could show a change in the server at all.
    note = sat.note if sat.available and sat.bottleneck != "server" else ""
    return SummaryItem(what, row.test, values=[SummaryValue.relative(
        row.metric, row.unit, row.base, row.cand, row.change)], verdict=row.change.verdict,
        note=note, label=row.label, detectable=row.change.detectable,
        detectable_unit="pp" if row.change.unit == "pp" else "rel", line=row.change.line)


def _profiler_cost(c: ProfilerCost) -> list[SummaryItem]:
    if not c.available or c.pooled is None:
        return []
    p = c.pooled
    # The cost is the fall of throughput while perf samples: a positive share.
    value = SummaryValue("profiler overhead", None, None, "%", -p.rel if p.rel is not None else None,
                         "rel", -p.rel_ci_high if p.rel_ci_high is not None else None,
                         -p.rel_ci_low if p.rel_ci_low is not None else None, "")
    return [SummaryItem("profiler cost", f"perf {c.frequency_hz} Hz", values=[value],
                        note=f"{sum(c.pairs.values())} on/off window pairs")]


NEW_LISTED = 3      # new-in-candidate / gone functions the summary names, largest first


def speaking_measure(row: FunctionRow, quiet: tuple[str, ...] = ("negligible", "too few samples")
                     ) -> str | None:
    """"flat" when the flat cost's verdict is not one of `quiet`, else "cum" when the
    cumulative one's is not (an inlined function has ~0 flat and all its cost in callers'
    frames; a dispatcher like msetGenericCommand has a few flat samples and all its cost
    below), else None. Also the sweep's lookup column (analysis/sweep/point_rows.py)."""
    for k in ("flat", "cum"):
        j = getattr(row, f"{k}_verdict")
        if j is not None and j.verdict not in quiet:
            return k
    return None


def _measure(row: FunctionRow) -> str | None:
    """Which cost of a focus function the summary shows: one with a statistical verdict,
    else one with too few samples for any (said so), None when both are negligible."""
    return speaking_measure(row) or speaking_measure(row, ("negligible",))


def _function_item(what: str, row: FunctionRow, k: str) -> SummaryItem:
    word = "flat" if k == "flat" else "cumulative"
    j = getattr(row, f"{k}_verdict")
    share = SummaryValue.share(f"{word} share", getattr(row, f"base_{k}"),
                               getattr(row, f"cand_{k}"), getattr(row, f"{k}_change"))
    item = SummaryItem(what, row.name, row.thread, [share], j.verdict,
                       j.note or (j.reason if j.verdict in ("too few samples", "new in candidate",
                                                            "gone") else ""),
                       detectable=j.detectable, detectable_unit=j.detectable_unit, line=j.line)
    b, c, ch = getattr(row, f"base_{k}_ns"), getattr(row, f"cand_{k}_ns"), getattr(row, f"{k}_ns_change")
    if b and c and ch:
        # The per-operation cost does not dilute, so it carries the verdict (materiality.py);
        # the share stays beside it.
        item.values.append(SummaryValue.relative(f"{word} CPU time per operation", "ns/op",
                                                 b, c, ch))
    return item


def _focus(p: ProfileSection) -> list[SummaryItem]:
    out = []
    for row in p.focus:
        k = _measure(row)
        if k is None:
            continue
        item = _function_item("focus", row, k)
        if k == "cum" and p.truncated.exceeds:
            item.note = "; ".join(x for x in (item.note, f"understated by up to "
                                              f"{p.truncated.worst:.1f}% (truncated stacks)") if x)
        if k == "cum" and p.truncated.skipped.exceeds:
            item.note = "; ".join(x for x in (item.note, f"may be understated by up to "
                                              f"{p.truncated.skipped.worst:.1f}% (skipped callers)") if x)
        out.append(item)
    return out


def _one_sided(p: ProfileSection) -> list[SummaryItem]:
    """The new code's own price (a prefetch helper absent in the base) and what is gone."""
    focus = {r.name for r in p.focus}
    out = []
    for word in ("new in candidate", "gone"):
        rows = [r for r in p.movers if r.name not in focus and r.flat_verdict is not None
                and r.flat_verdict.verdict == word]
        rows.sort(key=lambda r: -max(r.base_flat.median, r.cand_flat.median))
        out += [_function_item(word, r, "flat") for r in rows[:NEW_LISTED]]
    return out


def _tma(t: TmaSection) -> SummaryItem:
    if t.status == "absent":
        # The full reason (with how to fix it) is in the TMA section; one glance needs its head.
        return SummaryItem("tma absent", note=re.split(r"[:;(]", t.reason, maxsplit=1)[0].strip())
    replay = ["REPLAY of recorded fixture files, not this run"] if t.status == "replay" else []
    rows = t.funnel.rows if t.funnel else []
    sig = [x for x in rows if x.significant]
    moved = sig or [x for x in rows if x.notable]
    if not moved:
        return SummaryItem("tma", verdict="no change",
                           note="; ".join(["no node moved beyond noise"] + replay))
    top = max(moved, key=lambda x: abs(x.delta_pp or 0))
    ci = top.ci_pp or (None, None)
    verdict = top.verdict if sig else ""
    value = SummaryValue("TMA node", top.base.median, top.cand.median, top.unit or "%",
                         top.delta_pp, "pp", ci[0], ci[1], verdict)
    moves = f"{len(moved)} node(s) moved" + ("" if sig else ", not established")
    return SummaryItem("tma", top.node, values=[value], verdict=verdict,
                       note="; ".join([moves] + replay))


def _memory(t: TmaSection) -> list[SummaryItem]:
    """The vendor's memory-stall nodes (the catalogue's @memory: Intel Memory_Bound, L3_Bound,
    DRAM_Bound; AMD backend_bound_memory; Arm the backend (memory) share and L1D/LLC MPKI),
    one item with a value each; its verdict is the first node's, the tree's headline."""
    tree = t.funnel.tree if t.funnel else None
    rows = {x.node: x for x in (t.funnel.all_rows if t.funnel else []) if x.memory}
    values = []
    for name in tree.memory if tree else []:
        x = rows.get(name)
        if x is None or not x.base.n or not x.cand.n:
            continue
        ci = x.ci_pp or (None, None)
        values.append(SummaryValue(x.leaf, x.base.median, x.cand.median, x.unit or "%",
                                   x.delta_pp, x.delta_unit, ci[0], ci[1],
                                   x.verdict if x.ci_pp else ""))
    if t.status == "absent" or not values or tree is None:
        return []
    replay = "REPLAY of recorded fixture files, not this run" if t.status == "replay" else ""
    return [SummaryItem("memory stalls", tree.title or tree.model, values=values,
                        verdict=values[0].verdict, note=replay)]


def summary(r: Results) -> list[SummaryItem]:
    return ([_metric("throughput", row, r.saturation) for row in r.throughput]
            + [_metric("paired throughput", row, r.saturation) for row in r.paired]
            + _focus(r.profile) + _one_sided(r.profile) + [_tma(r.tma)] + _memory(r.tma)
            + _profiler_cost(r.profiler_cost))
