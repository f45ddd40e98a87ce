"""Realistic synthetic history, for the detector's precision/recall and the store's speed
(bench/history.py) and for tests: the nightly runs of a job whose results.json has the
shape `stallscope compare` writes for a paired run (the paired throughput row with its
reps and its in-run change, CPU per operation of focus functions), with shifts of known
size injected at known runs.

A run is `reps` paired reps; rep i of run k (logs of the geometric-mean window rates):

    base_i = log(base_ops) + L_k + l_i + b_k
    cand_i = base_i + (c_k - b_k) + e_i

L_k ~ N(0, run_level_sd) is the run's level, l_i ~ N(0, rep_level_sd) the rep's (both
servers share it: they run at once), c_k and b_k the injected shifts the candidate and the
baseline build carry, e_i ~ N(0, rep_sd) the rep's own noise of the ratio. The run's
in-run change is `analysis.stats.compare(base, cand, paired=True)` on the reps, as a real
run computes it; the stored series value is the candidate's median rep.

The numbers, read off the paired runs recorded on the project's 2-core VM
(tests/data/runs/*/paired/*/paired.json through analysis.compare.throughput.paired_units
and analysis.compare.pair_clusters, MSET of 50 keys over 10M keys, 0.25 s windows):

- rep_sd = sqrt(start_sd^2 + pair_sd^2 / pairs), the sd of one rep's log ratio:
  noise-paired-12reps-16pairs has 0.0345, noise-paired-8reps-48pairs 0.0232 (the same
  evening); the sd of one window pair's log ratio within a rep is 0.128 and 0.137 there
  (pooled: PAIR_SD 0.134), which leaves 0.0127 and 0.0122 between server starts (each
  run's rep_sd^2 less its own pairs' share; 0.0125 their mean, as docs/statistics.md
  "Where the noise comes from" has them). A scheduled rep has 32 pairs (64 windows, the
  runner's default): rep_sd 0.0268 on that evening (QUIET). mset-demo-paired, another day,
  5 reps of 32 pairs: rep_sd 0.0621, pair sd 0.155, so 0.0558 between starts (NOISY).
- rep_level_sd 0.061: the sd of a rep's log base rate within a run, pooled over those
  three runs (0.073, 0.046, 0.049; 22 df): each server start lands at its own level.
- run_level_sd 0.047: the three runs of that evening (noise-paired-1rep-640pairs too)
  had mean log base rates 8.673, 8.582, 8.693, spread by 0.059, of which their reps'
  own spread explains 0.035: the rest is the run's. Three runs: a rough number (2 df).
  With them, a run's median rep moves by ~6% (sd of its log) between runs of one build.
- cv_cpu 0.04: a focus function's CPU per operation over 3 profile reps in
  tests/data/runs/mset-demo-small-v1 (dictFindByHash 3.6% and 2.9%, lookupKey 3.9% and
  7.9%: the two with the most samples).

`baseline` is the schedule's policy: "pinned" (every run against the same build, which
carries no shift) or "previous" (each run against the previous run's candidate, the first
against its parent).
"""
from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import asdict, dataclass, field

from analysis import stats
from analysis.compare.results import SCHEMA, MetricRow
from analysis.compare.values import ChangeOut, Side

FUNCTIONS = ("dictFindLinkInternal", "lookupKey", "msetGenericCommand", "setKey")
REPS = 5               # a schedule job's default `reps`
PAIRS = 32             # window pairs per paired rep: the runner's default 64 windows
PAIR_SD = 0.134        # one window pair's log ratio, within a rep (QUIET)
CV_CPU = 0.04


@dataclass(frozen=True)
class Noise:
    """One day's noise on the VM (module docstring: where each number comes from)."""
    name: str
    start_sd: float              # a rep's log ratio, between server starts
    pair_sd: float               # one window pair's log ratio, within a rep
    rep_level_sd: float = 0.061  # a rep's log rate, shared by both servers
    run_level_sd: float = 0.047  # a run's log rate

    def rep_sd(self, pairs: int = PAIRS) -> float:
        """The sd of one rep's log ratio with `pairs` window pairs."""
        return math.sqrt(self.start_sd ** 2 + self.pair_sd ** 2 / pairs)


QUIET = Noise("quiet evening (noise-paired-*)", start_sd=0.0125, pair_sd=PAIR_SD)
NOISY = Noise("noisier day (mset-demo-paired)", start_sd=0.0558, pair_sd=0.155)


@dataclass
class Shift:
    run: int                      # index of the first run after the shift
    size: float                   # relative (-0.05: throughput 5% lower; cost 5% higher)
    function: str = "dictFindLinkInternal"   # whose CPU per op moves with it


@dataclass
class JobHistory:
    job: str
    runs: list[dict] = field(default_factory=list)      # results.json dicts, oldest first
    shifts: list[Shift] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)    # the candidate's commit of each run


def _side(vals: list[float]) -> dict:
    return asdict(Side.of(stats.summarize(vals), list(range(1, len(vals) + 1))))


def _effect(shifts: list[Shift], run: int) -> float:
    """Log rate of the build measured as candidate at `run` (before run 0: 0)."""
    return sum(math.log1p(s.size) for s in shifts if run >= s.run)


def _cost(shifts: list[Shift], run: int) -> dict[str, float]:
    """CPU per operation of the focus functions in the candidate build of `run`: the
    shifted function pays all the CPU per op that the throughput change implies."""
    cost = dict(zip(FUNCTIONS, (12000.0, 9000.0, 400.0, 2500.0)))
    total = sum(cost.values())
    for s in shifts:
        if run >= s.run:
            cost[s.function] += total * (1 / (1 + s.size) - 1)
    return cost


def _paired_row(job: str, base: list[float], cand: list[float]) -> dict:
    ch = stats.compare(base, cand, paired=True)
    return asdict(MetricRow(job, "paired throughput", "ops/s", True, Side.of(ch.base, list(range(1, len(base) + 1))),
                            Side.of(ch.cand, list(range(1, len(cand) + 1))), ChangeOut.of(ch, "ops/s")))


def _focus(rng: random.Random, base_cost: dict[str, float], cand_cost: dict[str, float], cv: float) -> list[dict]:
    out = []
    for f in FUNCTIONS:
        cn = [cand_cost[f] * rng.gauss(1.0, cv) for _ in range(3)]
        bn = [base_cost[f] * rng.gauss(1.0, cv) for _ in range(3)]
        out.append({"name": f, "base_flat_ns": _side(bn), "cand_flat_ns": _side(cn),
                    "flat_ns_change": {"rel": _side(cn)["median"] / _side(bn)["median"] - 1, "verdict": ""}})
    return out


def make_job(job: str, days: int, shifts: list[Shift], *, seed: int = 0, reps: int = REPS,
             pairs: int = PAIRS, noise: Noise = QUIET, baseline: str = "pinned", cv_cpu: float = CV_CPU,
             start: dt.datetime | None = None, base_ops: float = 20000.0) -> JobHistory:
    if baseline not in ("pinned", "previous"):
        raise ValueError(f"baseline {baseline!r}: 'pinned' or 'previous'")
    rng = random.Random(seed)
    start = start or dt.datetime(2026, 1, 1, 2, 0, 0)
    h = JobHistory(job, shifts=shifts)
    base_commit = "f" * 40 if baseline == "pinned" else f"{rng.getrandbits(160):040x}"
    for day in range(days):
        # a pinned baseline carries no shift; `previous` is the build the run before measured
        prev = day - 1 if baseline == "previous" else -1
        b_eff, c_eff = _effect(shifts, prev), _effect(shifts, day)
        run_level = rng.gauss(0.0, noise.run_level_sd)
        base, cand = [], []
        for _ in range(reps):
            level = math.log(base_ops) + run_level + rng.gauss(0.0, noise.rep_level_sd) + b_eff
            base.append(math.exp(level))
            cand.append(math.exp(level + c_eff - b_eff + rng.gauss(0.0, noise.rep_sd(pairs))))
        commit = f"{rng.getrandbits(160):040x}"
        h.commits.append(commit)
        created = (start + dt.timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")
        h.runs.append({
            "schema": SCHEMA, "run_id": f"{created[:10].replace('-', '')}-{job}", "created": created,
            "case": {"name": job, "size": "default"}, "base": "base", "cand": "cand",
            "paired": [_paired_row(job, base, cand)],
            "profile": {"focus": _focus(rng, _cost(shifts, prev), _cost(shifts, day), cv_cpu)},
            "environment": {"variants": {"base": {"commit": base_commit}, "cand": {"commit": commit}}},
        })
        if baseline == "previous":
            base_commit = commit
    return h
