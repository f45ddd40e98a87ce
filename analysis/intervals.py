"""The interval methods of analysis.stats: each one's estimate of cand - base, its
confidence interval and the p-value of "no change" that belongs to that interval (its
interval at level 1 - p just reaches 0), with the sentence that names it in a report.

docs/statistics.md explains when each is used: the rank intervals (exact at any n for a
pure shift, or symmetric pair differences) by default, Welch / paired t when too few reps
let no rank interval reach the asked
confidence, the bootstrap on request, Stein's two-stage interval for runs that added reps
until they were precise enough.
"""
from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
from scipy import special
from scipy import stats as sps

from analysis import twostage
from analysis.levels import level_text  # noqa: F401 (the one writer; read here too)
from analysis.ranks import (hodges_lehmann, paired_interval, paired_p_value, paired_max_confidence, pseudo_median,
                           shift_interval, shift_max_confidence)

BOOTSTRAP_RESAMPLES = 10000


@dataclass(frozen=True)
class Estimate:
    """One method's estimate of cand - base and its interval."""
    value: float
    low: float
    high: float
    confidence: float            # achieved coverage of [low, high]


# ------------------------------------------------------------- estimators and intervals

@contextmanager
def _quiet_moments() -> Iterator[None]:
    """scipy warns of precision loss when a side's reps agree to the last bits (a share
    computed as 100 * w / total per rep); the interval is then just narrow, and the
    warning would only reach the user's terminal."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        yield


def _welch(b: np.ndarray, c: np.ndarray) -> tuple[float, float, float]:
    """(mean(c) - mean(b), its standard error, Welch-Satterthwaite degrees of freedom):
    what scipy's ttest_ind(equal_var=False) computes. Written out because a report runs
    thousands of these (every top-mover candidate, twice) and each ttest_ind builds a
    frozen t distribution, docstring included: 5 s of a 7 s analysis."""
    vb, vc = b.var(ddof=1) / len(b), c.var(ddof=1) / len(c)
    se2 = vb + vc
    df = se2 * se2 / (vb * vb / (len(b) - 1) + vc * vc / (len(c) - 1))
    return float(c.mean() - b.mean()), math.sqrt(se2), float(df)


def welch_interval(base: Sequence[float], cand: Sequence[float],
                   confidence: float = 0.95) -> tuple[float, float, float]:
    """Welch t-interval of mean(cand) - mean(base) (unequal variances), scipy's t quantile."""
    b, c = np.asarray(base, float), np.asarray(cand, float)
    d = float(c.mean() - b.mean())
    if b.var() == 0 and c.var() == 0:      # no spread: the interval is NaN
        return d, d, confidence
    d, se, df = _welch(b, c)
    half = float(special.stdtrit(df, 0.5 + confidence / 2)) * se
    return d - half, d + half, confidence


def _one_sample(x: np.ndarray) -> tuple[float, float, float]:
    """(mean, its standard error, degrees of freedom) of a one-sample t: what scipy's
    ttest_1samp computes, written out for the reason _welch is (a report runs a thousand of
    them: the top-mover candidates' rows, twice; each ttest_1samp froze a t distribution)."""
    return float(x.mean()), float(x.std(ddof=1)) / math.sqrt(len(x)), len(x) - 1.0


def paired_t_interval(diffs: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Student t-interval of the mean pair difference (scipy's t quantile)."""
    x = np.asarray(diffs, float)
    if x.var() == 0:
        return float(x.mean()), float(x.mean()), confidence
    m, se, df = _one_sample(x)
    half = float(special.stdtrit(df, 0.5 + confidence / 2)) * se
    return m - half, m + half, confidence


def bootstrap_interval(base: Sequence[float], cand: Sequence[float], confidence: float = 0.95,
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
                       ) -> tuple[float, float, float]:
    """Percentile bootstrap of the difference of medians, from scipy (fixed seed:
    reproducible)."""
    def stat(c, b, axis):
        return np.median(c, axis=axis) - np.median(b, axis=axis)
    res = sps.bootstrap((np.asarray(cand, float), np.asarray(base, float)), stat,
                        vectorized=True, paired=False, n_resamples=resamples,
                        confidence_level=confidence, method="percentile",
                        random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high), confidence


def two_stage_interval(diffs: np.ndarray, confidence: float, pilot: int, whole: bool = False
                       ) -> tuple[float, float, float]:
    """Stein's two-stage interval of the mean pair difference (analysis/twostage.py): the
    interval of a run that added reps until it was narrow enough; `whole` (a function row's,
    "two-stage+t"): the wider of it and the t interval over all pairs."""
    iv = twostage.interval(diffs, pilot, confidence, whole)
    return iv.low, iv.high, confidence


# method -> (what the change is, estimate + interval); `pilot` is the first-stage size of
# a two-stage run (only "two-stage" reads it)
Method = Callable[[np.ndarray, np.ndarray, float, int], Estimate]
METHODS: dict[str, tuple[str, Method]] = {
    "mann-whitney": ("Hodges-Lehmann shift", lambda b, c, q, pilot: Estimate(
        hodges_lehmann(b, c), *shift_interval(b, c, q))),
    "signed-rank": ("Hodges-Lehmann pseudo-median of the pair differences", lambda b, c, q, pilot: Estimate(
        pseudo_median(c - b), *paired_interval(c - b, q))),
    "welch": ("difference of means", lambda b, c, q, pilot: Estimate(
        float(c.mean() - b.mean()), *welch_interval(b, c, q))),
    "paired-t": ("mean pair difference", lambda b, c, q, pilot: Estimate(
        float((c - b).mean()), *paired_t_interval(c - b, q))),
    "bootstrap": ("difference of medians", lambda b, c, q, pilot: Estimate(
        float(np.median(c) - np.median(b)), *bootstrap_interval(b, c, q))),
    "two-stage": ("mean pair difference", lambda b, c, q, pilot: Estimate(
        float((c - b).mean()), *two_stage_interval(c - b, q, pilot))),
    "two-stage+t": ("mean pair difference", lambda b, c, q, pilot: Estimate(
        float((c - b).mean()), *two_stage_interval(c - b, q, pilot, whole=True))),
}


def _rank_needs(paired: bool, level: float) -> int:
    """The fewest reps a side (pairs) whose rank interval reaches `level`."""
    n = 2
    while (paired_max_confidence(n) if paired else shift_max_confidence(n, n)) + 1e-12 < level:
        n += 1
    return n


def method_text(key: str, nb: int, nc: int, achieved: float, confidence: float,
                 fallback: bool, chosen_for: float | None = None) -> str:
    """The method in words. `chosen_for`: the level the method was chosen for (a family's
    strictest, when stricter than `confidence`)."""
    want = max(confidence, chosen_for or 0)
    few = f"a rank interval cannot reach {level_text(want)} with so few"
    text = {
        "mann-whitney": f"Mann-Whitney (Hodges-Lehmann) shift interval, n={nb}+{nc}, "
                        f"achieved confidence {achieved:.1%}",
        "signed-rank": f"Wilcoxon signed-rank interval of the paired differences, n={nb} pairs, "
                       f"achieved confidence {achieved:.1%}",
        "welch": f"Welch t-interval of the difference of means, n={nb}+{nc}, {level_text(achieved)}"
                 + (f" ({few} reps; assumes roughly normal reps; {_rank_needs(False, want)} per "
                    f"side give the distribution-free interval)" if fallback else ""),
        "paired-t": f"paired t-interval of the mean difference, n={nb} pairs, {level_text(achieved)}"
                    + (f" ({few} pairs; assumes roughly normal differences; "
                       f"{_rank_needs(True, want)} pairs give the distribution-free interval)"
                       if fallback else ""),
        "bootstrap": f"percentile bootstrap of the median difference, {BOOTSTRAP_RESAMPLES} "
                     f"resamples, seed 0, n={nb}+{nc}",
        "two-stage": f"Stein two-stage interval of the mean pair difference, n={nb} pairs, "
                     f"spread from the first-stage pairs, {level_text(achieved)} (valid after adding "
                     f"reps until it was narrow enough)",
        "two-stage+t": f"the wider of Stein's two-stage interval of the mean pair difference "
                       f"(spread from the first-stage pairs) and the t-interval over all n={nb} "
                       f"pairs, {level_text(achieved)} (valid after adding reps until it was narrow "
                       f"enough; the t over all pairs takes a skewed row's spread that the first "
                       f"stage missed)",
    }[key]
    if achieved + 1e-12 < confidence:
        text += f" (asked {level_text(confidence)}: not attainable with so few reps)"
    return text


# ----------------------------------------------------------------------------- p-values

def p_value(key: str, b: np.ndarray, c: np.ndarray, pilot: int) -> float | None:
    """Two-sided p-value of "no change" by the test that belongs to the interval's method
    (its interval at level 1 - p just reaches 0); None for the bootstrap."""
    d = c - b if key in ("signed-rank", "paired-t", "two-stage", "two-stage+t") else None   # pairs
    with _quiet_moments(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if key == "mann-whitney":
            return float(sps.mannwhitneyu(c, b, alternative="two-sided").pvalue)
        if key == "signed-rank":
            if not np.any(d):
                return 1.0
            exact = paired_p_value(d)
            return exact if exact is not None else float(sps.wilcoxon(d, zero_method="zsplit").pvalue)
        if key == "welch":
            if b.var() == 0 and c.var() == 0:
                return 1.0 if c.mean() == b.mean() else 0.0
            d, se, df = _welch(b, c)
            return float(2 * special.stdtr(df, -abs(d) / se))
        if key == "paired-t":
            if d.var() == 0:
                return 1.0 if d.mean() == 0 else 0.0
            m, se, df = _one_sample(d)
            return float(2 * special.stdtr(df, -abs(m) / se))
        if key in ("two-stage", "two-stage+t"):
            return twostage.p_value(d, pilot, whole=key == "two-stage+t")
    return None
