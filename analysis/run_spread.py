"""The spread between runs that a run's own interval leaves out, and the interval that
keeps it.

A run's paired reps restart both servers each rep, so whatever varies rep to rep is inside
the interval over reps. Whatever a run's reps share is not: eight default A/A runs of one
build on the 480 MiB Xeon guest (2026-12-06) read their throughput between −0.50% and
+0.91%, and two of the eight intervals left 0 out (a false mark at 95%). Their spread about
0 was larger than their intervals allow (Cochran's Q 23.4 on 7 df). An A/A run's true
change is 0, so each one measures that spread directly: its squared mean log ratio y² has
the expectation of its within-run variance (sd²/n, known from its reps) plus the between-run
variance τ². `estimate` finds the τ² that makes the host's A/A runs' y² what their variances
say (Paule-Mandel, with the mean known), and a later run's interval is widened by it in
quadrature (`widen`).
docs/statistics.md, "Runs differ by more than their reps", gives the simulation, on a model
built from the recorded runs, that shows what each rule covers.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable

from scipy import stats as sps

from analysis import stats
from analysis.inputs.run_spread import RunSpread
from analysis.intervals import Estimate
from analysis.power import POWER

# Fewer A/A runs than this say too little about the spread between runs to widen by it
# (one run's y² − sd²/n is its own noise, its sd estimated from a handful of reps).
MIN_RUNS = 3


def estimate(aa_runs: Iterable[tuple[float, float, int]], latest: str = "") -> RunSpread | None:
    """The between-run sd from A/A runs, each (mean log ratio, sd of its units' log ratios,
    units); None with fewer than MIN_RUNS of 3 units or more. Paule and Mandel's estimator
    with the mean known to be 0: the τ² at which Σ y²/(sd²/n + τ²) equals the number of
    runs (each term's expectation is 1), 0 where it is at most that without τ. Each run
    weighs by its precision: the plain average of y² − sd²/n let one run of 4 noisy reps
    (sd 1.8%) cancel what eight quieter ones showed (0.36% → 0 on the recorded host)."""
    usable = [(y, sd * sd / n) for y, sd, n in aa_runs if n >= 3 and sd is not None and sd > 0]
    if len(usable) < MIN_RUNS:
        return None
    excess = (lambda t2: sum(y * y / (v + t2) for y, v in usable) - len(usable))
    lo, hi = 0.0, max(y * y for y, _ in usable) + 1e-12
    if excess(0.0) > 0:
        for _ in range(100):          # excess falls as τ² grows: bisect its root
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return RunSpread(sd=round(math.sqrt(lo), 6), runs=len(usable), latest=latest)


def _log(x: float) -> float:
    return math.log1p(x)


def widen(ch: stats.Change, spread: RunSpread, *, higher_is_better: bool, noise: float,
          regression: float | None, max_cv: float) -> stats.Change:
    """`ch` (a relative change with an interval) with τ = spread.sd added on the log scale:
    each side's half-width h becomes sqrt(h² + (t τ)²), t the Student quantile of the
    interval's own level on runs − 1 degrees of freedom (τ is estimated from that many A/A
    runs: at the recorded host's spread the normal quantile covered 90-93%, Student's
    93-94%, docs/statistics.md). The
    verdict, p-value and detectable size follow from the widened interval: its p-value is
    below 1 − level exactly when it leaves 0 out. Unchanged where τ is 0 or the change has
    no relative interval."""
    tau = spread.sd
    if tau <= 0 or ch.rel is None or ch.rel_ci_low is None or ch.rel_ci_high is None:
        return ch
    level = ch.confidence or 0.95
    q = float(sps.norm.ppf(0.5 + level / 2))
    room = float(sps.t.ppf(0.5 + level / 2, max(spread.runs - 1, 1))) * tau
    e, lo, hi = _log(ch.rel), _log(ch.rel_ci_low), _log(ch.rel_ci_high)
    grow = (lambda h: math.hypot(h, room))
    lo2, hi2 = e - grow(e - lo), e + grow(hi - e)
    rel = Estimate(ch.rel, math.expm1(lo2), math.expm1(hi2), level)
    absolute = _absolute(ch, (e - lo2) / max(e - lo, 1e-12), (hi2 - e) / max(hi - e, 1e-12))
    verdict, reason, line = stats.verdict_of(
        stats.judged(absolute, rel, ch.base, False),
        stats.spread_of(ch.base, ch.cand, True, True), higher_is_better, noise, regression, max_cv)
    toward_zero = grow(e - lo if e >= 0 else hi - e)      # the side that decides
    p = float(2 * sps.norm.sf(q * abs(e) / toward_zero)) if toward_zero > 0 else ch.p_value
    detectable = ch.detectable
    if detectable is not None:
        detectable = math.expm1(math.hypot(_log(detectable), room * (1 + float(sps.norm.ppf(POWER)) / q)))
    reason = stats.with_reach(reason, verdict, detectable, False, level)
    return dataclasses.replace(
        ch, ci_low=absolute.low, ci_high=absolute.high, rel_ci_low=rel.low, rel_ci_high=rel.high,
        verdict=verdict, reason=reason, line=line, p_value=p, detectable=detectable,
        method=ch.method + "; " + note(spread))


def _absolute(ch: stats.Change, low_by: float, high_by: float) -> Estimate:
    """The interval in the metric's own unit, its two sides stretched as the log ones were."""
    lo = ch.delta - (ch.delta - ch.ci_low) * low_by if ch.ci_low is not None else ch.delta
    hi = ch.delta + (ch.ci_high - ch.delta) * high_by if ch.ci_high is not None else ch.delta
    return Estimate(ch.delta, lo, hi, ch.confidence or 0.95)


def note(spread: RunSpread) -> str:
    """The method's words for the widening."""
    return (f"widened by this host's spread between runs, sd {spread.sd:.2%} from "
            f"{spread.runs} recorded A/A runs (what a run's reps share, its interval over reps "
            f"cannot see)")


def planned_sd(spread: RunSpread | None, level: float = 0.95) -> float:
    """τ as a plan should add it to a unit's sd/√n (analysis/power.planned_size): scaled by
    the Student-to-normal ratio `widen` applies, so a plan promises what the run prints;
    0.0 without a spread."""
    if spread is None or spread.sd <= 0:
        return 0.0
    q = float(sps.norm.ppf(0.5 + level / 2))
    return spread.sd * float(sps.t.ppf(0.5 + level / 2, max(spread.runs - 1, 1))) / q
