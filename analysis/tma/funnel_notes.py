"""The notes under a TMA funnel (analysis/tma/funnel.py): what scope "auto" did, the nodes
that got no slot share and why, which interval(s) of an -I file each value is of, each
message once with the files that gave it."""
from __future__ import annotations

from analysis.tma.model import TIME_WEIGHTED, IntervalChoice, TmaNode, TmaResult
from analysis.tma.slots import SlotView


def scope_note(res: TmaResult) -> str:
    """What scope "auto" did with a result that has no global rows and several CPU scopes:
    averaged SMT threads or CPUs (say which), or took each node from its only scope."""
    if res.default_scope() != "mean":
        return ""
    by_node: dict[str, set[str]] = {}
    for v in res.values:
        if v.in_tree:
            by_node.setdefault(v.name, set()).add(str(v.scope))
    multi = sorted({s for ss in by_node.values() if len(ss) > 1 for s in ss})
    if multi:
        return (f"rows averaged over CPU scopes {', '.join(multi)} (scope auto: no global rows; "
                "--scope NAME picks one)")
    per = {}
    for name, ss in by_node.items():
        per.setdefault(next(iter(ss)), []).append(name.count(".") + 1)
    return "each node from its only CPU scope, nothing averaged: " + "; ".join(
        f"{s} (L{min(lv)}{'' if min(lv) == max(lv) else '–L' + str(max(lv))})"
        for s, lv in sorted(per.items()))


def skipped(view: SlotView, shown: set[str]) -> list[str]:
    """One line per reason a node has no slot share, naming the rows it concerns."""
    by: dict[str, list[str]] = {}
    for name, why in view.skipped.items():
        if name in shown:
            by.setdefault(why, []).append(name.rsplit(".", 1)[-1])
    return [f"{', '.join(leaves)} not slot-normalised: {why}" for why, leaves in by.items()]


def once(items: list[tuple[str, str]]) -> list[str]:
    """Each message once, with the files that gave it (a warning of every run of a side
    would otherwise be printed once per file)."""
    where: dict[str, list[str]] = {}
    for source, msg in items:
        where.setdefault(msg, [])
        if source not in where[msg]:
            where[msg].append(source)
    return [f"{msg} ({', '.join(src)})" if len(src) > 1 else f"{src[0]}: {msg}"
            for msg, src in where.items()]


def interval_notes(results: list[TmaResult], flats: list[dict[str, TmaNode]],
                    keep: set[str], interval: IntervalChoice) -> list[str]:
    """Which interval(s) each file's values are of (files with -I intervals only), and
    the rows whose node a file measured in fewer of them."""
    said = [f"{res.source}: {res.interval_text(interval)}" for res in results if res.timeline()]
    if not said:
        return []
    notes = ["intervals (-I): each file is one run and gives one value per node, "
             + ("its intervals' mean weighted by their length" if interval == TIME_WEIGHTED
                else "the mean over its intervals" if interval == "mean" else
                f"interval {interval}")
             + " (intervals of one run are not independent runs); " + "; ".join(said)]
    short: dict[tuple[str, int, int], list[str]] = {}
    for res, flat in zip(results, flats):
        total = len(res.timeline())
        for name, node in flat.items():
            if name in keep and node.intervals and 1 < total != len(node.intervals) \
                    and interval in (TIME_WEIGHTED, "mean"):
                short.setdefault((res.source, len(node.intervals), total), []).append(
                    name.rsplit(".", 1)[-1])
    notes += [f"{src}: {', '.join(leaves)} from {n} of its {total} intervals (not measured "
              "in the others)" for (src, n, total), leaves in short.items()]
    return notes
