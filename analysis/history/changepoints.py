"""Regressions in a job's history, two ways:

(a) in-run: each run compares its candidate with its baseline in the same run (the
    verdicts results.json already carries); a regression there names the commit range
    baseline..candidate at once;
(b) change points: E-Divisive means (signal-processing-algorithms, MongoDB's detector;
    permutation test at p < 0.05) over every series of the candidate's values across
    runs: where the series shifted, not whether one run crossed a line.

Each finding carries the shift with its interval (analysis.stats on the runs before vs
after, log-scale ratio), the commit range, and the movers: the other series (functions'
CPU per operation, TMA nodes, throughput) whose values moved at the same point - the
answer to "what caused it".
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

from analysis import stats
from analysis.history.store import HistoryStore, StoredRun

PVALUE = 0.05
PERMUTATIONS = 100
MIN_RUNS = 6           # fewer runs than this: no change-point detection, in-run verdicts only
MOVER_MIN = 0.03       # a mover's interval excludes 0 and its shift is at least this (3%)
HEADLINE = ("throughput:", "paired:", "cpu_per_op:", "cum_per_op:", "tma:", "p99 latency:")


@dataclass(frozen=True)
class Mover:
    series: str
    shift: float                 # ratio - 1 after vs before (or cand vs base in-run)
    low: float | None
    high: float | None
    verdict: str


@dataclass
class ChangePoint:
    job: str
    series: str
    kind: str                    # "change point" | "in-run"
    first_run: StoredRun         # the first run after the shift (in-run: the run itself)
    last_before: StoredRun | None
    shift: float | None
    shift_low: float | None
    shift_high: float | None
    direction: str               # regression | improvement
    unit: str = ""
    movers: list[Mover] = field(default_factory=list)
    mark: str | None = None
    note: str = ""
    id: int | None = None

    @property
    def commit_range(self) -> tuple[str, str]:
        if self.kind == "in-run":
            return (self.first_run.commit("base"), self.first_run.commit("cand"))
        return (self.last_before.commit("cand") if self.last_before else "", self.first_run.commit("cand"))


@contextlib.contextmanager
def _seeded(seed: int = 20261123) -> Iterator[None]:
    # The detector permutes with numpy's global generator: fixed, so the same history gives
    # the same change points, and restored, so nobody else's randomness changes.
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def change_indices(values: list[float]) -> list[int]:
    """Indices where a new segment starts (E-Divisive means, p < PVALUE)."""
    if len(values) < MIN_RUNS or len(set(values)) < 2:
        return []
    with _seeded():
        return sorted(int(i) for i in e_divisive(np.asarray(values, dtype=float), pvalue=PVALUE,
                                                   permutations=PERMUTATIONS))


def _shift(before: list[float], after: list[float], hib: bool) -> tuple[float | None, float | None, float | None, str]:
    ch = stats.compare(before, after, higher_is_better=hib, noise=MOVER_MIN)
    return ch.rel, ch.rel_ci_low, ch.rel_ci_high, ch.verdict


def _movers(series: dict, name: str, split_run: int, lo: int, hi: int) -> list[Mover]:
    """Other series whose values moved between runs [lo, split) and [split, hi)."""
    out = []
    for other, pts in series.items():
        if other == name or not other.startswith(HEADLINE):
            continue
        ids = [r.id for r, _ in pts]
        if split_run not in ids:
            continue
        k = ids.index(split_run)
        before = [p["value"] for r, p in pts[:k] if r.id >= lo]
        after = [p["value"] for r, p in pts[k:] if r.id < hi]
        if len(before) < 2 or len(after) < 2:
            continue
        rel, low, high, verdict = _shift(before, after, pts[0][1]["higher_is_better"])
        if rel is not None and low is not None and (low > 0 or high < 0) and abs(rel) >= MOVER_MIN:
            out.append(Mover(other, rel, low, high, verdict))
    return sorted(out, key=lambda m: -abs(m.shift))[:8]


def detect(store: HistoryStore, job: str, series_prefix: tuple[str, ...] = HEADLINE,
           with_in_run: bool = True) -> list[ChangePoint]:
    """Every finding of the job, stored with their movers (marks made earlier attached
    again): each run's in-run regressions (a), then the change points of every series of
    the candidate's values (b)."""
    series = store.series(job, "cand")
    marks = store.marks(job)
    found: list[ChangePoint] = []
    if with_in_run:
        for run in store.runs(job):
            for c in in_run(store, run):
                c.mark, c.note = marks.get((c.series, run.id), (None, ""))
                found.append(c)
    for name, pts in sorted(series.items()):
        if not name.startswith(series_prefix):
            continue
        values = [p["value"] for _, p in pts]
        cuts = change_indices(values)
        bounds = [0] + cuts + [len(values)]
        for j, i in enumerate(cuts):
            before, after = values[bounds[j]:i], values[i:bounds[j + 2]]
            hib = bool(pts[0][1]["higher_is_better"])
            rel, low, high, _ = _shift(before, after, hib)
            if rel is None:
                continue
            worse = (rel < 0) == hib
            first, prev = pts[i][0], pts[i - 1][0]
            hi_id = pts[bounds[j + 2] - 1][0].id + 1
            cp = ChangePoint(job, name, "change point", first, prev, rel, low, high,
                             "regression" if worse else "improvement", pts[0][1]["unit"],
                             _movers(series, name, first.id, pts[bounds[j]][0].id, hi_id))
            cp.mark, cp.note = marks.get((name, first.id), (None, ""))
            found.append(cp)
    store.save_change_points(job, found)
    return found


def in_run(store: HistoryStore, run: StoredRun) -> list[ChangePoint]:
    """The run's own regressions (candidate vs baseline in the same run), with the focus
    functions' in-run CPU-per-operation moves as movers."""
    changes = store.changes(run.id)
    movers = [Mover(c["series"], c["rel"], c["rel_low"], c["rel_high"], c["verdict"])
              for c in changes if c["series"].startswith(("cpu_per_op:", "cum_per_op:", "tma:"))
              and c["verdict"] in ("regression", "improvement") and c["rel"] is not None]
    movers.sort(key=lambda m: -abs(m.shift))
    out = []
    for c in changes:
        if c["verdict"] != "regression" or not c["series"].startswith(("throughput:", "paired:", "p99 latency:")):
            continue
        out.append(ChangePoint(run.job, c["series"], "in-run", run, None, c["rel"], c["rel_low"],
                               c["rel_high"], "regression", movers=movers[:8]))
    return out
