"""The intervals of the memory-stall section, pure arithmetic on per-rep costs.

The run and its in-cache control are independent runs of the same builds, so a variant's
out-of-cache cost (run - control) gets a Welch t interval. Inside each run the k-th rep of
each variant was measured side by side (paired windows), so the stall a change removed,
(base - cand in the run) - (base - cand in the control), is a difference of two means of pair
differences: Welch again, over the pairs. The share removed is a ratio of two correlated
estimates: Fieller's interval, which is exact for normal estimates and honest about a
denominator near zero (unbounded: no share is printed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import special

from analysis.compare.stall_section import Interval


@dataclass(frozen=True)
class Mean:
    """A mean with its variance (of the mean) and degrees of freedom."""
    value: float
    var: float
    df: float


def mean_of(x: Sequence[float]) -> Mean:
    a = np.asarray(x, float)
    if len(a) < 2:
        return Mean(float(a.mean()) if len(a) else math.nan, math.inf, 0.0)
    return Mean(float(a.mean()), float(a.var(ddof=1)) / len(a), len(a) - 1.0)


def difference(a: Mean, b: Mean) -> Mean:
    """a - b of independent means, Welch-Satterthwaite degrees of freedom."""
    var = a.var + b.var
    if var == 0:
        return Mean(a.value - b.value, 0.0, math.inf)
    parts = [(m.var * m.var / m.df) for m in (a, b) if m.var > 0 and m.df > 0]
    df = var * var / sum(parts) if parts and math.isfinite(var) else 0.0
    return Mean(a.value - b.value, var, df)


def t_quantile(df: float, level: float) -> float:
    if not math.isfinite(df):
        return float(special.ndtri(0.5 + level / 2))
    return float(special.stdtrit(df, 0.5 + level / 2))


def interval(m: Mean, level: float) -> Interval:
    """The t interval of m at `level`; none when m has no degrees of freedom."""
    if not math.isfinite(m.value):
        return Interval(m.value, why="no value")
    if m.df <= 0 or not math.isfinite(m.var):
        return Interval(m.value, why="fewer than 2 reps on a side")
    if m.var == 0:
        return Interval(m.value, m.value, m.value, why="no spread")
    half = t_quantile(m.df, level) * math.sqrt(m.var)
    return Interval(m.value, m.value - half, m.value + half)


def pair_diffs(base: Sequence[float], cand: Sequence[float]) -> list[float]:
    return [b - c for b, c in zip(base, cand)]


def covariance(x: Sequence[float], y: Sequence[float]) -> float:
    """The covariance of the means of x and y (paired samples of one length)."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if len(a) < 2:
        return 0.0
    return float(np.cov(a, b, ddof=1)[0, 1]) / len(a)


def fieller(num: Mean, den: Mean, cov: float, level: float) -> Interval:
    """The ratio num/den with Fieller's interval: every rho with
    (num - rho den)^2 <= t^2 (var_num - 2 rho cov + rho^2 var_den). Unbounded (no interval,
    why says so) when den is not clear of 0 at this level; df: the smaller of the two."""
    ratio = num.value / den.value if den.value else math.nan
    df = min(num.df, den.df)
    if df <= 0 or not math.isfinite(num.var) or not math.isfinite(den.var):
        return Interval(ratio, why="fewer than 2 reps on a side")
    t2 = t_quantile(df, level) ** 2
    qa = den.value ** 2 - t2 * den.var
    if qa <= 0:
        return Interval(ratio, why="the base's out-of-cache cost is not clear of 0")
    qb = num.value * den.value - t2 * cov
    qc = num.value ** 2 - t2 * num.var
    disc = qb * qb - qa * qc
    if disc < 0:          # cannot happen when qa > 0 and the variances are consistent
        return Interval(ratio, why="no real interval")
    root = math.sqrt(disc)
    return Interval(ratio, (qb - root) / qa, (qb + root) / qa)
