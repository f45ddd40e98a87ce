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
quadrature (`widen`): its throughput and its rows of CPU time per operation, which move with
the server's speed in a run as the throughput does (analysis/compare/options.widened). The
widened p-value is the widened interval's own, so a family that ranks rows by p-value calls
a row changed exactly when its interval leaves 0 out. A host with fewer than MIN_RUNS A/A
runs of the case is widened by the spread recorded on the Xeon guest (`default`) until it
has its own: its bare interval would cover about 77% at that host's spread, and the host
cannot tell its spread is smaller without the A/A runs that would measure it.
docs/statistics.md, "Runs differ by more than their reps", gives the simulation, on a model
built from the recorded runs, that shows what each rule covers.
"""
from __future__ import annotations

import dataclasses
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from scipy import optimize, stats as sps

from analysis import stats
from analysis.inputs.run_spread import RunSpread
from analysis.intervals import Estimate
from analysis.power import POWER

# Fewer A/A runs than this say too little about the spread between runs to widen by it
# (one run's y² − sd²/n is its own noise, its sd estimated from a handful of reps).
MIN_RUNS = 3

# The A/A runs `default` estimates from, with where they ran (provenance in the file)
DEFAULT_RUNS = Path(__file__).with_name("run_spread_default.json")


def _reaching(usable: list[tuple[float, float]], target: float) -> float:
    """The τ² ≥ 0 at which Σ y²/(v + τ²) falls to `target` (0 where it is there already):
    the sum falls as τ² grows, so bisect."""
    q = (lambda t2: sum(y * y / (v + t2) for y, v in usable))
    if q(0.0) <= target:
        return 0.0
    lo, hi = 0.0, max(y * y for y, _ in usable) + 1e-12
    while q(hi) > target:
        hi *= 4
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if q(mid) > target else (lo, mid)
    return lo


def estimate(aa_runs: Iterable[tuple[float, float, int]], latest: str = "") -> RunSpread | None:
    """The between-run sd from A/A runs, each (mean log ratio, sd of its units' log ratios,
    units), with its 95% interval; None with fewer than MIN_RUNS of 3 units or more. Paule
    and Mandel's estimator with the mean known to be 0: the τ² at which Σ y²/(sd²/n + τ²)
    equals the number of runs k (each term's expectation is 1), 0 where it is at most that
    without τ; the interval is where that sum stays within the middle 95% of χ² on k
    degrees of freedom (the Q-profile interval). Each run weighs by its precision: the
    plain average of y² − sd²/n lets one run of 4 noisy reps (sd 1.8%) take most of what
    quieter ones showed (0.40% → 0.16% on the recorded host, docs/statistics.md)."""
    usable = [(y, sd * sd / n) for y, sd, n in aa_runs if n >= 3 and sd is not None and sd > 0]
    k = len(usable)
    if k < MIN_RUNS:
        return None
    sd = (lambda target: round(math.sqrt(_reaching(usable, target)), 6))
    return RunSpread(sd=sd(k), runs=k, latest=latest, low=sd(float(sps.chi2.ppf(0.975, k))),
                     high=sd(float(sps.chi2.ppf(0.025, k))))


@lru_cache(maxsize=1)
def default() -> RunSpread:
    """The spread between runs a host without MIN_RUNS A/A runs of its own of a case is
    widened by: the estimate from the A/A runs recorded on the 480 MiB Xeon guest
    (DEFAULT_RUNS), `borrowed` naming that host. Borrowed because it is the only measured
    one: a host whose own spread is smaller gets an interval wider than it needs (and learns
    its own from 3 A/A runs); one whose spread is larger covers less than 95%, but more than
    with none (docs/statistics.md, "Runs differ by more than their reps", gives both)."""
    doc = json.loads(DEFAULT_RUNS.read_text())
    runs = doc["runs"]
    est = estimate(((r["change"], r["sd"], r["units"]) for r in runs),
                   latest=max(r["at"] for r in runs))
    assert est is not None, f"{DEFAULT_RUNS}: fewer than {MIN_RUNS} usable A/A runs"
    return dataclasses.replace(est, borrowed=f"{doc['case'].split('@')[0]} on {doc['host']}")


def widened_bounds(e: float, lo: float, hi: float, r: float) -> tuple[float, float]:
    """An interval (lo, hi) about its estimate e with `room` r added to each side's
    half-width in quadrature."""
    return e - math.hypot(e - lo, r), e + math.hypot(hi - e, r)


def room(spread: RunSpread, level: float) -> float:
    """What τ adds to an interval's half-width at `level` (log scale): t τ, t the Student
    quantile on runs − 1 degrees of freedom (τ is estimated from that many A/A runs)."""
    return float(sps.t.ppf(0.5 + level / 2, max(spread.runs - 1, 1))) * spread.sd


def widen(ch: stats.Change, spread: RunSpread, *, higher_is_better: bool, noise: float,
          regression: float | None, max_cv: float) -> stats.Change:
    """`ch` (a relative change with an interval) with τ = spread.sd added on the log scale:
    each side's half-width h becomes sqrt(h² + `room`²), at the interval's own level (the
    normal quantile in place of Student's covered less where τ comes from few runs:
    docs/statistics.md, "Runs differ by more than their reps"). The verdict, p-value and
    detectable size follow from the widened interval: its p-value is below 1 − level
    exactly when it leaves 0 out. Unchanged where τ is 0 or the change has no relative
    interval. An interval that reaches −100% or below (a small function's linear interval
    over few reps) has no log scale: it is widened on its own, linear, scale by e^room − 1."""
    if spread.sd <= 0 or ch.rel is None or ch.rel_ci_low is None or ch.rel_ci_high is None:
        return ch
    level = ch.confidence or 0.95
    q = float(sps.norm.ppf(0.5 + level / 2))
    logs = min(ch.rel, ch.rel_ci_low) > -1
    to, back = (math.log1p, math.expm1) if logs else (float, float)
    r = room(spread, level) if logs else math.expm1(room(spread, level))
    e, lo, hi = to(ch.rel), to(ch.rel_ci_low), to(ch.rel_ci_high)
    lo2, hi2 = widened_bounds(e, lo, hi, r)
    rel = Estimate(ch.rel, back(lo2), back(hi2), level)
    absolute = _absolute(ch, (e - lo2) / max(e - lo, 1e-12), (hi2 - e) / max(hi - e, 1e-12))
    verdict, reason, line = stats.verdict_of(
        stats.judged(absolute, rel, ch.base, False),
        stats.spread_of(ch.base, ch.cand, True, True), higher_is_better, noise, regression, max_cv)
    bare = (e - lo) if e >= 0 else (hi - e)              # the side that decides, before
    p = _p_value(abs(e), bare, level, ch.p_value, spread, linear=not logs)
    detectable = ch.detectable
    if detectable is not None:
        detectable = math.expm1(math.hypot(math.log1p(detectable), r * (1 + float(sps.norm.ppf(POWER)) / q)))
    reason = stats.with_reach(reason, verdict, detectable, False, level)
    return dataclasses.replace(
        ch, ci_low=absolute.low, ci_high=absolute.high, rel_ci_low=rel.low, rel_ci_high=rel.high,
        verdict=verdict, reason=reason, line=line, p_value=p, detectable=detectable,
        method=ch.method + "; " + note(spread))


def _quantile(level: float, df: float) -> float:
    return float(sps.t.ppf(0.5 + level / 2, df))


def _row_df(ratio: float, level: float, p0: float) -> float:
    """The Student degrees of freedom whose quantiles scale the row's own half-width as its
    method did: its half-width h at `level` and its p-value p0 (where the half-width
    reaches |e|) give ratio = |e|/h = t_df(1 - p0/2)/t_df(level). Solved on log df in
    [0, log 1e6] (1e6: normal); the nearer end where none fits."""
    f = (lambda ldf: _quantile(1 - p0, math.exp(ldf)) / _quantile(level, math.exp(ldf)) - ratio)
    lo, hi = 0.0, 6.0 * math.log(10)
    flo, fhi = f(lo), f(hi)
    if not (math.isfinite(flo) and math.isfinite(fhi)) or (flo > 0) == (fhi > 0):
        return math.exp(lo) if abs(flo) < abs(fhi) else math.exp(hi)   # nan compares False: normal
    return math.exp(optimize.brentq(f, lo, hi, xtol=1e-6))


def _p_value(e: float, h: float, level: float, p0: float | None, spread: RunSpread,
             linear: bool = False) -> float | None:
    """The p-value of the widened interval: the α at which √(h(1-α)² + room(1-α)²) = |e|,
    h(·) the row's own half-width scaled across levels by the Student quantiles of `_row_df`
    (exactly the row's own where it is a t interval) and room(·) = `room`. Exact, so a family
    that ranks rows by p-value (analysis/compare/multiplicity.py) calls a row changed exactly
    when its widened interval at the family's level leaves 0 out (a normal-quantile p-value
    counted a discovery whose interval held 0). `linear`: the interval is widened on its
    linear scale, by e^room − 1 (`widen`)."""
    if p0 is None or not 0 < h < math.inf or e <= 0 or not 0 < p0 < 1:
        return p0
    df = _row_df(e / h, level, p0)
    scale = h / _quantile(level, df)
    extra = (lambda a: math.expm1(room(spread, 1 - a)) if linear else room(spread, 1 - a))
    g = (lambda la: math.hypot(scale * _quantile(1 - math.exp(la), df), extra(math.exp(la))) - e)
    lo = math.log(1e-300)
    if g(lo) <= 0:
        return 0.0
    if not g(0.0) < 0:          # holds 0 at every level (a half-width of 1e20 rounds above 0 there)
        return 1.0
    return math.exp(optimize.brentq(g, lo, 0.0, xtol=1e-10))


def _absolute(ch: stats.Change, low_by: float, high_by: float) -> Estimate:
    """The interval in the metric's own unit, its two sides stretched as the log ones were."""
    lo = ch.delta - (ch.delta - ch.ci_low) * low_by if ch.ci_low is not None else ch.delta
    hi = ch.delta + (ch.ci_high - ch.delta) * high_by if ch.ci_high is not None else ch.delta
    return Estimate(ch.delta, lo, hi, ch.confidence or 0.95)


def text(spread: RunSpread) -> str:
    """"sd 0.45% [0.23, 0.94]% from 11 recorded A/A runs": the estimate with its 95% interval
    (and, borrowed, where they were recorded)."""
    ci = (f" [{spread.low * 100:.2f}, {spread.high * 100:.2f}]%"
          if spread.low is not None and spread.high is not None else "")
    where = f" of {spread.borrowed}" if spread.borrowed else ""
    return f"sd {spread.sd:.2%}{ci} from {spread.runs} recorded A/A runs{where}"


def whose(spread: RunSpread) -> str:
    """"this host's spread between runs", or the borrowed one's words."""
    return (f"another host's spread between runs (this one has fewer than {MIN_RUNS} A/A runs "
            f"of the case)" if spread.borrowed else "this host's spread between runs")


def note(spread: RunSpread) -> str:
    """The method's words for the widening."""
    return (f"widened by {whose(spread)}, {text(spread)} (what a run's reps share, its interval "
            f"over reps cannot see)")


def planned_sd(spread: RunSpread | None, level: float = 0.95) -> float:
    """τ as a plan should add it to a unit's sd/√n (analysis/power.planned_size, which
    multiplies it by normal quantiles): `room` over the normal quantile, so a plan promises
    what the run prints; 0.0 without a spread."""
    if spread is None or spread.sd <= 0:
        return 0.0
    return room(spread, level) / float(sps.norm.ppf(0.5 + level / 2))
