"""Moderated variances (limma, Smyth 2004): many rows with few reps each borrow the spread of
the others, and the moderated t of one row has the rows' degrees of freedom, not its own
(unless its own spread is the larger).

Five paired reps give a row's own t 4 degrees of freedom: its 99.9% quantile is 8.6 where
the normal's is 3.3, and a family of 70 rows judged at 99.93% each (the top movers) could
see a function's cost move only by ±80-110% at ~600 samples a rep. The rows of one run do
not each have a spread of their own to that degree: a function's per-rep log ratio
spreads by counting its samples (analysis/counting.py, v = 1/N_base + 1/N_cand per rep)
times a dispersion phi that is about the same for every row of the run (0.5-1.8, median
0.84, over the 77 rows of the recorded paired A/A tests/data/runs/mset-aa-paired-small).
So each row's dispersion is shrunk towards the run's typical one by the scaled inverse
chi-square the rows' dispersions fit (limma's fitFDist, by the moments of their logs),
and its t has d0 + n - 1 degrees of freedom (d0: what the rows' agreement is worth,
infinite when they agree as well as chance allows):

    phi~ = (d0 * phi0 + (n - 1) * phi) / (d0 + n - 1)
    t    = mean / sqrt(max(phi~, phi) / sum(1/v))      (the count-weighted mean log ratio)

Exact under the model (a row's dispersion drawn from that prior, its reps normal on the log
scale); the larger of the moderated and the row's own dispersion keeps a row that is
noisier than the run's others (a function whose cost differs between server starts) from
borrowing the others' calm, and where its own is the larger its t has its own n - 1
degrees of freedom: the d0 + n - 1 belong to the moderated dispersion, which that row does
not use (zfree in the recorded A/A tests/data/runs/aa-decides-emr-1, dispersion 2.28 on 12
degrees of freedom against the family's 0.91 on 52, judged on 64 was called changed 3.9x
as often as 99.9% allows, and its detectable size printed 20% small; on its own 12, 1.0x:
bench/mover_df.py, `make bench` figure 7e, every pattern of swapped sides).
bench/movers.py (`make bench` figure 7d) proves the family's error rate on the recorded A/A
and shows the power it buys; analysis/history/paired_signal.py
moderates a job's runs the same way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import special

from analysis import power, stats
from analysis.counting import Dispersion
from analysis.intervals import Estimate, level_text

MIN_ROWS = 5        # fewer rows with a spread than this: no prior, each row its own t


def trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (limma's Newton iteration; trigamma is decreasing)."""
    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = float(special.polygamma(1, x))
        step = tri * (1 - tri / y) / float(special.polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


@dataclass(frozen=True)
class Prior:
    """The rows' typical variance s02, worth d0 degrees of freedom (0: none; inf: the rows
    agree as well as chance allows, one variance for all)."""
    d0: float
    s02: float


def fit(variances: Sequence[float], dfs: Sequence[float]) -> Prior:
    """limma's fitFDist: the scaled inverse chi-square that the rows' variances (each with
    its own degrees of freedom) fit, by the moments of their logs. No prior (d0 0) from
    fewer than MIN_ROWS rows with a positive variance."""
    pairs = [(v, d) for v, d in zip(variances, dfs) if v > 0 and d > 0]
    if len(pairs) < MIN_ROWS:
        return Prior(0.0, 0.0)
    d = np.array([p[1] for p in pairs], float)
    e = np.log([p[0] for p in pairs]) - special.digamma(d / 2) + np.log(d / 2)
    evar = float(np.var(e, ddof=1) - np.mean(special.polygamma(1, d / 2)))
    if evar <= 0:
        return Prior(math.inf, float(np.exp(e.mean())))
    d0 = 2 * trigamma_inverse(evar)
    return Prior(d0, float(np.exp(e.mean() + special.digamma(d0 / 2) - np.log(d0 / 2))))


def moderate(var: float, df: float, prior: Prior) -> tuple[float, float]:
    """(moderated variance, its degrees of freedom) of a row with variance `var` on `df`."""
    if prior.d0 == 0:
        return var, df
    if math.isinf(prior.d0):
        return prior.s02, math.inf
    return (prior.d0 * prior.s02 + df * var) / (prior.d0 + df), prior.d0 + df


@dataclass(frozen=True)
class RowTest:
    """A counted row's moderated t: its count-weighted mean log ratio, that mean's standard
    error and the t's degrees of freedom, and the dispersions behind them."""
    mean: float
    se: float
    df: float
    phi: float             # the dispersion used: max(moderated, the row's own)
    own: Dispersion
    prior: Prior


def row_test(d: Dispersion, prior: Prior) -> RowTest:
    """The moderated t of one row (module docstring): the moderated dispersion on its
    degrees of freedom, or, where the row's own is the larger, its own on its own n - 1."""
    phi, df = moderate(d.phi, d.df, prior)
    if d.phi > phi:
        phi, df = d.phi, d.df
    return RowTest(d.mean, math.sqrt(phi / d.weight), df, phi, d, prior)


def prior_of(rows: Sequence[Dispersion]) -> Prior:
    """The prior the dispersions of a family's rows fit."""
    return fit([d.phi for d in rows], [d.df for d in rows])


def p_value(t: RowTest) -> float:
    """Two-sided p-value of "no change" by the row's moderated t (1 without a spread)."""
    if t.se <= 0:
        return 1.0
    z = abs(t.mean) / t.se
    return float(2 * (special.ndtr(-z) if math.isinf(t.df) else special.stdtr(t.df, -z)))


def _quantile(df: float, p: float) -> float:
    return float(special.ndtri(p) if math.isinf(df) else special.stdtrit(df, p))


def change(base: Sequence[float], cand: Sequence[float], t: RowTest, confidence: float, *,
           higher_is_better: bool = False, noise: float = stats.NOISE, regression: float | None = None,
           max_cv: float = 0.10) -> stats.Change | None:
    """A counted row's Change at `confidence` by its moderated t (`t`): the change is the
    count-weighted mean log ratio (the ratio exp(mean) - 1, and in the values' unit that
    ratio of the base's geometric mean), its interval mean +- t_df x se, judged by the
    rules of analysis.stats on the ratio. `base`/`cand`: the statistic's per-rep values.
    None when the row holds no spread (se 0): the caller keeps its own method's Change."""
    if t.se <= 0:
        return None
    b, c = stats.summarize(base), stats.summarize(cand)
    half = _quantile(t.df, 0.5 + confidence / 2) * t.se
    lo, hi = t.mean - half, t.mean + half
    rel = Estimate(math.expm1(t.mean), math.expm1(lo), math.expm1(hi), confidence)
    g = math.exp(float(np.mean(np.log(b.values))))
    est = Estimate(g * rel.value, g * rel.low, g * rel.high, confidence)
    verdict, reason, line = stats.verdict_of(stats.judged(est, rel, b, False),
                                             stats.spread_of(b, c, True, True),
                                             higher_is_better, noise, regression, max_cv)
    k = power.moderated_multiplier(t.df, confidence)
    size = math.expm1(k * t.se) if k is not None else None
    p = p_value(t)
    df = "infinite" if math.isinf(t.df) else f"{t.df:.0f}"
    method = (f"moderated t-interval of the count-weighted mean log ratio, n={b.n} pairs: the "
              f"spread of counting its samples x dispersion {t.phi:.2f} (its own {t.own.phi:.2f} on "
              f"{t.own.df}, the family's rows' {t.prior.s02:.2f} on "
              f"{'infinite' if math.isinf(t.prior.d0) else f'{t.prior.d0:.0f}'} degrees of "
              f"freedom; the larger of its own and the moderated), {df} degrees of freedom, "
              f"{level_text(confidence)}")
    return stats.Change(b, c, est.value, rel.value, est.low, est.high, rel.low, rel.high, method,
                        verdict, stats.with_reach(reason, verdict, size, False, confidence),
                        confidence, "", "count-weighted mean log ratio", size, p, line)
