"""The in-run paired signal: does this run's paired change say the candidate got slower?

A job with `--paired` measures candidate and baseline side by side in every run, so each
run carries its own paired change: per paired rep, the log of the ratio of the two sides'
geometric-mean window rates (analysis/compare/pair_clusters.py). Those per-rep log ratios
are stored with the run (points.values of the `paired:` series, base and cand, in rep
order); this module tests them, one run at a time, in the order the runs were made:

- the run's baseline is not the build the run before it used as baseline (policy
  `previous`, a first run, its parent commit): the run's own change is the shift, tested
  against 0 (baseline..candidate is the commit range);
- the run's baseline is the same build as the run before it (`pinned`, `last-good`):
  every run after a shift would differ from the baseline, so the shift is the step of the
  in-run change from the run before to this one (their difference, both variances).

The test is one-sided (regressions), at ALPHA per run and series, with the moderated t of
limma (Smyth 2004): each run's variance of its per-rep log ratios is shrunk towards the
job's typical one, estimated from the PRIOR_RUNS runs before it (their within-run
variances, which shifts of the mean do not touch), by as many degrees of freedom as those
runs agree. Five reps give a t with 4 degrees of freedom, whose 99.5% quantile is 4.6 where
the normal's is 2.6: pooling is what makes 5 reps worth testing. Pooling blindly would be
wrong on a noisier night (at 32 pairs a rep the per-rep sd was 0.027 on one recorded
evening and 0.062 on another day): the prior's degrees of freedom fall as the runs' variances disagree, and the
test falls back to the run's own t (fewer than MIN_PRIOR earlier runs: the run's own t).
Only runs before the tested one are used, so a run's finding does not change when later
runs arrive. docs/history.md ("The in-run paired signal") gives the false-alert rate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from scipy import stats as sps

from analysis import moderated as moderated_mod
from analysis.history.function_series import MIN_SIDE, split_t
from analysis.moderated import Prior, trigamma_inverse  # noqa: F401 (tests read it here)

ALPHA = 0.005          # one-sided, per run and series: half the 1-in-100 budget (docs/history.md)
PRIOR_RUNS = 30        # the runs before the tested one whose variances form the prior
MIN_PRIOR = moderated_mod.MIN_ROWS   # fewer earlier runs than this: the run's own variance alone
MIN_REPS = 3           # as analysis.stats: fewer reps give no spread to test with


@dataclass(frozen=True)
class RunRatios:
    """One run's per-rep log ratios (cand / base) of a paired series."""
    run: Any                     # StoredRun
    logs: tuple[float, ...]

    @property
    def n(self) -> int:
        return len(self.logs)

    # cached: a run's are read again by the prior of each of the PRIOR_RUNS runs after it
    @cached_property
    def mean(self) -> float:
        return sum(self.logs) / len(self.logs)

    @cached_property
    def var(self) -> float:
        return sum((x - self.mean) ** 2 for x in self.logs) / (len(self.logs) - 1)


def run_ratios(cand: list[tuple[Any, dict]], base: list[tuple[Any, dict]]) -> list[RunRatios]:
    """The runs of a paired series (oldest first) whose stored reps can be paired: the same
    number of positive values on both sides, at least MIN_REPS."""
    base_values = {r.id: p.get("values") or [] for r, p in base}
    out = []
    for run, p in cand:
        c, b = p.get("values") or [], base_values.get(run.id, [])
        if len(c) == len(b) >= MIN_REPS and min(c + b) > 0:
            out.append(RunRatios(run, tuple(math.log(y / x) for x, y in zip(b, c))))
    return out


def prior(past: list[RunRatios]) -> Prior:
    """limma's fitFDist (analysis/moderated.py): the scaled inverse chi-square that the runs'
    variances fit, by the moments of their logs (each run's own degrees of freedom, n - 1);
    none from fewer than MIN_PRIOR runs with a spread."""
    return moderated_mod.fit([r.var for r in past], [r.n - 1.0 for r in past])


def moderated(r: RunRatios, pr: Prior) -> tuple[float, float]:
    """(variance of one rep's log ratio, its degrees of freedom) for run r under prior pr."""
    return moderated_mod.moderate(r.var, r.n - 1.0, pr)


@dataclass(frozen=True)
class PairedTest:
    run: Any                     # StoredRun: the tested run
    reference: Any               # None: the run's own baseline; else the run before it
    previous: Any                # the run before it in the series (None for the first)
    shift: float                 # ratio - 1 (log scale): the candidate vs the reference
    low: float                   # its 95% interval
    high: float
    p_value: float               # one-sided, towards worse


def _test(r: RunRatios, prev: RunRatios | None, ref: RunRatios | None, pr: Prior,
          hib: bool) -> PairedTest | None:
    parts = []                    # (variance of a mean, its degrees of freedom) per run
    for x in [r] if ref is None else [r, ref]:
        v, df = moderated(x, pr)
        parts.append((v / x.n, df))
    se = math.sqrt(sum(a for a, _ in parts))
    if se == 0:
        return None               # reps that agree to the last bit: nothing to test with
    # Welch-Satterthwaite degrees of freedom of the sum (infinite when every part is)
    den = sum(a * a / df for a, df in parts if not math.isinf(df))
    df = sum(a for a, _ in parts) ** 2 / den if den > 0 else math.inf
    est = r.mean - (ref.mean if ref is not None else 0.0)
    t = est / se
    p = float(sps.t.cdf(t, df) if hib else sps.t.sf(t, df))
    q = float(sps.t.ppf(0.975, df)) * se
    return PairedTest(r.run, ref.run if ref is not None else None, prev.run if prev else None,
                      math.expm1(est), math.expm1(est - q), math.expm1(est + q), p)


def regressions(ratios: list[RunRatios], hib: bool = True, alpha: float = ALPHA) -> list[PairedTest]:
    """The runs whose paired change is worse than their reference at one-sided `alpha`."""
    out = []
    for k, r in enumerate(ratios):
        prev = ratios[k - 1] if k else None
        base = r.run.commit("base")
        same_baseline = prev is not None and base and prev.run.commit("base") == base
        t = _test(r, prev, prev if same_baseline else None, prior(ratios[max(0, k - PRIOR_RUNS):k]), hib)
        if t is not None and t.p_value <= alpha:
            out.append(t)
    return out


CONFIRM_P = 0.05       # the runs after a pinned-baseline finding must hold the shift at this level
CONFIRM_RUNS = 2       # fewer runs after it than this: the finding is provisional


def confirmed(ratios: list[RunRatios], k: int, lo: int, hi: int, hib: bool = True) -> bool | None:
    """Do the runs after run k (k+1 .. hi-1) hold the shift the test found at k, against
    the runs before it (lo .. k-1), all against one baseline build? A one-sided Welch t-test
    of their in-run changes at CONFIRM_P; None while fewer than CONFIRM_RUNS runs follow.

    Run k itself is left out of both sides: the per-run test picked it for being low, so
    only the runs after it are an independent look. A false alert is one low run and the
    next ones are back at the old level; a real shift stays."""
    after = [r.mean for r in ratios[k + 1:hi]]
    before = [r.mean for r in ratios[lo:k]]
    if len(after) < CONFIRM_RUNS:
        return None
    side = "less" if hib else "greater"
    if len(before) < 2:
        # the first run of the stretch (its own change, tested against 0) or the second:
        # the runs after against that level, with their own spread (one run before has
        # none to give: a t on the after runs' degrees of freedom, its variance added)
        ref = before[0] if before else 0.0
        n, sd = len(after), float(np.std(after, ddof=1))
        if sd == 0:
            return bool((np.mean(after) < ref) == hib)
        t = (np.mean(after) - ref) / (sd * math.sqrt(1 / n + len(before)))
        return bool(sps.t.cdf(t if hib else -t, n - 1) <= CONFIRM_P)
    t = sps.ttest_ind(after, before, equal_var=False, alternative=side)
    return bool(t.pvalue <= CONFIRM_P)


def place(means: list[float], at: int) -> int:
    """The most likely place of one shift of the mean in `means` (the split with the largest
    two-sample |t|), E-Divisive's `at` kept when the series is too short to say."""
    y = np.asarray(means, dtype=float)
    if len(y) < 2 * MIN_SIDE + 1:
        return at
    return MIN_SIDE + int(np.argmax(np.abs(split_t(y))))


SHIFT_PERMUTATIONS = 1999


def shift_p(means: list[float]) -> float:
    """The permutation p-value of the largest two-sample |t| over the splits of `means`
    (as function_series.scan, two-sided): is there one shift of the mean in it at all?
    1.0 when the series is too short to say."""
    y = np.asarray(means, dtype=float)
    if len(y) < 2 * MIN_SIDE + 2 or np.ptp(y) == 0:
        return 1.0
    res = sps.permutation_test((y,), lambda v, axis=-1: np.abs(split_t(np.moveaxis(v, axis, -1))).max(axis=-1),
                               permutation_type="pairings", vectorized=True, n_resamples=SHIFT_PERMUTATIONS,
                               alternative="greater", random_state=np.random.default_rng(20261123))
    return float(res.pvalue)


def refine(means: list[float], cuts: list[int]) -> dict[int, list[int]]:
    """E-Divisive's cuts of a stretch's in-run changes, each placed where one shift of the
    mean between its neighbouring cuts is most likely (place) and kept only if a shift is
    there at all: shift_p of that segment at most ALPHA over the number of cuts (the
    stretch's cuts are one family, Bonferroni; ALPHA: the level of the per-run test of
    the same series). E-Divisive's energy test at 0.05 also cuts at a run of low values
    that no mean shift explains, and tests each segment after a cut again at 0.05.
    Each kept cut -> the places its shift may be at (plausible)."""
    bounds = [0] + cuts + [len(means)]
    placed = [bounds[j] + place(means[bounds[j]:bounds[j + 2]], i - bounds[j]) for j, i in enumerate(cuts)]
    bounds = [0] + placed + [len(means)]
    level = ALPHA / max(1, len(placed))
    return {i: [bounds[j] + k for k in plausible(means[bounds[j]:bounds[j + 2]])] for j, i in enumerate(placed)
            if shift_p(means[bounds[j]:bounds[j + 2]]) <= level}


LOCATION_LR = 3.84     # chi-square(1), 95%: how much less likely a place of the shift may be


def plausible(means: list[float]) -> list[int]:
    """The places (index of the first value after) of one shift of the mean in `means`
    whose likelihood is within LOCATION_LR (twice the log) of the most likely one: the 95%
    likelihood interval of the shift's place, from the first such place to the last
    (normal values, one variance; 2 log LR of a split = n log(1 + t^2 / (n - 2)))."""
    y = np.asarray(means, dtype=float)
    if len(y) < 2 * MIN_SIDE + 1:
        return []
    ll = len(y) * np.log1p(split_t(y) ** 2 / (len(y) - 2))
    ok = np.flatnonzero(ll.max() - ll <= LOCATION_LR)
    return list(range(MIN_SIDE + int(ok.min()), MIN_SIDE + int(ok.max()) + 1))
