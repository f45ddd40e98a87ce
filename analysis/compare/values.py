"""The value types every section of results.json is made of: one side's values of a metric
(`Side`, from stats.Summary) and the change between two sides (`ChangeOut`, from
stats.Change). analysis/compare/results.py builds the sections out of them."""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis import stats


@dataclass
class Side:
    """One variant's values of one metric (from stats.Summary)."""
    n: int
    median: float
    mean: float
    stdev: float
    cv: float
    min: float
    max: float
    values: list[float]
    reps: list[int] = field(default_factory=list)   # rep number of each value, same order

    @classmethod
    def of(cls, summary: stats.Summary, reps: list[int] | None = None) -> "Side":
        return cls(summary.n, summary.median, summary.mean, summary.stdev, summary.cv,
                   summary.min, summary.max, list(summary.values), list(reps or []))


@dataclass
class ChangeOut:
    """A change between two sides (from stats.Change), in the metric's unit."""
    delta: float             # the estimator of the interval's method (`estimator` names it)
    rel: float | None
    ci_low: float | None
    ci_high: float | None
    rel_ci_low: float | None
    rel_ci_high: float | None
    confidence: float | None
    method: str
    verdict: str
    reason: str
    unit: str = ""
    estimator: str = ""
    # The smallest change this run could have established (95% confidence, 80% power,
    # from its own spread): a fraction for relative metrics (0.041: a change of 4.1%
    # either way), pp for shares; what a "no change" rules out (stats.detectable_size).
    detectable: float | None = None
    p_value: float | None = None     # of "no change", by the interval's own method
    # a minor improvement / regression: the line it stays under (fraction, or pp)
    line: float | None = None
    # The confidence this row's interval was asked at, where it is not its table's: a row
    # of a family weighted by share (each row its own level, multiplicity.py) or a
    # --precision --on row's two-stage interval among the focus rows. None: the table's.
    level: float | None = None

    @property
    def clears_zero(self) -> bool:
        """The interval that judged excludes no change: the log-scale one when the change is
        relative (a printed [-0.6, +37.4]% is not "real" because the linear one cleared 0).
        Results written before the minor verdicts had "no change" for a decided change under
        its waterline; this is how their reports still say it was real."""
        lo, hi = ((self.rel_ci_low, self.rel_ci_high) if self.rel is not None and self.unit != "pp"
                  else (self.ci_low, self.ci_high))
        return lo is not None and hi is not None and (lo > 0 or hi < 0)

    @classmethod
    def of(cls, c: stats.Change, unit: str = "") -> "ChangeOut":
        return cls(c.delta, c.rel, c.ci_low, c.ci_high, c.rel_ci_low, c.rel_ci_high,
                   c.confidence, c.method, c.verdict, c.reason, c.unit or unit, c.estimator,
                   c.detectable, c.p_value, c.line)


@dataclass
class LayoutChange:
    """One code layout's change (stallscope run --layouts): cand/base - 1 over its reps."""
    seed: int
    reps: int
    change: float                  # geometric mean of its reps' ratios, minus 1
    ci_low: float | None = None    # t-interval over its reps (None with one rep)
    ci_high: float | None = None


@dataclass
class LayoutSpread:
    """The change across code layouts (analysis/compare/layouts.py): each layout's, the
    mean over layouts with a t-interval over layouts, and the report's line."""
    layouts: int
    per_layout: list[LayoutChange]
    change: float
    ci_low: float | None
    ci_high: float | None
    holds: bool | None             # None: a layout has too few reps to tell
    line: str


@dataclass
class FdrFamily:
    """Verdicts judged together (analysis/compare/multiplicity.py): `comparisons` rows with
    a p-value, `discoveries` of them called a change at `q` by the family's `rule`, every
    row's interval re-computed at `level`."""
    family: str              # "focus function" | "top mover" | "throughput and latency" | "point"
    comparisons: int
    discoveries: int
    q: float
    level: float
    method: str = ""
    # "bh": Benjamini-Hochberg, the false discovery rate at most q; "holm", "bonferroni": the
    # chance of any false verdict in the family (family-wise error) at most q
    rule: str = "bh"
    # "own share": each row's share of q is its function's own share of the samples (the
    # top movers, multiplicity.weighted_control); its level is then its own (Change.level)
    # and `level` the strictest. "": every row alike, at `level`.
    weights: str = ""
    weight_left: float | None = None   # the weights of the rows not called changed

    @property
    def rule_text(self) -> str:
        """The rule and its guarantee, as the reports say it."""
        if self.weights:
            return (f"Holm weighted by each function's own share, chance of any false verdict "
                    f"at most {self.q * 100:g}%")
        if self.rule in ("bonferroni", "holm"):
            return f"{self.rule.title()}, chance of any false verdict at most {self.q * 100:g}%"
        return f"Benjamini-Hochberg, false discovery rate {self.q * 100:g}%"
