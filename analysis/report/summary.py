"""The one-glance summary worded: each SummaryItem of results.json as (label, text) in
plain text, which report.md escapes, report.html autoescapes and the compare command
prints as is."""
from __future__ import annotations

from analysis.compare.results import Results, SummaryItem
from analysis.report.fmt import THREAD_LABEL, fmt_ns, fmt_signed, short_test, summary_change


def _focus_text(item: SummaryItem, per_op_command: str) -> str:
    share, *cost = item.values
    change, ci = summary_change(share.change, share.change_unit, share.ci_low, share.ci_high)
    # a share verdict that disagrees with the per-operation one stays in sight
    share_v = f", share: {share.verdict}" if cost and share.verdict != item.verdict else ""
    text = f"{share.base:.1f}% → {share.cand:.1f}% ({change} {ci}{share_v})"
    if cost:
        c = cost[0]
        change, ci = summary_change(c.change, c.change_unit, c.ci_low, c.ci_high, digits=0)
        text += f", {fmt_ns(c.base)} → {fmt_ns(c.cand)} per {per_op_command} ({change} {ci})"
    return text


def phrase(item: SummaryItem, r: Results) -> tuple[str, str]:
    """(label, text) of one summary item."""
    if item.what in ("throughput", "paired throughput"):
        v = item.values[0]
        label = ("Paired throughput" if item.what == "paired throughput"
                 else f"Throughput {item.label or short_test(item.subject, 32)}")
        text = " ".join(summary_change(v.change, v.change_unit, v.ci_low, v.ci_high))
        return label, text + (f" ({item.note})" if item.note else "")
    if item.what == "profiler cost":
        v = item.values[0]
        return (f"Profiler overhead ({item.subject})",
                " ".join(summary_change(v.change, v.change_unit, v.ci_low, v.ci_high))
                + f" ({item.note})")
    if item.what == "focus":
        return (f"{item.subject} flat ({THREAD_LABEL.get(item.thread, item.thread)})",
                _focus_text(item, r.profile.per_op_command))
    if item.what == "tma absent":
        return "TMA", f"not collected ({item.note}; see the TMA section)"
    if item.values:
        return "TMA", f"{item.subject} {fmt_signed(item.values[0].change)} pp ({item.note})"
    return "TMA", item.note


def lines(r: Results) -> list[tuple[str, str, str]]:
    """(label, text, verdict) of every summary item, in order."""
    return [(*phrase(i, r), i.verdict) for i in r.summary]
