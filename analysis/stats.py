"""Statistics for A/B comparisons: never a number without its uncertainty.

Every metric stallscope reports (throughput, a TMA node, a function's share of the
profile) goes through `compare()` or `compare_shares()`, which return the side summaries,
the change, a confidence interval of the change and a verdict. The rules are written out
in docs/statistics.md.

Estimator and interval agree (pyperf's rule): the change is the estimator that belongs to
the interval's method (analysis/intervals.py, `METHODS`: the Hodges-Lehmann shift with the
Mann-Whitney interval, and so on), so it always lies inside its own interval.

Every verdict that says "no change" or "unstable" also says how large a change the run
could have seen (`detectable_size`: 95% confidence, 80% power, from the run's own spread),
and every change carries the p-value of its own method, which a false-discovery-rate
correction across many rows ranks.

Why the rank methods by default: benchmark reps are few (3-10) and not normal (one noisy
neighbour makes a long tail); their coverage is exact at any n. With 3 reps per side (or
fewer than 6 pairs) no rank interval reaches 95%, so `method="auto"` falls back to the
t-interval and says so in `Change.method`.

Relative changes are ratios on the log scale: the same method on log(values) estimates
log(cand / base) with its interval, and exp(.) - 1 turns both into fractions, so a relative
bound can never pass -100%. With a value <= 0 on either side there is no log and `rel` is
None; the absolute change still stands.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy import special
from scipy import stats as sps

from analysis.intervals import METHODS, Estimate, method_text, p_value

VERDICTS = ("improvement", "regression", "no change", "unstable", "insufficient data")
# The fewest reps a side that get an interval. 3 where stallscope chooses the reps (a run,
# a sweep point): the smallest n at which the rank methods exist beside the t fallback.
MIN_N = 3
# Where the user brings what they have (the TMA funnel over toplev/perf outputs): 2 a side
# still give a Welch t-interval that holds its 95% on recorded reps (make bench figure 8,
# bench/small_n.py: 95.6-100% at 2+2, where the normal interval holds 80-93% and "the ranges
# do not overlap" calls a change in a fifth to a third of identical pairs). Wide, but honest.
SMALL_N = 2
POWER = 0.80            # of the detectable size: the conventional 80%


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
    delta: float                 # the method's estimate of cand - base (see `estimator`)
    rel: float | None            # the same method on log values, as a fraction: exp(est) - 1
    ci_low: float | None         # confidence interval of delta (unit of the metric)
    ci_high: float | None
    rel_ci_low: float | None     # interval of rel (log scale, as fractions)
    rel_ci_high: float | None
    method: str                  # how the interval was made, with n and achieved confidence
    verdict: str                 # one of VERDICTS
    reason: str                  # one plain sentence why
    confidence: float | None = None   # achieved coverage of [ci_low, ci_high] (0..1)
    unit: str = ""               # "pp" for compare_shares(), else whatever the caller says
    estimator: str = ""          # what delta is: "Hodges-Lehmann shift", "difference of means", ...
    # The smallest true change this comparison had an 80% chance to establish at its
    # confidence, from its own spread (`detectable_size`): a fraction for relative metrics
    # (0.041 = a change of 4.1% either way), pp for shares. None without an interval.
    detectable: float | None = None
    # Two-sided p-value of "no change" from the interval's own method, on the scale the
    # verdict judges (log values for relative metrics): what a false-discovery-rate
    # correction across many rows ranks (analysis/compare/multiplicity.py).
    p_value: float | None = None


# ------------------------------------------------------------- the detectable size

def detectable_size(b: np.ndarray, c: np.ndarray, paired: bool, confidence: float = 0.95,
                    power: float = POWER, pilot: int | None = None, min_n: int = MIN_N
                    ) -> float | None:
    """The smallest true shift (in the values' unit) that a comparison with this spread
    establishes with probability `power` at `confidence`: (q + t_power) x SE, where SE is
    the standard error of the difference from the sides' own spread (paired: of the pair
    differences; else Welch's), q the interval's multiplier (the t quantile) and t_power
    the one-sided power quantile. The normal-theory
    size, used beside the rank intervals too: it says what the run could have seen, not
    what it saw. None with fewer than `min_n` values a side."""
    if min(len(b), len(c)) < min_n:
        return None
    if paired:
        d = c - b
        # a two-stage run's spread and degrees of freedom are its pilot's
        spread = d[:pilot] if pilot else d
        se = float(spread.std(ddof=1)) / math.sqrt(len(d))
        df = len(spread) - 1.0
    else:
        vb, vc = float(b.var(ddof=1)) / len(b), float(c.var(ddof=1)) / len(c)
        se = math.sqrt(vb + vc)
        den = (vb * vb / (len(b) - 1) if vb else 0.0) + (vc * vc / (len(c) - 1) if vc else 0.0)
        df = (vb + vc) ** 2 / den if den > 0 else len(b) + len(c) - 2.0
    if se == 0:
        return 0.0
    # special.stdtrit is sps.t.ppf without its argument checks (a report runs thousands)
    return (float(special.stdtrit(df, 1 - (1 - confidence) / 2)) + float(special.stdtrit(df, power))) * se


def units_to_detect(change: float, sd: float, confidence: float = 0.95, power: float = POWER,
                    limit: int = 1000) -> int | None:
    """Fewest paired units (reps, or A/B blocks) whose interval of a relative change would
    establish `change` (a fraction: 0.043) with probability `power`, when one unit's log
    ratio has sd `sd`: the detectable size above, solved for n. None past `limit`."""
    target = abs(math.log1p(change))
    if target == 0:
        return None
    for n in range(MIN_N, limit + 1):
        q = float(sps.t.ppf(1 - (1 - confidence) / 2, n - 1)) + float(sps.t.ppf(power, n - 1))
        if q * sd / math.sqrt(n) <= target:
            return n
    return None


# ----------------------------------------------------------------------------- compare

def _as_summary(x: Sequence[float] | Summary) -> Summary:
    return x if isinstance(x, Summary) else summarize(x)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def compare(base: Sequence[float] | Summary, cand: Sequence[float] | Summary, *,
            higher_is_better: bool = True, noise: float = 0.03, regression: float = 0.05,
            max_cv: float = 0.10, confidence: float = 0.95, paired: bool = False,
            method: str = "auto", pilot: int | None = None, min_n: int = MIN_N) -> Change:
    """Compare two sides' reps of one metric and give a verdict.

    `noise` and `regression` are relative (0.03 = 3%), the Redis benchmark automation
    defaults; they and the interval test apply to the relative change `rel` (log scale),
    which is what a report prints. `paired=True` pairs base[i] with cand[i] (same window /
    same interleaving slot). `method` is "auto" (default: the rank interval when it can
    reach `confidence`, else a Welch / paired t-interval), "hl" (Hodges-Lehmann / Wilcoxon
    exact interval, whatever coverage it reaches) or "bootstrap" (percentile bootstrap of
    the median difference, 10000 resamples, seed 0; unpaired only). `pilot` (paired only,
    values in the order measured) makes the interval Stein's two-stage interval with that
    many first-stage pairs: the interval of a run that added reps until it was narrow
    enough (analysis/twostage.py). `min_n` (at least 2) is the fewest reps a side that get
    an interval; below 3 only the Welch t-interval exists (see SMALL_N).

    >>> compare([100, 101, 99, 100, 100], [110, 111, 109, 110, 110]).verdict
    'improvement'
    """
    return _compare(base, cand, higher_is_better=higher_is_better, noise=noise,
                    regression=regression, max_cv=max_cv, confidence=confidence,
                    paired=paired, method=method, points=False, pilot=pilot, min_n=min_n)


def compare_shares(base: Sequence[float] | Summary, cand: Sequence[float] | Summary, *,
                   higher_is_better: bool = False, noise_pp: float = 0.5,
                   regression_pp: float = 1.0, max_cv: float = 0.10, confidence: float = 0.95,
                   paired: bool = False, method: str = "auto", min_n: int = MIN_N) -> Change:
    """Like compare(), for values that already are percentages (a function's flat share,
    a TMA node's % of slots): thresholds are in percentage points (pp), not relative, so
    a 0.2% -> 0.3% share is not called a "+50% regression". `delta` and the CI are in pp
    and decide the verdict; `rel` is still given for display. Lower is better by default
    (a cost share)."""
    return _compare(base, cand, higher_is_better=higher_is_better, noise=noise_pp,
                    regression=regression_pp, max_cv=max_cv, confidence=confidence,
                    paired=paired, method=method, points=True, pilot=None, min_n=min_n)


def _choose(b: np.ndarray, c: np.ndarray, paired: bool, method: str, confidence: float,
            pilot: int | None) -> tuple[str, Estimate, bool]:
    """(method key, its estimate of cand - base, whether it is the t fallback)."""
    if method not in ("auto", "hl", "bootstrap"):
        raise ValueError(f"unknown method {method!r} (use 'auto', 'hl' or 'bootstrap')")
    if pilot is not None:
        if not paired:
            raise ValueError("a two-stage interval (pilot) is for paired reps only")
        return "two-stage", METHODS["two-stage"][1](b, c, confidence, pilot), False
    if method == "bootstrap":
        if paired:
            raise ValueError("method='bootstrap' is unpaired only; pairs use 'auto' or 'hl'")
        return "bootstrap", METHODS["bootstrap"][1](b, c, confidence, 0), False
    key = "signed-rank" if paired else "mann-whitney"
    est = METHODS[key][1](b, c, confidence, 0)
    if method == "auto" and est.confidence + 1e-12 < confidence:
        key = "paired-t" if paired else "welch"
        return key, METHODS[key][1](b, c, confidence, 0), True
    return key, est, False


def _on_logs(key: str, b: np.ndarray, c: np.ndarray, confidence: float, pilot: int
             ) -> Estimate | None:
    """The same method on log values, back as fractions (exp(x) - 1); None when a value
    is <= 0 (no logarithm)."""
    if min(b.min(), c.min()) <= 0:
        return None
    e = METHODS[key][1](np.log(b), np.log(c), confidence, pilot)
    return Estimate(math.expm1(e.value), math.expm1(e.low), math.expm1(e.high), e.confidence)


@dataclass(frozen=True)
class _Judged:
    """The change a report prints, in the unit its waterlines are in."""
    est: Estimate
    size: float                  # |change| against the waterlines
    size_txt: str
    ci_txt: str
    thr: Callable[[float], str]  # a waterline as text


def _judged(est: Estimate, rel: Estimate | None, base: Summary, points: bool) -> _Judged:
    if points:
        return _Judged(est, abs(est.value), f"{abs(est.value):.2f} pp",
                       f"[{_fmt(est.low)}, {_fmt(est.high)}] pp", lambda t: f"{t:.2f} pp")
    if rel is not None:
        return _Judged(rel, abs(rel.value), f"{abs(rel.value):.1%}",
                       f"[{rel.low:+.1%}, {rel.high:+.1%}]", lambda t: f"{t:.0%}")
    # A value <= 0 leaves no ratio: the absolute interval decides, its size is taken
    # against the base median.
    size = abs(est.value) / abs(base.median) if base.median else math.inf
    size_txt = f"{size:.1%} of the base median" if base.median else "infinite (base median 0)"
    return _Judged(est, size, size_txt, f"[{_fmt(est.low)}, {_fmt(est.high)}]",
                   lambda t: f"{t:.0%}")


def _verdict(j: _Judged, b: Summary, c: Summary, higher_is_better: bool, noise: float,
             regression: float, max_cv: float) -> tuple[str, str]:
    """Interval first, then the waterlines (docs/statistics.md, "The verdict")."""
    lo, hi = j.est.low, j.est.high
    spans_zero = lo <= 0 <= hi
    worst_cv = max(b.cv, c.cv)
    if worst_cv > max_cv and spans_zero:
        side = "base" if b.cv >= c.cv else "cand"
        return "unstable", (f"the {side} reps vary too much (CV {worst_cv:.1%} > {max_cv:.0%}) "
                            f"and the interval {j.ci_txt} contains 0.")
    if spans_zero:
        return "no change", f"the interval {j.ci_txt} contains 0."
    if (lo > 0) == higher_is_better:
        if j.size >= noise:
            return "improvement", (f"the whole interval {j.ci_txt} is on the better side and the "
                                   f"change ({j.size_txt}) is at least the {j.thr(noise)} noise "
                                   f"waterline.")
        return "no change", f"the change ({j.size_txt}) is below the {j.thr(noise)} noise waterline."
    if j.size >= regression:
        return "regression", (f"the whole interval {j.ci_txt} is on the worse side and the "
                              f"change ({j.size_txt}) is at least the {j.thr(regression)} "
                              f"regression threshold.")
    return "no change", (f"the change ({j.size_txt}) is on the worse side but below the "
                         f"{j.thr(regression)} regression threshold.")


def _detectable(key: str, bv: np.ndarray, cv: np.ndarray, paired: bool, confidence: float,
                pilot: int | None, judged_rel: bool, points: bool, base_median: float,
                min_n: int) -> float | None:
    """The detectable size in the unit the verdict judges (see Change.detectable)."""
    p = pilot if key == "two-stage" else None
    if judged_rel:
        d = detectable_size(np.log(bv), np.log(cv), paired, confidence, pilot=p, min_n=min_n)
        return math.expm1(d) if d is not None else None
    d = detectable_size(bv, cv, paired, confidence, pilot=p, min_n=min_n)
    if d is None or points:
        return d
    return d / abs(base_median) if base_median else None


def detectable_text(size: float | None, points: bool) -> str:
    """"±4.1%" or "1.20 pp": a detectable size as the reports print it."""
    if size is None:
        return ""
    return f"{size:.2f} pp" if points else f"±{size:.1%}"


def _compare(base, cand, *, higher_is_better, noise, regression, max_cv, confidence,
             paired, method, points, pilot, min_n) -> Change:
    b, c = _as_summary(base), _as_summary(cand)
    unit = "pp" if points else ""
    if min_n < 2:
        raise ValueError(f"min_n must be at least 2 (one value has no spread), got {min_n}")
    if b.n < min_n or c.n < min_n:
        positive = min(b.min, c.min) > 0
        return Change(b, c, c.median - b.median, c.median / b.median - 1 if positive else None,
                      None, None, None, None, f"n<{min_n}: none", "insufficient data",
                      f"needs at least {min_n} reps per side, has {b.n} (base) and {c.n} (cand).",
                      None, unit, "difference of medians")
    if paired and b.n != c.n:
        raise ValueError(f"paired comparison needs equal counts, got {b.n} and {c.n}")
    bv, cv = np.asarray(b.values, float), np.asarray(c.values, float)
    key, est, fallback = _choose(bv, cv, paired, method, confidence, pilot)
    if points:
        # A share (0-100%) moves by at most 100 pp either way: cutting a wide interval
        # (2 runs a side) there loses no coverage, and "[-452, +414] pp" reads as a bug.
        est = Estimate(est.value, max(est.low, -100.0), min(est.high, 100.0), est.confidence)
    rel = _on_logs(key, bv, cv, confidence, pilot or 0)
    judged_rel = rel is not None and not points
    verdict, reason = _verdict(_judged(est, rel, b, points), b, c, higher_is_better, noise,
                               regression, max_cv)
    detectable = _detectable(key, bv, cv, paired, confidence, pilot, judged_rel, points, b.median,
                             min_n)
    if verdict in ("no change", "unstable") and detectable is not None:
        if points and detectable > 100:
            reason += (f" No change a share can make (100 pp at most) was within this run's "
                       f"reach ({confidence:.0%} confidence, {POWER:.0%} power): more runs.")
        else:
            reason += (f" This run could have established a change of "
                       f"{detectable_text(detectable, points)} or more ({confidence:.0%} "
                       f"confidence, {POWER:.0%} power).")
    scale = (np.log(bv), np.log(cv)) if judged_rel else (bv, cv)
    return Change(b, c, est.value, rel.value if rel else None, est.low, est.high,
                  rel.low if rel else None, rel.high if rel else None,
                  method_text(key, b.n, c.n, est.confidence, confidence, fallback),
                  verdict, reason, est.confidence, unit, METHODS[key][0], detectable,
                  p_value(key, *scale, pilot or 0))
