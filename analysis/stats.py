"""Statistics for A/B comparisons: never a number without its uncertainty.

Every metric stallscope reports (throughput, a TMA node, a function's share of the
profile) goes through `compare()` or `compare_shares()`, which return the side summaries,
the change, a confidence interval of the change and a verdict. The rules are written out
in docs/statistics.md.

Estimator and interval agree (pyperf's rule): the change is the estimator that belongs to
the interval's method (analysis/intervals.py, `METHODS`: the Hodges-Lehmann shift with the
Mann-Whitney interval, and so on), so it always lies inside its own interval.

Every verdict that says "no change" or "unstable" also says how large a change the run
could have seen (`detectable_size`: at its confidence, 80% power, for the method that
decides, from the run's own spread; analysis/power.py),
and every change carries the p-value of its own method, which a false-discovery-rate
correction across many rows ranks.

Why the rank methods by default: benchmark reps are few (3-10) and not normal (one noisy
neighbour makes a long tail); their coverage is exact at any n for a pure shift (or
symmetric pair differences), without normality. With 3 reps per side (or fewer than 6
pairs) no rank interval reaches 95%, so `method="auto"` falls back to the t-interval and
says so in `Change.method`.

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

from analysis import power as power_mod
from analysis.power import MIN_N, POWER
from analysis.intervals import METHODS, Estimate, level_text, method_text, p_value
from analysis.ranks import paired_max_confidence, shift_max_confidence

# A decided change (its interval clears 0) is always named by its direction: at or past
# its line an improvement / a regression, under it a minor one ("regression, below the 3%
# line"); before, a decided -4.5% read "no change" while +4.5% read "improvement".
# The line is the same both ways by default (NOISE, NOISE_PP): with the automation's two
# (3% up, 5% down) a decided -4% printed "regression, below the 5% line" beside +4%'s
# "improvement". `regression` (--regression) still sets a line of its own.
VERDICTS = ("improvement", "regression", "minor improvement", "minor regression", "no change",
            "unstable", "insufficient data")
DECIDED = ("improvement", "regression", "minor improvement", "minor regression")
NOISE = 0.03            # the line of a relative change, both directions by default
NOISE_PP = 0.5          # of a share, in percentage points
# MIN_N, the fewest reps a side that get an interval, and POWER, of the detectable size, are
# declared with the detectable sizes (analysis/power.py).
# Where the user brings what they have (the TMA funnel over toplev/perf outputs): 2 a side
# still give a Welch t-interval that holds its 95% on recorded reps (make bench figure 8,
# bench/small_n.py: 95.6-100% at 2+2, where the normal interval holds 80-93% and "the ranges
# do not overlap" calls a change in a fifth to a third of identical pairs). Wide, but honest.
SMALL_N = 2


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
    # A minor improvement / regression: the waterline it stays under (a fraction, or pp for
    # shares), for "regression, below the 5% line". None for every other verdict.
    line: float | None = None


# ------------------------------------------------------------- the detectable size

def detectable_size(key: str, b: np.ndarray, c: np.ndarray, confidence: float,
                    power: float = POWER, pilot: int | None = None, min_n: int = MIN_N
                    ) -> float | None:
    """The smallest true shift (in the values' unit) that method `key` (intervals.METHODS)
    establishes with probability `power` at `confidence`, from the sides' own spread:
    analysis/power.py, calibrated by simulation for that method and these counts (the
    normal-theory size overstated the rank intervals' power: 56% at 6 pairs). None with
    fewer than `min_n` values a side, or when the method cannot reach `confidence` at all."""
    if min(len(b), len(c)) < min_n:
        return None
    # the bootstrap (asked for by name) gets the Welch size: it has no fixed steps
    return power_mod.detectable("welch" if key == "bootstrap" else key, b, c, confidence, power,
                                pilot)


# ----------------------------------------------------------------------------- compare

def _as_summary(x: Sequence[float] | Summary) -> Summary:
    return x if isinstance(x, Summary) else summarize(x)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def compare(base: Sequence[float] | Summary, cand: Sequence[float] | Summary, *,
            higher_is_better: bool = True, noise: float = NOISE, regression: float | None = None,
            max_cv: float = 0.10, confidence: float = 0.95, paired: bool = False,
            method: str = "auto", pilot: int | None = None, min_n: int = MIN_N,
            method_level: float | None = None) -> Change:
    """Compare two sides' reps of one metric and give a verdict.

    `noise` and `regression` are relative (0.03 = 3%): the line a decided improvement and a
    decided regression must reach to be named without "below the line"; `regression` None
    (the default): the same line as `noise`, both directions alike. They and the interval
    test apply to the relative change `rel` (log scale),
    which is what a report prints. `paired=True` pairs base[i] with cand[i] (same window /
    same interleaving slot). `method` is "auto" (default: the rank interval when it can
    reach `confidence`, else a Welch / paired t-interval), "hl" (Hodges-Lehmann / Wilcoxon
    exact interval, whatever coverage it reaches) or "bootstrap" (percentile bootstrap of
    the median difference, 10000 resamples, seed 0; unpaired only). `pilot` (paired only,
    values in the order measured) makes the interval Stein's two-stage interval with that
    many first-stage pairs: the interval of a run that added reps until it was narrow
    enough (analysis/twostage.py); with method "two-stage+t" (a --on function row) the wider
    of it and the t-interval over all pairs. `min_n` (at least 2) is the fewest reps a side that get
    an interval; below 3 only the Welch t-interval exists (see SMALL_N). `method_level`:
    the level "auto" picks its method for, when it is stricter than `confidence` (a row of
    a family judged together: its p-value and its intervals must come from one method).

    >>> compare([100, 101, 99, 100, 100], [110, 111, 109, 110, 110]).verdict
    'improvement'
    """
    return _compare(base, cand, higher_is_better=higher_is_better, noise=noise,
                    regression=regression, max_cv=max_cv, confidence=confidence,
                    paired=paired, method=method, points=False, pilot=pilot, min_n=min_n,
                    method_level=method_level)


def compare_shares(base: Sequence[float] | Summary, cand: Sequence[float] | Summary, *,
                   higher_is_better: bool = False, noise_pp: float = NOISE_PP,
                   regression_pp: float | None = None, max_cv: float = 0.10, confidence: float = 0.95,
                   paired: bool = False, method: str = "auto", min_n: int = MIN_N,
                   method_level: float | None = None) -> Change:
    """Like compare(), for values that already are percentages (a function's flat share,
    a TMA node's % of slots): thresholds are in percentage points (pp), not relative, so
    a 0.2% -> 0.3% share is not called a "+50% regression". `delta` and the CI are in pp
    and decide the verdict; `rel` is still given for display. Lower is better by default
    (a cost share)."""
    return _compare(base, cand, higher_is_better=higher_is_better, noise=noise_pp,
                    regression=regression_pp, max_cv=max_cv, confidence=confidence,
                    paired=paired, method=method, points=True, pilot=None, min_n=min_n,
                    method_level=method_level)


def rank_reaches(nb: int, nc: int, paired: bool, level: float) -> bool:
    """Can the rank interval of these counts reach `level` at all (its widest interval)?"""
    top = paired_max_confidence(nb) if paired else shift_max_confidence(nb, nc)
    return top + 1e-12 >= level


def _choose(b: np.ndarray, c: np.ndarray, paired: bool, method: str, confidence: float,
            pilot: int | None, method_level: float | None = None) -> tuple[str, Estimate, bool]:
    """(method key, its estimate of cand - base, whether it is the t fallback).
    `method_level`: the level "auto" chooses its method for (default: `confidence`). A
    family of rows judged together (analysis/compare/multiplicity.py) passes its strictest
    level, so each row's p-value and every interval it prints come from one method."""
    if method not in ("auto", "hl", "bootstrap", "two-stage+t"):
        raise ValueError(f"unknown method {method!r} (use 'auto', 'hl' or 'bootstrap')")
    if pilot is not None:
        if not paired:
            raise ValueError("a two-stage interval (pilot) is for paired reps only")
        key = "two-stage+t" if method == "two-stage+t" else "two-stage"
        return key, METHODS[key][1](b, c, confidence, pilot), False
    if method == "two-stage+t":
        raise ValueError("method='two-stage+t' needs a pilot (the first stage's pairs)")
    if method == "bootstrap":
        if paired:
            raise ValueError("method='bootstrap' is unpaired only; pairs use 'auto' or 'hl'")
        return "bootstrap", METHODS["bootstrap"][1](b, c, confidence, 0), False
    key = "signed-rank" if paired else "mann-whitney"
    if method == "auto" and not rank_reaches(len(b), len(c), paired,
                                             max(confidence, method_level or confidence)):
        key = "paired-t" if paired else "welch"
        return key, METHODS[key][1](b, c, confidence, 0), True
    return key, METHODS[key][1](b, c, confidence, 0), False


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


def judged(est: Estimate, rel: Estimate | None, base: Summary, points: bool) -> _Judged:
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


def spread_of(b: Summary, c: Summary, paired: bool, judged_rel: bool) -> tuple[float, str]:
    """The spread the interval is made of, as a CV, and whose it is: a paired comparison's
    is the pairs' (sd of the log ratios, or of the differences over the base mean), whatever
    the sides do between pairs (a restart that moves both servers cancels out of a pair);
    an unpaired one's is the noisier side's."""
    if paired:
        bv, cv = np.asarray(b.values, float), np.asarray(c.values, float)
        if judged_rel:
            return float(np.log(cv / bv).std(ddof=1)), "pairs' ratios"
        d = (cv - bv).std(ddof=1)
        return (float(d / abs(b.mean)) if b.mean else math.inf), "pairs' differences"
    return (b.cv, "base reps") if b.cv >= c.cv else (c.cv, "cand reps")


def verdict_of(j: _Judged, spread: tuple[float, str], higher_is_better: bool, noise: float,
             regression: float | None, max_cv: float) -> tuple[str, str, float | None]:
    """Interval first, then the line (docs/statistics.md, "The verdict"): (verdict, reason,
    the line a minor change stays under). `regression` None: `noise` for both directions."""
    regression = noise if regression is None else regression
    lo, hi = j.est.low, j.est.high
    cv, whose = spread
    if lo <= 0 <= hi:
        if cv > max_cv:
            return "unstable", (f"the {whose} vary too much (CV {cv:.1%} > {max_cv:.0%}) and the "
                                f"interval {j.ci_txt} contains 0."), None
        return "no change", f"the interval {j.ci_txt} contains 0.", None
    better = (lo > 0) == higher_is_better
    line, word, side = ((noise, "improvement", "better") if better
                        else (regression, "regression", "worse"))
    if j.size >= line:
        return word, (f"the whole interval {j.ci_txt} is on the {side} side and the change "
                      f"({j.size_txt}) is at least the {j.thr(line)} line."), None
    return f"minor {word}", (f"the whole interval {j.ci_txt} is on the {side} side: a real "
                             f"{word}, below the {j.thr(line)} line ({j.size_txt})."), line


def _detectable(key: str, bv: np.ndarray, cv: np.ndarray, paired: bool, confidence: float,
                pilot: int | None, judged_rel: bool, points: bool, base_median: float,
                min_n: int) -> float | None:
    """The detectable size in the unit the verdict judges (see Change.detectable)."""
    p = pilot if key.startswith("two-stage") else None
    if judged_rel:
        d = detectable_size(key, np.log(bv), np.log(cv), confidence, pilot=p, min_n=min_n)
        return math.expm1(d) if d is not None else None
    d = detectable_size(key, bv, cv, confidence, pilot=p, min_n=min_n)
    if d is None or points:
        return d
    return d / abs(base_median) if base_median else None


def detectable_text(size: float | None, points: bool) -> str:
    """A detectable size as the reports print it: "1.20 pp"; "±1.1%", or "−3.9%/+4.1%" where
    the two directions differ in print (a relative size is the upward ratio; the same
    distance on the log scale downward is 1 - 1/(1 + size)); past +100% "more than ±100%"
    (a ratio that uncertain says nothing)."""
    if size is None:
        return ""
    if points:
        return f"{size:.2f} pp"
    if size > 1:
        return "more than ±100%"
    up, down = f"{size * 100:.1f}", f"{(1 - 1 / (1 + size)) * 100:.1f}"
    return f"±{up}%" if up == down else f"−{down}%/+{up}%"


def with_reach(reason: str, verdict: str, detectable: float | None, points: bool,
               confidence: float) -> str:
    """A "no change" or "unstable" reason with the size the run could see ("could see ±2.4%
    (80% power) at 95% confidence": the smallest change it would establish)."""
    if verdict not in ("no change", "unstable") or detectable is None:
        return reason
    if points and detectable > 100:
        return reason + (f" No change a share can make (100 pp at most) was within this run's "
                         f"reach ({level_text(confidence)} confidence, {POWER:.0%} power): more runs.")
    size = detectable_text(detectable, points)
    only = "only " if size.startswith("more than") else ""
    return reason + (f" This run could see {only}{size} ({POWER:.0%} power) at "
                     f"{level_text(confidence)} confidence: the smallest change it would establish.")


def _no_spread(b: Summary, c: Summary, paired: bool, points: bool) -> Change | None:
    """No interval where the data hold no spread to make one of: every value of each side
    the same (unpaired), or every pair the same difference (paired). Typically rounded
    output (toplev's one decimal: 10.0, 10.0 vs 11.0, 11.0); a zero-width "95%" interval and
    p = 0 would claim certainty the data cannot give. None when there is spread."""
    bv, cv = np.asarray(b.values, float), np.asarray(c.values, float)
    flat = (np.ptp(cv - bv) == 0) if paired else (b.min == b.max and c.min == c.max)
    if not flat:
        return None
    positive = min(b.min, c.min) > 0
    what = ("every pair differs by the same amount" if paired else
            f"each side's values are all the same ({_fmt(b.min)} and {_fmt(c.min)})")
    return Change(b, c, c.median - b.median, c.median / b.median - 1 if positive else None,
                  None, None, None, None, "no spread: none", "insufficient data",
                  f"no interval: {what}, so the data hold no spread to estimate the "
                  f"uncertainty from (rounded output?); more reps, or unrounded values.",
                  None, "pp" if points else "", "difference of medians")


def _compare(base, cand, *, higher_is_better, noise, regression, max_cv, confidence,
             paired, method, points, pilot, min_n, method_level=None) -> Change:
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
    key, est, fallback = _choose(bv, cv, paired, method, confidence, pilot, method_level)
    if points:
        # A share (0-100%) moves by at most 100 pp either way: cutting a wide interval
        # (2 runs a side) there loses no coverage, and "[-452, +414] pp" reads as a bug.
        est = Estimate(est.value, max(est.low, -100.0), min(est.high, 100.0), est.confidence)
    rel = _on_logs(key, bv, cv, confidence, pilot or 0)
    judged_rel = rel is not None and not points
    flat = _no_spread(b, c, paired, points)
    if flat is not None:
        return flat
    verdict, reason, line = verdict_of(judged(est, rel, b, points),
                                     spread_of(b, c, paired, judged_rel), higher_is_better,
                                     noise, regression, max_cv)
    detectable = _detectable(key, bv, cv, paired, confidence, pilot, judged_rel, points, b.median,
                             min_n)
    reason = with_reach(reason, verdict, detectable, points, confidence)
    scale = (np.log(bv), np.log(cv)) if judged_rel else (bv, cv)
    return Change(b, c, est.value, rel.value if rel else None, est.low, est.high,
                  rel.low if rel else None, rel.high if rel else None,
                  method_text(key, b.n, c.n, est.confidence, confidence, fallback, method_level),
                  verdict, reason, est.confidence, unit, METHODS[key][0], detectable,
                  p_value(key, *scale, pilot or 0), line)
