"""Each function's cost per operation as a series of its own (docs/history.md, "Function
series"): where one function's cost rose across a job's runs, tested together over every
function the job's runs stored (the focus functions and each run's top functions).

A function that holds share s of the CPU and grows by x moves throughput by about s·x:
a 2% regression of a function holding 5% of the CPU is that function growing by 40%,
which its own series shows long before the throughput's noise lets a 2% shift through
(FBDetect, SOSP'24). So, per function:

- the values: per run, the log of the candidate's mean flat share of the CPU over its
  profile reps (`flat_share:FN`). The share is the function's CPU time per operation over
  the whole profile's: a night on which the machine is slower moves every function's cost
  per operation together (the run level, ~5% between runs), and that cancels in the share.
  The finding's size is then given in CPU time per operation (`cpu_per_op:FN`);
- the test: one-sided, for a rise: the largest two-sample t over every split of the runs
  (at least MIN_SIDE each side), its p-value by permuting the runs' order
  (scipy.stats.permutation_test, PERMUTATIONS resamples, seeded): a change point test
  whose null needs no model of the noise (a function with few samples is far from normal);
- many series: Holm's step-down rule over the job's function series at Q (the rule of
  the report's function tables, analysis/compare/multiplicity.py). Under Benjamini-Hochberg
  (this module's rule before) each true rise loosened the level for every other series
  (Q * (R + 1) / series after R rises), so one real shift let other functions' noise
  through, and its bound on any false finding held only for jobs where nothing rose.
  Holm holds the chance of any false function finding in the job at Q whatever else
  rose, and its first step is BH's (Q / series), so the first rise is found alike;
- a series that shifted is split there and each side tested again (binary segmentation)
  at the level Holm granted the last series it called (Q / (series - called + 1)), while
  a side has 2 * MIN_SIDE + 2 runs.

The finding is placed at the first run after the split that maximises t (the maximum
likelihood place of one mean shift). Only runs before a function's series start or after
it ends are unknown to it: a top function missing from some runs' tables is tested over
the runs that have it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from analysis import stats
from analysis.compare.multiplicity import adjusted_p

PREFIX = "flat_share:"
Q = 0.05               # the chance of any false function finding in a job (Holm)
RULE = "holm"
PERMUTATIONS = 1999    # the smallest p-value is 1/2000: below Q / 40 series
MIN_SIDE = 2           # runs on each side of a split
MIN_RUNS = 6           # fewer runs: no test (as E-Divisive, edivisive.MIN_RUNS)
SEED = 20261123


@dataclass(frozen=True)
class FunctionShift:
    function: str
    at: int                      # index in the series' runs of the first run after the rise
    runs: list                   # the series' runs (StoredRun), oldest first
    p_value: float               # the permutation test's, before the correction
    level: float                 # the level Holm granted (Q / (series - called + 1))
    share_before: float          # the function's share of the CPU (%), median of the runs
    share_after: float
    shift: float | None          # its CPU time per operation, ratio - 1 after vs before
    low: float | None
    high: float | None

    @property
    def implied(self) -> float | None:
        """What the rise costs the throughput, about: -share * growth."""
        if self.shift is None:
            return None
        return -self.share_before / 100 * self.shift


def max_t(y: np.ndarray, axis: int = -1) -> np.ndarray:
    """The largest one-sided two-sample t (after minus before, pooled variance) over every
    split of y along `axis` with at least MIN_SIDE values each side."""
    y = np.moveaxis(np.asarray(y, dtype=float), axis, -1)
    return split_t(y).max(axis=-1)


def split_t(y: np.ndarray) -> np.ndarray:
    """t of each split k = MIN_SIDE .. n - MIN_SIDE (after = y[k:]), on the last axis."""
    n = y.shape[-1]
    k = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
    c1, c2 = np.cumsum(y, axis=-1), np.cumsum(y * y, axis=-1)
    left, left2 = c1[..., k - 1], c2[..., k - 1]
    right, right2 = c1[..., -1:] - left, c2[..., -1:] - left2
    ss = (left2 - left ** 2 / k) + (right2 - right ** 2 / (n - k))
    sd = np.sqrt(np.maximum(ss, 0) / (n - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (right / (n - k) - left / k) / (sd * np.sqrt(1 / k + 1 / (n - k)))
    return np.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0)


def scan(y: list[float]) -> tuple[int, float]:
    """(index of the first value after the most likely rise, its permutation p-value)."""
    arr = np.asarray(y, dtype=float)
    if len(arr) < 2 * MIN_SIDE + 2 or np.ptp(arr) == 0:
        return 0, 1.0
    at = MIN_SIDE + int(np.argmax(split_t(arr)))
    res = sps.permutation_test((arr,), max_t, permutation_type="pairings", vectorized=True,
                               n_resamples=PERMUTATIONS, alternative="greater",
                               random_state=np.random.default_rng(SEED))
    return at, float(res.pvalue)


def _values(pts: list) -> tuple[list, list[float]]:
    """The runs with a positive mean share, and the log of that mean."""
    runs, y = [], []
    for run, p in pts:
        vals = [v for v in (p.get("values") or [p["value"]]) if v is not None]
        mean = sum(vals) / len(vals) if vals else 0.0
        if mean > 0:
            runs.append(run)
            y.append(math.log(mean))
    return runs, y


def _segments(y: list[float], lo: int, hi: int, level: float, depth: int = 0) -> list[tuple[int, float]]:
    """Binary segmentation of y[lo:hi] at `level`: (index of each rise, its p-value)."""
    if hi - lo < 2 * MIN_SIDE + 2 or depth > 3:
        return []
    at, p = scan(y[lo:hi])
    if p > level:
        return []
    return (_segments(y, lo, lo + at, level, depth + 1) + [(lo + at, p)]
            + _segments(y, lo + at, hi, level, depth + 1))


def _finding(fn: str, runs: list, at: int, p: float, level: float, shares: list[float],
             cost: dict[int, float]) -> FunctionShift:
    before = [cost[r.id] for r in runs[:at] if r.id in cost]
    after = [cost[r.id] for r in runs[at:] if r.id in cost]
    rel = low = high = None
    if len(before) >= 2 and len(after) >= 2:
        ch = stats.compare(before, after, higher_is_better=False)
        rel, low, high = ch.rel, ch.rel_ci_low, ch.rel_ci_high
    return FunctionShift(fn, at, runs, p, level, float(np.median(shares[:at])), float(np.median(shares[at:])),
                         rel, low, high)


def detect(series: dict[str, list]) -> tuple[list[FunctionShift], int]:
    """The rises of the job's function series (series: the candidate's, as
    HistoryStore.series gives them), and how many series were tested together."""
    tested = {}
    for name, pts in series.items():
        if not name.startswith(PREFIX):
            continue
        runs, y = _values(pts)
        if len(y) >= MIN_RUNS:
            tested[name[len(PREFIX):]] = (runs, y, scan(y))
    if not tested:
        return [], 0
    names = sorted(tested)
    raw = np.array([tested[f][2][1] for f in names])
    rejected = [f for f, a in zip(names, adjusted_p(raw, RULE)) if a <= Q]
    # the level Holm called the last of them at: its step, Q / (series - called + 1)
    level = Q / (len(names) - len(rejected) + 1) if rejected else 0.0
    out = []
    for f in rejected:
        runs, y, _ = tested[f]
        cost = {r.id: p["value"] for r, p in series.get(f"cpu_per_op:{f}", [])}
        shares = [math.exp(v) for v in y]
        for at, p in _segments(y, 0, len(y), level):
            out.append(_finding(f, runs, at, p, level, shares, cost))
    return out, len(names)
