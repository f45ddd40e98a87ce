"""What a comparison is asked for: the options of `stallscope compare`, as data.

`commands.compare` builds a CompareOptions from the command line; scripts and tests
build one directly. The statistics of every section go through `relative()` and
`points()`, so all of them use the same waterlines and confidence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from analysis import run_spread as run_spread_mod, stats
from analysis.inputs.run_spread import RunSpread

# the materiality defaults live here (analysis.compare.materiality imports the results
# model, which options must not)
MIN_SHARE = 0.5      # % of the view's samples (a side's median)
MIN_SAMPLES = 20     # samples behind the larger side, summed over its profile reps

DEFAULT_TOP = 15
THREAD_VIEWS = ("main", "all", "io-threads")


@dataclass
class CompareOptions:
    base: str | None = None          # baseline variant (None: the manifest's first)
    cand: str | None = None          # candidate (None: the first variant other than base)
    focus: list[str] | None = None   # functions to tabulate (None: the case's focus list)
    # the line a decided change must reach to be named without "below the line": relative
    # (throughput, latency, ns/op) and for shares in percentage points; the regression lines
    # None: the same as the noise ones, both directions alike (analysis/stats.py, NOISE)
    noise: float = stats.NOISE
    regression: float | None = None
    noise_pp: float = stats.NOISE_PP
    regression_pp: float | None = None
    thread: str | None = None        # thread view (None: main when io-threads hold samples)
    top: int = DEFAULT_TOP           # top movers listed
    confidence: float = 0.95
    # the level "auto" chooses each interval's method for (None: `confidence`): a family
    # judged together sets its strictest, so a row's p-value and its printed interval come
    # from one method (analysis/compare/multiplicity.py)
    method_level: float | None = None
    # a run that decided by looking at itself is read at the level its looks left it
    # (manifest.json precision.level, analysis/sequential.py) in place of `confidence`;
    # False: `confidence` as given (a look of the run itself)
    run_level: bool = True
    max_cv: float = 0.10
    # materiality of a function (analysis/compare/materiality.py)
    min_share: float = MIN_SHARE     # % of samples: below on both sides, "negligible"
    min_samples: float = MIN_SAMPLES  # samples behind the larger side: below, no verdict
    # the spread between runs a paired run's relative rows carry beyond their reps
    # (manifest.json `run_spread`, set by the comparison from the run, not asked for): the
    # throughput and every CPU time per operation move with the server's speed in a run,
    # which differs between runs (docs/statistics.md, "Runs differ by more than their reps")
    run_spread: RunSpread | None = None

    def __post_init__(self) -> None:
        if self.regression is None:
            self.regression = self.noise
        if self.regression_pp is None:
            self.regression_pp = self.noise_pp
        if self.thread is not None and self.thread not in THREAD_VIEWS:
            raise ValueError(f"thread view {self.thread!r}: choose one of {', '.join(THREAD_VIEWS)}")
        if self.top < 0:
            raise ValueError(f"top movers: {self.top} is negative; give 0 or more")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence {self.confidence}: give a fraction, e.g. 0.95")
        for name in ("noise", "regression", "noise_pp", "regression_pp", "max_cv", "min_share",
                     "min_samples"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} {getattr(self, name)} is negative")

    def relative(self, base: Sequence[float], cand: Sequence[float], *,
                 higher_is_better: bool, paired: bool = False, pilot: int | None = None
                 ) -> stats.Change:
        """A metric with relative waterlines (ops/s, ms, ns/op); `pilot`: the two-stage
        interval of a --precision run. Paired, it is widened by the run's spread between runs
        (`widened`)."""
        ch = stats.compare(base, cand, higher_is_better=higher_is_better, noise=self.noise,
                           regression=self.regression, max_cv=self.max_cv,
                           confidence=self.confidence, paired=paired, pilot=pilot,
                           method_level=self.method_level)
        return self.widened(ch, higher_is_better) if paired else ch

    def widened(self, ch: stats.Change, higher_is_better: bool) -> stats.Change:
        """A paired relative change with the spread between runs added to its interval
        (analysis/run_spread.widen); as it was without one."""
        if self.run_spread is None:
            return ch
        return run_spread_mod.widen(ch, self.run_spread, higher_is_better=higher_is_better,
                                    noise=self.noise, regression=self.regression, max_cv=self.max_cv)

    def points(self, base: Sequence[float], cand: Sequence[float], *,
               higher_is_better: bool = False, paired: bool = False) -> stats.Change:
        """A share (% of samples) with waterlines in percentage points."""
        return stats.compare_shares(base, cand, higher_is_better=higher_is_better,
                                    noise_pp=self.noise_pp, regression_pp=self.regression_pp,
                                    max_cv=self.max_cv, confidence=self.confidence,
                                    paired=paired, method_level=self.method_level)
