"""The rank methods: exact null distributions of the Mann-Whitney and Wilcoxon
signed-rank statistics, the Hodges-Lehmann estimators, and the distribution-free
intervals those distributions give (docs/statistics.md).

Coverage is exact at any n (normal approximation only past m*n = 2500 or 60 pairs) under
what each assumes: a pure shift between the sides (Mann-Whitney), pair differences
symmetric about their centre (signed-rank); no normality, which is why analysis.stats
prefers these intervals for the few, skewed reps of a benchmark.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy import stats as sps


# ---------------------------------------------------------------- exact null distributions

@lru_cache(maxsize=256)
def mann_whitney_cdf(m: int, n: int) -> tuple[float, ...]:
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
def signed_rank_cdf(n: int) -> tuple[float, ...]:
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


def order_stat_interval(sorted_vals: np.ndarray, cdf: Sequence[float] | None,
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
        z = sps.norm.ppf(1 - alpha / 2)
        c = int(math.floor(normal_mean - z * normal_sd))   # type: ignore[operator]
        c = max(1, min(c, (N + 1) // 2))
        achieved = 1 - alpha
    c = min(c, (N + 1) // 2)
    return float(sorted_vals[c - 1]), float(sorted_vals[N - c]), achieved



def shift_max_confidence(m: int, n: int) -> float:
    """The highest confidence a Mann-Whitney shift interval of m + n values can reach: its
    widest interval [min, max] of the differences misses only the two extreme
    arrangements (99.2% at 5 + 5, 94.3% at 3 + 4)."""
    return 1 - 2 / math.comb(m + n, m)


def paired_max_confidence(n: int) -> float:
    """The highest confidence a signed-rank interval of n pairs can reach: 1 - 2 / 2^n
    (93.8% at 5 pairs, 99.2% at 8)."""
    return 1 - 2.0 ** (1 - n)


def _pairwise(base: Sequence[float], cand: Sequence[float]) -> np.ndarray:
    return np.sort(np.subtract.outer(np.asarray(cand, float), np.asarray(base, float)).ravel())


def _walsh(diffs: Sequence[float]) -> np.ndarray:
    x = np.asarray(diffs, float)
    i, j = np.triu_indices(len(x))
    return np.sort((x[i] + x[j]) / 2)


def hodges_lehmann(base: Sequence[float], cand: Sequence[float]) -> float:
    """Hodges-Lehmann shift estimate: median of all cand_j - base_i differences."""
    return float(np.median(_pairwise(base, cand)))


def pseudo_median(diffs: Sequence[float]) -> float:
    """Hodges-Lehmann one-sample estimate: median of the Walsh averages (d_i + d_j) / 2."""
    return float(np.median(_walsh(diffs)))


def shift_interval(base: Sequence[float], cand: Sequence[float],
                   confidence: float = 0.95) -> tuple[float, float, float]:
    """Distribution-free interval for the shift cand - base (Mann-Whitney inversion).

    Returns (low, high, achieved confidence). Exact for m*n <= 2500, normal
    approximation of U above that.
    """
    m, n = len(base), len(cand)
    d = _pairwise(base, cand)
    alpha = 1 - confidence
    if m * n <= 2500:
        return order_stat_interval(d, mann_whitney_cdf(m, n), alpha)
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    return order_stat_interval(d, None, alpha, normal_sd=sd, normal_mean=m * n / 2)


def paired_p_value(diffs: Sequence[float]) -> float | None:
    """Two-sided p-value of "pseudo-median 0" dual to paired_interval, exact for n <= 60:
    the interval at 1 - p is the first to exclude 0. With L Walsh averages <= 0 (U >= 0),
    the lower end clears 0 exactly when P(T+ <= L) <= alpha / 2, so p = 2 P(T+ <= min(L, U)).
    Zero differences count against the change (no normal approximation: scipy's zsplit
    falls back to it, and warns, for small n). None past 60 pairs (the caller's test)."""
    n = len(diffs)
    if n > 60:
        return None
    walsh = _walsh(diffs)
    cdf = signed_rank_cdf(n)
    low, high = int((walsh <= 0).sum()), int((walsh >= 0).sum())
    return min(1.0, 2 * cdf[min(low, high)])


def paired_interval(diffs: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Interval for the pseudo-median of the pair differences (Wilcoxon signed-rank
    inversion on the Walsh averages). Returns (low, high, achieved confidence)."""
    n = len(diffs)
    walsh = _walsh(diffs)
    alpha = 1 - confidence
    if n <= 60:
        return order_stat_interval(walsh, signed_rank_cdf(n), alpha)
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return order_stat_interval(walsh, None, alpha, normal_sd=sd, normal_mean=n * (n + 1) / 4)
