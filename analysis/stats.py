"""Statistics for A/B comparisons: never a number without its uncertainty.

Every metric stallscope reports (throughput, a TMA node, a function's share of the
profile) goes through `compare()`, which returns the medians, the change, a confidence
interval of the change and a verdict. The rules are written out in docs/statistics.md.

Why Hodges-Lehmann with a Mann-Whitney interval by default: benchmark reps are few
(3-10) and not normal (one noisy neighbour makes a long tail). The Mann-Whitney
(Wilcoxon rank-sum) interval for a location shift is distribution-free and its coverage
is exact at any n, whereas a bootstrap of medians from 5 values can only resample 5
numbers and under-covers. A seeded bootstrap is still offered (`method="bootstrap"`).

The rank interval's coverage is discrete: with 3 reps per side (or fewer than 6 pairs)
no rank interval reaches 95% (3+3 tops out at 90%). The default `method="auto"` then
falls back to a Welch t-interval of the difference of means (paired: a t-interval of the
pair differences), which does reach the asked confidence at the price of assuming the
reps are roughly normal, and says so in `method`. From 4+4 / 6 pairs on, the
distribution-free interval is used.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np

VERDICTS = ("improvement", "regression", "no change", "unstable", "insufficient data")
MIN_N = 3


@dataclass
class Summary:
    n: int
    median: float
    mean: float
    stdev: float          # sample standard deviation (n-1); 0 when n == 1
    cv: float             # stdev / |mean|; 0 when mean is 0 and stdev is 0, inf otherwise
    min: float
    max: float
    values: list[float] = field(default_factory=list)


def summarize(values: Sequence[float]) -> Summary:
    """Median, mean, spread of one side's reps (raises ValueError on no values / NaN)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("summarize: no values")
    if any(math.isnan(v) for v in vals):
        raise ValueError(f"summarize: NaN among values {vals}")
    a = np.asarray(vals)
    mean = float(a.mean())
    stdev = float(a.std(ddof=1)) if len(a) > 1 else 0.0
    if mean != 0:
        cv = stdev / abs(mean)
    else:
        cv = 0.0 if stdev == 0 else math.inf
    return Summary(n=len(vals), median=float(np.median(a)), mean=mean, stdev=stdev, cv=cv,
                   min=float(a.min()), max=float(a.max()), values=vals)


@dataclass
class Change:
    base: Summary
    cand: Summary
    delta: float                 # cand.median - base.median (unit of the metric)
    rel: float | None            # delta / |base.median| (None if base median is 0)
    ci_low: float | None         # confidence interval of delta (unit of the metric)
    ci_high: float | None
    rel_ci_low: float | None     # the same interval divided by |base.median|
    rel_ci_high: float | None
    method: str                  # how the interval was made, with n and achieved confidence
    verdict: str                 # one of VERDICTS
    reason: str                  # one plain sentence why
    confidence: float | None = None   # achieved coverage of [ci_low, ci_high] (0..1)
    unit: str = ""               # "pp" for compare_shares(), else whatever the caller says


# ---------------------------------------------------------------- exact null distributions

@lru_cache(maxsize=256)
def _mann_whitney_cdf(m: int, n: int) -> tuple[float, ...]:
    """P(U <= u) for u = 0..m*n under H0, exact.

    The number of rank arrangements with U = u is the coefficient of q^u in the
    Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).
    """
    top = m * n
    poly = [1] + [0] * top
    for i in range(1, m + 1):
        # multiply by (1 - q^(n+i))
        k = n + i
        for t in range(top, k - 1, -1):
            poly[t] -= poly[t - k]
        # divide by (1 - q^i): running sum with stride i (exact, integer coefficients)
        for t in range(i, top + 1):
            poly[t] += poly[t - i]
    total = math.comb(m + n, m)
    acc, out = 0, []
    for c in poly:
        acc += c
        out.append(acc / total)
    return tuple(out)


@lru_cache(maxsize=256)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """P(T+ <= t) for t = 0..n(n+1)/2 under H0 (Wilcoxon signed-rank), exact."""
    top = n * (n + 1) // 2
    counts = [0] * (top + 1)
    counts[0] = 1
    for r in range(1, n + 1):
        for t in range(top, r - 1, -1):
            counts[t] += counts[t - r]
    total = 2 ** n
    acc, out = 0, []
    for c in counts:
        acc += c
        out.append(acc / total)
    return tuple(out)


def _order_stat_interval(sorted_vals: np.ndarray, cdf: Sequence[float] | None,
                         alpha: float, normal_sd: float | None = None,
                         normal_mean: float | None = None) -> tuple[float, float, float]:
    """[V_(c), V_(N+1-c)] with the largest c whose tail P(stat <= c-1) <= alpha/2.

    Returns (low, high, achieved_confidence). When even c = 1 cannot reach the asked
    confidence (tiny n), the widest interval is returned with its real, lower coverage.
    """
    N = len(sorted_vals)
    if cdf is not None:
        c = 1
        while c < N and cdf[c] <= alpha / 2:   # cdf[c] = P(stat <= c)
            c += 1
        # now P(stat <= c-1) <= alpha/2 < P(stat <= c), or c is the floor value 1
        achieved = 1 - 2 * cdf[c - 1]
    else:
        from scipy.stats import norm
        z = norm.ppf(1 - alpha / 2)
        c = int(math.floor(normal_mean - z * normal_sd))   # type: ignore[operator]
        c = max(1, min(c, (N + 1) // 2))
        achieved = 1 - alpha
    c = min(c, (N + 1) // 2)
    return float(sorted_vals[c - 1]), float(sorted_vals[N - c]), achieved


def hodges_lehmann(base: Sequence[float], cand: Sequence[float]) -> float:
    """Hodges-Lehmann shift estimate: median of all cand_j - base_i differences."""
    d = np.subtract.outer(np.asarray(cand, float), np.asarray(base, float)).ravel()
    return float(np.median(d))


def shift_interval(base: Sequence[float], cand: Sequence[float],
                   confidence: float = 0.95) -> tuple[float, float, float]:
    """Distribution-free interval for the shift cand - base (Mann-Whitney inversion).

    Returns (low, high, achieved confidence). Exact for m*n <= 2500, normal
    approximation of U above that.
    """
    b, c = np.asarray(base, float), np.asarray(cand, float)
    m, n = len(b), len(c)
    d = np.sort(np.subtract.outer(c, b).ravel())
    alpha = 1 - confidence
    if m * n <= 2500:
        return _order_stat_interval(d, _mann_whitney_cdf(m, n), alpha)
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    return _order_stat_interval(d, None, alpha, normal_sd=sd, normal_mean=m * n / 2)


def paired_interval(diffs: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Interval for the median pair difference (Wilcoxon signed-rank inversion on the
    Walsh averages). Returns (low, high, achieved confidence)."""
    x = np.asarray(diffs, float)
    n = len(x)
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    alpha = 1 - confidence
    if n <= 60:
        return _order_stat_interval(walsh, _signed_rank_cdf(n), alpha)
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return _order_stat_interval(walsh, None, alpha, normal_sd=sd, normal_mean=n * (n + 1) / 4)


def welch_interval(base: Sequence[float], cand: Sequence[float],
                   confidence: float = 0.95) -> tuple[float, float, float]:
    """Welch t-interval of mean(cand) - mean(base); unequal variances."""
    from scipy.stats import t as student_t
    b, c = np.asarray(base, float), np.asarray(cand, float)
    vb, vc = b.var(ddof=1) / len(b), c.var(ddof=1) / len(c)
    d = float(c.mean() - b.mean())
    se = math.sqrt(vb + vc)
    if se == 0:
        return d, d, confidence
    df = (vb + vc) ** 2 / ((vb ** 2) / (len(b) - 1) + (vc ** 2) / (len(c) - 1))
    h = float(student_t.ppf(1 - (1 - confidence) / 2, df)) * se
    return d - h, d + h, confidence


def paired_t_interval(diffs: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Student t-interval of the mean pair difference."""
    from scipy.stats import t as student_t
    x = np.asarray(diffs, float)
    m, se = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(len(x))
    if se == 0:
        return m, m, confidence
    h = float(student_t.ppf(1 - (1 - confidence) / 2, len(x) - 1)) * se
    return m - h, m + h, confidence


def bootstrap_interval(base: Sequence[float], cand: Sequence[float], confidence: float = 0.95,
                       resamples: int = 10000, seed: int = 0) -> tuple[float, float, float]:
    """Percentile bootstrap of the difference of medians (fixed seed: reproducible)."""
    rng = np.random.default_rng(seed)
    b, c = np.asarray(base, float), np.asarray(cand, float)
    bi = rng.integers(0, len(b), size=(resamples, len(b)))
    ci = rng.integers(0, len(c), size=(resamples, len(c)))
    diffs = np.median(c[ci], axis=1) - np.median(b[bi], axis=1)
    alpha = 1 - confidence
    lo, hi = np.quantile(diffs, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi), confidence


# ----------------------------------------------------------------------------- compare

def _as_summary(x: Sequence[float] | Summary) -> Summary:
    return x if isinstance(x, Summary) else summarize(x)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def compare(base: Sequence[float] | Summary, cand: Sequence[float] | Summary, *,
            higher_is_better: bool = True, noise: float = 0.03, regression: float = 0.05,
            max_cv: float = 0.10, confidence: float = 0.95, paired: bool = False,
            method: str = "auto") -> Change:
    """Compare two sides' reps of one metric and give a verdict.

    `noise` and `regression` are relative (0.03 = 3% of the base median), the Redis
    benchmark automation defaults. `paired=True` pairs base[i] with cand[i] (same
    window / same interleaving slot). `method` is "auto" (default: the rank interval below
    when it can reach `confidence`, else a Welch / paired t-interval), "hl"
    (Hodges-Lehmann / Wilcoxon exact interval, whatever coverage it reaches) or
    "bootstrap" (percentile bootstrap of the median difference, 10000 resamples, seed 0;
    unpaired only).

    >>> compare([100, 101, 99, 100, 100], [110, 111, 109, 110, 110]).verdict
    'improvement'
    """
    return _compare(base, cand, higher_is_better=higher_is_better, noise=noise,
                    regression=regression, max_cv=max_cv, confidence=confidence,
                    paired=paired, method=method, points=False)


def compare_shares(base: Sequence[float] | Summary, cand: Sequence[float] | Summary, *,
                   higher_is_better: bool = False, noise_pp: float = 0.5,
                   regression_pp: float = 1.0, max_cv: float = 0.10, confidence: float = 0.95,
                   paired: bool = False, method: str = "auto") -> Change:
    """Like compare(), for values that already are percentages (a function's flat share,
    a TMA node's % of slots): thresholds are in percentage points (pp), not relative, so
    a 0.2% -> 0.3% share is not called a "+50% regression". `delta` and the CI are in pp;
    `rel` is still given for display. Lower is better by default (a cost share)."""
    return _compare(base, cand, higher_is_better=higher_is_better, noise=noise_pp,
                    regression=regression_pp, max_cv=max_cv, confidence=confidence,
                    paired=paired, method=method, points=True)


def _compare(base, cand, *, higher_is_better, noise, regression, max_cv, confidence,
             paired, method, points) -> Change:
    b, c = _as_summary(base), _as_summary(cand)
    delta = c.median - b.median
    rel = delta / abs(b.median) if b.median != 0 else None
    unit = "pp" if points else ""

    def result(lo, hi, meth, verdict, reason, achieved=None) -> Change:
        rlo = lo / abs(b.median) if lo is not None and b.median != 0 else None
        rhi = hi / abs(b.median) if hi is not None and b.median != 0 else None
        return Change(b, c, delta, rel, lo, hi, rlo, rhi, meth, verdict, reason, achieved, unit)

    if b.n < MIN_N or c.n < MIN_N:
        return result(None, None, f"n<{MIN_N}: none", "insufficient data",
                      f"needs at least {MIN_N} reps per side, has {b.n} (base) and {c.n} (cand).")

    if method not in ("auto", "hl", "bootstrap"):
        raise ValueError(f"unknown method {method!r} (use 'auto', 'hl' or 'bootstrap')")
    if paired:
        if b.n != c.n:
            raise ValueError(f"paired comparison needs equal counts, got {b.n} and {c.n}")
        diffs = [y - x for x, y in zip(b.values, c.values)]
        lo, hi, achieved = paired_interval(diffs, confidence)
        meth = (f"Wilcoxon signed-rank interval of the paired differences, n={b.n} pairs, "
                f"achieved confidence {achieved:.1%}")
        if method == "auto" and achieved + 1e-12 < confidence:
            lo, hi, achieved = paired_t_interval(diffs, confidence)
            meth = (f"paired t-interval of the mean difference, n={b.n} pairs, {achieved:.0%} "
                    f"(a rank interval cannot reach {confidence:.0%} with so few pairs; "
                    f"assumes roughly normal differences)")
    elif method == "bootstrap":
        lo, hi, achieved = bootstrap_interval(b.values, c.values, confidence)
        meth = f"percentile bootstrap of the median difference, 10000 resamples, seed 0, n={b.n}+{c.n}"
    else:
        lo, hi, achieved = shift_interval(b.values, c.values, confidence)
        meth = (f"Mann-Whitney (Hodges-Lehmann) shift interval, n={b.n}+{c.n}, "
                f"achieved confidence {achieved:.1%}")
        if method == "auto" and achieved + 1e-12 < confidence:
            lo, hi, achieved = welch_interval(b.values, c.values, confidence)
            meth = (f"Welch t-interval of the difference of means, n={b.n}+{c.n}, {achieved:.0%} "
                    f"(a rank interval cannot reach {confidence:.0%} with so few reps; assumes "
                    f"roughly normal reps; 5 per side give the distribution-free interval)")
    if achieved + 1e-12 < confidence:
        meth += f" (asked {confidence:.0%}: not attainable with so few reps)"

    spans_zero = lo <= 0 <= hi
    worst_cv = max(b.cv, c.cv)
    if worst_cv > max_cv and spans_zero:
        side = "base" if b.cv >= c.cv else "cand"
        return result(lo, hi, meth, "unstable",
                      f"the {side} reps vary too much (CV {worst_cv:.1%} > {max_cv:.0%}) "
                      f"and the interval [{_fmt(lo)}, {_fmt(hi)}] contains 0.", achieved)

    # size of the change against the thresholds: relative, or absolute points
    if points:
        size, size_txt = abs(delta), f"{abs(delta):.2f} pp"
    else:
        size = abs(rel) if rel is not None else math.inf
        size_txt = f"{abs(rel):.1%}" if rel is not None else "infinite (base median 0)"
    on_good_side = lo > 0 if higher_is_better else hi < 0
    thr = (lambda t: f"{t:.2f} pp") if points else (lambda t: f"{t:.0%}")
    ci_txt = f"[{_fmt(lo)}, {_fmt(hi)}]{' pp' if points else ''}"

    if spans_zero:
        return result(lo, hi, meth, "no change",
                      f"the interval {ci_txt} contains 0.", achieved)
    if on_good_side:
        if size >= noise:
            return result(lo, hi, meth, "improvement",
                          f"the whole interval {ci_txt} is on the better side and the change "
                          f"({size_txt}) is at least the {thr(noise)} noise waterline.", achieved)
        return result(lo, hi, meth, "no change",
                      f"the change ({size_txt}) is below the {thr(noise)} noise waterline.", achieved)
    # whole interval on the bad side
    if size >= regression:
        return result(lo, hi, meth, "regression",
                      f"the whole interval {ci_txt} is on the worse side and the change "
                      f"({size_txt}) is at least the {thr(regression)} regression threshold.",
                      achieved)
    return result(lo, hi, meth, "no change",
                  f"the change ({size_txt}) is on the worse side but below the "
                  f"{thr(regression)} regression threshold.", achieved)
