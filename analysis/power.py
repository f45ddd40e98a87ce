"""The detectable size of each interval method: the smallest true change a comparison
establishes with 80% probability, for the method that actually decides.

The normal-theory size (t(1 - a/2) + t(power)) x SE overstates the power of the rank
intervals stallscope uses by default: their confidence comes in steps (a signed-rank
interval of 6 pairs can only be 96.9% or 87.5%), so at 95% they take a wider order statistic
than the t interval would, and an audit measured 56% power at the printed size for 6 pairs,
62% for Mann-Whitney 4+4. And the size is printed from the run's own spread, which is noisy
at a few reps: even the t interval reaches 73-77% on average at the size it printed.

So the size is calibrated by simulation, per method and counts: D = K x SE, where SE is the
run's standard error of the change (paired: sd of the differences / sqrt(n); else Welch's)
and K is chosen so that, over runs of the reference noise, the power at the printed size
D_i = K x SE_i averages 80%:

    mean_i  P(the method's interval excludes 0 | true change K x SE_i)  =  0.80

The reference noise is Student's t with 6 degrees of freedom (excess kurtosis 3), heavier
tailed than every recorded noise pool here (per-window log ratios of the A/A noise runs:
excess kurtosis 0.5-0.8). Calibrated under normal noise, the signed-rank size of 6 pairs held
76% on one recorded pool; under t(6) every method holds 79-88% on all three (make bench
figure 10, bench/power.py), and more under normal noise: the size printed errs large.

Every method here is shift-equivariant (adding d to every candidate value moves its interval
by d), so one set of null intervals (l_j, h_j) gives the whole power curve:
P(exclude 0 | d) = P(l_j > -d) + P(h_j < -d). Scale-equivariance makes K a pure number of
(method, counts, confidence, power): computed once (seeded, 4,000 null runs) and cached.
tests/test_trust_stats.py checks the 80% on recorded per-rep values, and the old rule failing.
Past the exact rank range (more than 60 pairs, or m x n above 2500) the rank methods use the
t size (at 60) times sqrt(pi/3), their efficiency against t under normal noise.

This is the one home of the detectable size: a comparison's (`detectable`, through
stats.detectable_size) and a plan's before its run (`planned_size`, `planned_change`,
`units_to_detect`: the sweep and experiment `--plan` lines, collectors/sweep/noise_plan.py).
Every one takes the confidence it is asked for: the plan's is the comparison's setting
(CompareOptions.confidence), so a plan promises what the report will judge with.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from scipy import special

from analysis.ranks import mann_whitney_cdf, signed_rank_cdf

SIMULATIONS = 4000
SEED = 20261127
NOISE_DF = 6            # the reference noise: Student's t, 6 degrees of freedom
PAIRED = ("signed-rank", "paired-t", "two-stage", "two-stage+t")
POWER = 0.80            # of the detectable size: the conventional 80%
# The fewest reps a side that get an interval (so a detectable size). 3 where stallscope
# chooses the reps (a run, a sweep point): the smallest n at which the rank methods exist
# beside the t fallback.
MIN_N = 3


def _rank_index(cdf: tuple[float, ...], alpha: float, n: int) -> int | None:
    """The 1-based order statistic of ranks.order_stat_interval at level 1 - alpha; None
    when even the widest interval cannot reach it."""
    if 1 - 2 * cdf[0] + 1e-12 < 1 - alpha:
        return None
    c = 1
    while c < n and cdf[c] <= alpha / 2:
        c += 1
    return min(c, (n + 1) // 2)


def _null_intervals(key: str, nb: int, nc: int, confidence: float, pilot: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(low, high, SE) of the method's interval over SIMULATIONS runs of the reference noise
    with no change; None when the method cannot reach `confidence` with these counts."""
    alpha = 1 - confidence
    s = SIMULATIONS
    if key in PAIRED:
        d = rng.standard_t(NOISE_DF, (s, nb))
        spread = d[:, :pilot] if key.startswith("two-stage") else d
        se = spread.std(axis=1, ddof=1) / math.sqrt(nb)
        if key == "signed-rank":
            i, j = np.triu_indices(nb)
            walsh = np.sort((d[:, i] + d[:, j]) / 2, axis=1)
            k = _rank_index(signed_rank_cdf(nb), alpha, walsh.shape[1])
            if k is None:
                return None
            return walsh[:, k - 1], walsh[:, walsh.shape[1] - k], se
        df = (pilot if key.startswith("two-stage") else nb) - 1.0
        half = float(special.stdtrit(df, 1 - alpha / 2)) * se
        if key == "two-stage+t":        # the wider of Stein's and the t over all pairs
            whole = d.std(axis=1, ddof=1) / math.sqrt(nb)
            half = np.maximum(half, float(special.stdtrit(nb - 1.0, 1 - alpha / 2)) * whole)
        m = d.mean(axis=1)
        return m - half, m + half, se
    b, c = rng.standard_t(NOISE_DF, (s, nb)), rng.standard_t(NOISE_DF, (s, nc))
    vb, vc = b.var(axis=1, ddof=1) / nb, c.var(axis=1, ddof=1) / nc
    se = np.sqrt(vb + vc)
    if key == "mann-whitney":
        diffs = np.sort((c[:, :, None] - b[:, None, :]).reshape(s, -1), axis=1)
        k = _rank_index(mann_whitney_cdf(nb, nc), alpha, diffs.shape[1])
        if k is None:
            return None
        return diffs[:, k - 1], diffs[:, diffs.shape[1] - k], se
    df = (vb + vc) ** 2 / (vb ** 2 / (nb - 1) + vc ** 2 / (nc - 1))
    half = special.stdtrit(df, 1 - alpha / 2) * se
    m = c.mean(axis=1) - b.mean(axis=1)
    return m - half, m + half, se


def _exact_range(key: str, nb: int, nc: int) -> bool:
    return ((key == "signed-rank" and nb <= 60) or (key == "mann-whitney" and nb * nc <= 2500)
            or key in ("welch", "paired-t", "two-stage", "two-stage+t"))


@lru_cache(maxsize=512)
def multiplier(key: str, nb: int, nc: int, confidence: float, power: float,
               pilot: int = 0) -> float | None:
    """K of the module docstring: detectable size = K x SE. None when the method cannot
    reach `confidence` with these counts (no change is within its reach at all)."""
    if not _exact_range(key, nb, nc):
        t = "paired-t" if key == "signed-rank" else "welch"
        k = multiplier(t, min(nb, 60), min(nc, 60), confidence, power)
        return None if k is None else k * math.sqrt(math.pi / 3)
    null = _null_intervals(key, nb, nc, confidence, pilot or nb,
                           np.random.default_rng([SEED, nb, nc, pilot]))
    if null is None:
        return None
    low, high, se = null
    low, high = np.sort(low), np.sort(high)

    def mean_power(k: float) -> float:
        shift = k * se           # the size each simulated run would have printed
        # P(l_j > -d) + P(h_j < -d), for every run's d at once
        above = 1 - np.searchsorted(low, -shift, side="right") / len(low)
        below = np.searchsorted(high, -shift, side="left") / len(high)
        return float(np.mean(above + below))

    lo, hi = 0.0, 1.0
    while mean_power(hi) < power:
        hi *= 2
        if hi > 1e6:
            return None
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean_power(mid) < power else (lo, mid)
    return hi


# Where each row has a level of its own (a family weighted by share, multiplicity.py), a
# row's share of the family's error q is rounded down to this grid first: 20 steps a decade
# (at most 11% less), so a report computes a few dozen multipliers, not one per row, and
# rounding down only widens.
GRID_STEPS = 20


def on_grid(fraction: float) -> float:
    """The largest 10^(-k/20) (k = 0, 1, ...) at or below `fraction` (0 < fraction <= 1)."""
    if fraction >= 1:
        return 1.0
    k = math.ceil(-GRID_STEPS * math.log10(fraction) - 1e-9)
    return 10 ** (-k / GRID_STEPS)


def moderated_multiplier(df: float, confidence: float, power: float = POWER) -> float | None:
    """K of a moderated t (analysis/moderated.py) with `df` degrees of freedom: the paired
    t's calibrated K at df + 1 pairs (its standard error has that many degrees of freedom),
    at most 60 (past it the t's own K at 60, which errs large against the normal limit:
    4.41 against 4.06 at 99.87%)."""
    n = 60 if math.isinf(df) else max(3, min(60, int(math.floor(df)) + 1))
    return multiplier("paired-t", n, n, round(confidence, 12), power)


def detectable(key: str, b: np.ndarray, c: np.ndarray, confidence: float, power: float,
               pilot: int | None = None) -> float | None:
    """The detectable size of a comparison made by method `key` on values b and c (in
    their unit; the caller passes log values for a relative change): K x SE. None when the
    method cannot reach `confidence` with these counts; 0 when the values hold no spread."""
    paired = key in PAIRED
    if paired:
        d = c - b
        spread = d[:pilot] if pilot else d
        se = float(spread.std(ddof=1)) / math.sqrt(len(d))
    else:
        se = math.sqrt(float(b.var(ddof=1)) / len(b) + float(c.var(ddof=1)) / len(c))
    if se == 0:
        return 0.0
    k = multiplier(key, len(b), len(c), round(confidence, 9), power, pilot or 0)
    return None if k is None else k * se


def planned_size(n: int, sd: float, confidence: float, power: float = POWER,
                 between: float = 0.0) -> float:
    """The detectable size (log scale) of n paired units whose log ratio has sd `sd`, with
    the method a run of n pairs decides with (signed-rank where it reaches `confidence`,
    else the paired t): what a plan promises before the run (sweep and experiment plans).
    `between`: the sd between runs that no number of units narrows (analysis/run_spread.py,
    as its planned_sd gives it), added as the run's interval adds it: in quadrature, at the
    normal quantiles of `confidence` and `power` (the rank method's steps are the units')."""
    from analysis.ranks import paired_max_confidence
    key = "signed-rank" if paired_max_confidence(n) + 1e-12 >= confidence else "paired-t"
    k = multiplier(key, n, n, round(confidence, 9), power)
    z = NormalDist().inv_cdf(0.5 + confidence / 2) + NormalDist().inv_cdf(power)
    return math.inf if k is None else math.hypot(k * sd / math.sqrt(n), z * between)


def planned_change(n: int, sd: float, confidence: float, power: float = POWER,
                   between: float = 0.0) -> float:
    """planned_size as a relative change (0.043 = 4.3% either way); inf below MIN_N units,
    which get no interval."""
    return math.inf if n < MIN_N else math.expm1(planned_size(n, sd, confidence, power, between))


def units_to_detect(change: float, sd: float, confidence: float, power: float = POWER,
                    limit: int = 1000, between: float = 0.0) -> int | None:
    """Fewest paired units (reps, or A/B blocks) whose interval of a relative change would
    establish `change` (a fraction: 0.043) with probability `power`, when one unit's log
    ratio has sd `sd` and runs differ by sd `between`, with the method a run of that many
    pairs uses. None past `limit`, or where the spread between runs alone is wider."""
    target = abs(math.log1p(change))
    if target == 0:
        return None
    for n in range(MIN_N, limit + 1):
        if planned_size(n, sd, confidence, power, between) <= target:
            return n
    return None


@dataclass(frozen=True)
class Reach:
    """What a function row of a given share will be judged at, and what it could see."""
    level: float           # the confidence its interval will be at (at most this strict)
    detectable: float      # the relative change it would establish with `power` (0.10 = ±10%)
    se: float              # the standard error of its log ratio, from counting


def row_reach(share: float, samples: float, reps: int, *, focus_rows: int | None = None,
              q: float = 0.05, weight_left: float = 1.0, dispersion: float = 1.0,
              power: float = POWER) -> Reach:
    """The level a function row of `share` (a fraction of its view's samples: 0.05) will be
    judged at, and the detectable change that implies, for a planned run of `reps` paired
    reps with `samples` samples a rep a side in that view (perf's rate x the seconds it
    samples a side x the main thread's busy share). The planner's question: what rate and
    how many reps give every function of 5% or more ±10%.

    A top mover (focus_rows None): the movers' family is weighted by each function's own
    share (analysis/compare/families.py): its rows are judged at 1 - q x share / W, W the
    shares of the family's rows not called changed (at most 1 for own costs alone;
    `weight_left`, 1 by default, a bound), with the moderated t (analysis/moderated.py; its
    degrees of freedom taken as many: the run's rows are many). A focus row
    (focus_rows: the focus family's rows, Holm): 1 - q / focus_rows, its own paired rank or
    t interval over the reps (planned_size). Both spread by counting, scaled by
    `dispersion` (1: counting alone; the recorded A/A's rows: 0.5-1.8, median 0.84):
    2 x dispersion / (share x samples) per rep on the log scale."""
    if not 0 < share <= 1 or samples <= 0 or reps < 1:
        raise ValueError(f"row_reach: share {share} (a fraction), samples {samples} and reps "
                         f"{reps} must be positive")
    sd = math.sqrt(2 * dispersion / (share * samples))
    if focus_rows is not None:
        level = 1 - q / max(focus_rows, 1)
        return Reach(level, planned_change(reps, sd, level, power), sd / math.sqrt(reps))
    level = 1 - q * on_grid(min(share / weight_left, 1.0))
    se = sd / math.sqrt(reps)
    if reps < MIN_N:
        return Reach(level, math.inf, se)
    k = moderated_multiplier(math.inf, level, power)
    return Reach(level, math.inf if k is None else math.expm1(k * se), se)
