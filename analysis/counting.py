"""Samples are counts: what counting alone predicts for a function's cost per rep.

perf samples a function's CPU time: N samples of it in a rep stand for N sample periods,
and two reps of the same server differ by counting alone (Poisson: a count of N has a
relative sd of 1/sqrt(N)) even when nothing else moved. So the log ratio cand/base of one
paired rep's cost of a function has, from counting alone, the variance

    v = 1/N_base + 1/N_cand          (the delta method for the log of a count)

(the operations it is divided by are counted exactly). A row's per-rep log ratios that
spread as much as their v predicts are as steady as a sample count can make them: more
samples would narrow them. Spread beyond it is the machine (or the server start). A test
that does not find spread beyond counting has not shown there is none: a row at twice
counting's spread passes it at 13 reps in 43% of runs, so what a quieter machine could
still do is said by the dispersion's upper bound (`upper`), never by the test alone. `dispersion` compares the two; the report's labels (materiality.py)
and the top movers' test (analysis/moderated.py, families.py) use it.

A rep with no sample of a function on one side has no ratio. Every reader of such a row
takes it one way (the printed row, the --precision plan, the dispersion): when any rep of
either side has no sample, every rep of both sides gets half a sample added (the
Haldane-Anscombe correction, the usual one for log ratios of counts), so no rep is dropped
(dropping them kept the reps where the function happened to be sampled, a bias up) and
the row stays on the log scale the other rows are judged on.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

HALF = 0.5       # the Haldane-Anscombe correction, in samples


def corrected(base: Sequence[float], cand: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The per-rep counts of a row ready for a ratio: as they are, or, when any rep of
    either side has no sample, every rep of both with HALF a sample added."""
    b, c = np.asarray(base, float), np.asarray(cand, float)
    if min(b.min(initial=1.0), c.min(initial=1.0)) <= 0:
        return b + HALF, c + HALF
    return b, c


def variance(base: Sequence[float], cand: Sequence[float]) -> np.ndarray:
    """Each paired rep's counting variance of log(cand / base): 1/N_base + 1/N_cand, the
    counts corrected as `corrected` does."""
    b, c = corrected(base, cand)
    return 1.0 / b + 1.0 / c


@dataclass(frozen=True)
class Dispersion:
    """How a row's per-rep log ratios spread against what counting predicts.

    phi: the dispersion, sum of (x - mean)^2 / v over n - 1 (1 where counting is all of
    it; the mean weighted by 1/v); df: n - 1; p_value: of "counting explains the spread"
    (the chi-square upper tail of (n - 1) * phi): small when the spread is beyond it."""
    phi: float
    df: int
    p_value: float
    mean: float          # the count-weighted mean log ratio
    weight: float        # sum of 1/v: the mean's variance from counting is phi / weight

    @property
    def counting(self) -> bool:
        """The test finds no spread beyond counting (at 5%): more samples would narrow the
        row. Not a proof that the machine adds none: see `upper` and `quiet_gain`."""
        return self.p_value >= ALPHA

    def upper(self, level: float = 0.95) -> float:
        """The one-sided `level` upper bound of the true dispersion: df * phi over the
        chi-square's 1 - level quantile (inf on 0 degrees of freedom)."""
        return self.df * self.phi / float(sps.chi2.ppf(1 - level, self.df)) if self.df > 0 else math.inf

    def quiet_gain(self, level: float = 0.95) -> float:
        """The most a machine that adds nothing beyond counting (dispersion 1) could narrow
        the row's interval, at `level`: 1 - 1/sqrt(upper), 0 when the bound is at most 1."""
        u = self.upper(level)
        return max(0.0, 1 - 1 / math.sqrt(u))


ALPHA = 0.05      # the dispersion test's level: spread beyond counting at 5% is the machine's


def dispersion(x: Sequence[float], v: Sequence[float]) -> Dispersion | None:
    """The dispersion of log ratios x (one per paired rep) whose counting variances are v;
    None with fewer than 2 reps or a variance that is not positive."""
    xa, va = np.asarray(x, float), np.asarray(v, float)
    if len(xa) < 2 or len(xa) != len(va) or not np.all(va > 0) or not np.all(np.isfinite(xa)):
        return None
    w = 1.0 / va
    mean = float((w * xa).sum() / w.sum())
    rss = float((w * (xa - mean) ** 2).sum())
    df = len(xa) - 1
    return Dispersion(rss / df, df, float(sps.chi2.sf(rss, df)), mean, float(w.sum()))


def of_row(base: Sequence[float], cand: Sequence[float], base_counts: Sequence[float],
           cand_counts: Sequence[float], paired: bool) -> Dispersion | None:
    """A function row's dispersion against counting: `base`/`cand` the statistic's per-rep
    values (CPU time per operation or shares: a count times a per-rep factor, zero-sample
    reps already given half a sample, `corrected`), `*_counts` the samples behind them.
    Paired: the per-rep log ratios against 1/N_base + 1/N_cand. Unpaired (separate profile
    reps, a server start each): each side's log values against 1/N, the two sides' sums
    pooled over n_base - 1 + n_cand - 1 degrees of freedom. None when a value is not
    positive (no log) or a count unknown."""
    b, c = np.asarray(base, float), np.asarray(cand, float)
    nb, nc = corrected(base_counts, cand_counts)
    if min(b.min(initial=1.0), c.min(initial=1.0)) <= 0 or len(nb) != len(b) or len(nc) != len(c):
        return None
    if paired:
        return dispersion(np.log(c / b), 1.0 / nb + 1.0 / nc) if len(b) == len(c) else None
    parts = [dispersion(np.log(x), 1.0 / n) for x, n in ((b, nb), (c, nc))]
    if any(d is None for d in parts):
        return None
    rss = sum(d.phi * d.df for d in parts)
    df = sum(d.df for d in parts)
    return Dispersion(rss / df, df, float(sps.chi2.sf(rss, df)), parts[1].mean - parts[0].mean,
                      1.0 / (1.0 / parts[0].weight + 1.0 / parts[1].weight))
