"""The one-glance summary of results.json as data (Results.summary): one item per
throughput row, focus function, new or gone function, the TMA funnel and its vendor's
memory-stall nodes, each with its
numbers and the verdict that counts (analysis/compare/summary.py fills them, the report
words them)."""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.compare.values import ChangeOut, Side


@dataclass
class SummaryValue:
    """One measured quantity of a summary item."""
    measure: str             # "throughput", "flat share", "flat CPU time per operation", "TMA node"
    base: float | None       # the side's median, in `unit`
    cand: float | None
    unit: str                # "ops/s", "%", "ns/op", "% of domain"
    change: float | None     # the change printed: a fraction when change_unit is "rel"
    change_unit: str         # "rel" (relative, log scale), "pp", or `unit` (no ratio: a value <= 0)
    ci_low: float | None     # interval of the change, in change_unit
    ci_high: float | None
    verdict: str

    @classmethod
    def relative(cls, measure: str, unit: str, base: Side, cand: Side, c: ChangeOut
                 ) -> "SummaryValue":
        if c.rel is None:    # a value <= 0 leaves no ratio: the absolute change stands
            return cls(measure, base.median, cand.median, unit, c.delta, unit, c.ci_low,
                       c.ci_high, c.verdict)
        return cls(measure, base.median, cand.median, unit, c.rel, "rel", c.rel_ci_low,
                   c.rel_ci_high, c.verdict)

    @classmethod
    def share(cls, measure: str, base: Side, cand: Side, c: ChangeOut) -> "SummaryValue":
        """A share as the seed PR comments give it: 8.5% → 1.0% (−88%), the ratio on the
        log scale with its interval; in pp when a zero share leaves no ratio."""
        if c.rel is None:
            return cls.points(measure, base, cand, c)
        return cls(measure, base.median, cand.median, "%", c.rel, "rel", c.rel_ci_low,
                   c.rel_ci_high, c.verdict)

    @classmethod
    def points(cls, measure: str, base: Side, cand: Side, c: ChangeOut) -> "SummaryValue":
        return cls(measure, base.median, cand.median, "%", c.delta, "pp", c.ci_low, c.ci_high,
                   c.verdict)


SUMMARY_KINDS = ("throughput", "paired throughput", "focus", "new in candidate", "gone", "tma",
                 "tma absent", "memory stalls", "profiler cost")


@dataclass
class SummaryItem:
    """One entry of the one-glance summary, as data; the renderers word it."""
    what: str                # one of SUMMARY_KINDS
    subject: str = ""        # the test, function or TMA node it is about
    thread: str = ""         # thread view of a focus function
    values: list[SummaryValue] = field(default_factory=list)   # the headline value first
    verdict: str = ""        # the verdict that counts, or "" for informational items
    note: str = ""           # plain text beside the numbers (why absent, not established, ...)
    label: str = ""          # a throughput row's label (MetricRow.label)
    # the smallest change the verdict's statistic could have established: a fraction when
    # detectable_unit is "rel", else pp (ChangeOut.detectable / Judgement.detectable)
    detectable: float | None = None
    detectable_unit: str = ""
    line: float | None = None    # a minor verdict's line (ChangeOut.line), in detectable_unit
