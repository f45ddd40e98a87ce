"""The one-glance summary worded: each SummaryItem of results.json as (label, text) in
plain text, which report.md escapes, report.html autoescapes and the compare command
prints as is."""
from __future__ import annotations

from typing import NamedTuple

from analysis.compare.results import Results, SummaryItem
from analysis.report.fmt import THREAD_LABEL, fmt_ns, fmt_signed, quiet_verdict, short_test, summary_change


def _focus_text(item: SummaryItem, per_op_command: str) -> str:
    share, *cost = item.values
    if item.what in ("new in candidate", "gone"):
        # one side only: its cost is the number, there is no change to speak of
        present = share.cand if item.what == "new in candidate" else share.base
        text = f"{present:.2f}% of samples"
        if cost:
            c = cost[0]
            text += f", {fmt_ns(c.cand if item.what == 'new in candidate' else c.base)} per {per_op_command}"
        return text + " (its own cost)"
    text = f"{share.base:.1f}% → {share.cand:.1f}%"
    if item.verdict == "too few samples":
        return f"{text} ({item.note})"
    change, ci = summary_change(share.change, share.change_unit, share.ci_low, share.ci_high,
                                digits=0 if share.change_unit == "rel" else 1)
    text += f" ({change} {ci})"
    if cost:
        c = cost[0]
        change, ci = summary_change(c.change, c.change_unit, c.ci_low, c.ci_high, digits=0)
        text += f", {fmt_ns(c.base)} → {fmt_ns(c.cand)} per {per_op_command} ({change} {ci})"
    return text + (f"; {item.note}" if item.note else "")


def _focus_label(item: SummaryItem) -> str:
    word = item.values[0].measure.split()[0] if item.values else "flat"
    view = f", {THREAD_LABEL.get(item.thread, item.thread)}" if item.thread not in ("all", "") else ""
    head = {"new in candidate": "New in candidate: ", "gone": "Gone: "}.get(item.what, "")
    return f"{head}{item.subject} ({word}{view})"


def phrase(item: SummaryItem, r: Results) -> tuple[str, str]:
    """(label, text) of one summary item."""
    if item.what in ("throughput", "paired throughput"):
        v = item.values[0]
        name = item.label or short_test(item.subject, 32)
        label = (f"Paired throughput {item.label}".strip() if item.what == "paired throughput"
                 else f"RDB load time {item.label}".strip() if v.measure == "load time"
                 else f"Throughput {name}")
        text = " ".join(summary_change(v.change, v.change_unit, v.ci_low, v.ci_high))
        return label, text + (f" ({item.note})" if item.note else "")
    if item.what == "profiler cost":
        v = item.values[0]
        return (f"Profiler overhead ({item.subject})",
                " ".join(summary_change(v.change, v.change_unit, v.ci_low, v.ci_high))
                + f" ({item.note})")
    if item.what in ("focus", "new in candidate", "gone"):
        return _focus_label(item), _focus_text(item, r.profile.per_op_command)
    if item.what == "tma absent":
        return "TMA", f"not collected ({item.note}; see the TMA section)"
    if item.what == "memory stalls":
        parts = []
        for v in item.values:
            ratio = v.change_unit != "pp"
            side = (lambda x: f"{x:.3g}") if ratio else (lambda x: f"{x:.1f}%")
            change, ci = summary_change(v.change, v.change_unit, v.ci_low, v.ci_high,
                                        digits=2 if ratio else 1)
            parts.append(f"{v.measure} {side(v.base)} → {side(v.cand)} ({change} {ci})")
        return (f"Memory stalls ({item.subject})",
                "; ".join(parts) + (f" ({item.note})" if item.note else ""))
    if item.values:
        return "TMA", f"{item.subject} {fmt_signed(item.values[0].change)} pp ({item.note})"
    return "TMA", item.note


class Line(NamedTuple):
    label: str
    text: str
    verdict: str             # as printed: a verdict that saw nothing says how large a change
                             #   it could have seen ("no change, could see ±4.1% (80% power)")
    kind: str                # the verdict itself ("no change"), for marks and styles


def lines(r: Results) -> list[Line]:
    """Every summary item worded, in order."""
    return [Line(*phrase(i, r), quiet_verdict(i.verdict, i.detectable, i.detectable_unit or "rel", line=i.line),
                 i.verdict) for i in r.summary]


def text_lines(r: Results) -> list[str]:
    """The summary as a command prints it: "label: text verdict" per item."""
    return [f"{x.label}: {x.text}{' ' + x.verdict if x.verdict else ''}" for x in lines(r)]
