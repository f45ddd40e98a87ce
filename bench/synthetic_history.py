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

The profile reps are not modelled: each run's three profile reps per side are drawn (with
replacement) from the 16 real profile reps of one build in tests/data/runs/mset-aa-default
(an A/A run of the demo case: every function's flat CPU time per MSET in each rep, read as
`stallscope compare` reads them, analysis.compare.profile_reps), so every function's
spread between server starts, and how functions move together within a rep, are the
recorded ones (dictFindByHash: 35% of the CPU, its cost per op spread by 18% between reps;
je_free 4%, 24%). A rep's costs are scaled by the run's level (exp(-L_k): a slower night
costs more per operation). A shift of the throughput by `size` caused by function f is
f's cost growing by what makes the rep's whole CPU per op grow by 1/(1 + size) - 1: a
function holding share s of the CPU that grows by x moves throughput by about s·x, so a
2% shift is +6% of dictFindByHash or +49% of je_free.

`baseline` is the schedule's policy: "pinned" (every run against the same build, which
carries no shift) or "previous" (each run against the previous run's candidate, the first
against its parent).
"""
from __future__ import annotations

import datetime as dt
import functools
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from analysis import stats
from analysis.compare.results import SCHEMA, FunctionRow, MetricRow, ProfileSection
from analysis.compare.values import ChangeOut, Side

REPS = 5               # a schedule job's default `reps`
PAIRS = 32             # window pairs per paired rep: the runner's default 64 windows
PAIR_SD = 0.134        # one window pair's log ratio, within a rep (QUIET)
PROFILE_REPS = 3       # a run's profile reps per side (the default --profile-reps)
RECORDED = Path(__file__).resolve().parents[1] / "tests" / "data" / "runs" / "mset-aa-default"
# The recording's focus functions that have samples (its case's list), and its top
# functions: every other function with at least TOP_SHARE of the CPU (the movers a run
# of it shows); the bench shifts one of those holding at least 1%.
FUNCTIONS = ("dictFindByHash", "lookupKey", "msetGenericCommand", "dictFind")
TOP_SHARE = 0.005


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
    function: str = "dictFindByHash"   # whose CPU per op moves with it (a recorded function)


@dataclass
class JobHistory:
    job: str
    runs: list[dict] = field(default_factory=list)      # results.json dicts, oldest first
    shifts: list[Shift] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)    # the candidate's commit of each run


def _side(vals: list[float]) -> Side:
    return Side.of(stats.summarize(vals), list(range(1, len(vals) + 1)))


def _effect(shifts: list[Shift], run: int) -> float:
    """Log rate of the build measured as candidate at `run` (before run 0: 0)."""
    return sum(math.log1p(s.size) for s in shifts if run >= s.run)


def _paired_row(job: str, base: list[float], cand: list[float]) -> dict:
    ch = stats.compare(base, cand, paired=True)
    return asdict(MetricRow(job, "paired throughput", "ops/s", True, Side.of(ch.base, list(range(1, len(base) + 1))),
                            Side.of(ch.cand, list(range(1, len(cand) + 1))), ChangeOut.of(ch, "ops/s")))


@functools.lru_cache(maxsize=1)
def recorded_reps() -> tuple[tuple[float, dict[str, float]], ...]:
    """Each recorded profile rep's whole CPU time per operation and its functions' flat CPU
    time per operation (ns/op), as `stallscope compare` reads them (module docstring)."""
    from analysis.compare import profile_reps
    from analysis.inputs.rundir import load_run
    from analysis.profile.stacks import function_costs
    run = load_run(RECORDED)
    out = []
    for reps in profile_reps.load(run, tuple(run.manifest.variants)).values():
        for r in reps:
            ops = r.ops.ops
            out.append((r.stacks.total / ops, {f: c.flat / ops for f, c in function_costs(r.stacks).items()}))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def shares() -> dict[str, float]:
    """Each recorded function's share of the CPU (flat, over the 16 reps), largest first."""
    reps = recorded_reps()
    whole = sum(t for t, _ in reps)
    out: dict[str, float] = {}
    for _, costs in reps:
        for f, c in costs.items():
            out[f] = out.get(f, 0.0) + c / whole
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def top_functions() -> tuple[str, ...]:
    """The run's top functions besides the focus ones (TOP_SHARE of the CPU or more)."""
    return tuple(f for f, s in shares().items() if s >= TOP_SHARE and f not in FUNCTIONS)


def _rep(rng: random.Random, shifts: list[Shift], run: int, level: float) -> tuple[float, dict[str, float]]:
    """One profile rep of the build measured as candidate at `run`: a recorded rep at the
    night's level, the shifted functions paying what each shift costs the whole."""
    whole, costs = rng.choice(recorded_reps())
    scale = math.exp(-level)
    whole *= scale
    out = {f: costs.get(f, 0.0) * scale for f in FUNCTIONS + top_functions()}
    for s in shifts:
        if run >= s.run:
            add = whole * (1 / (1 + s.size) - 1)
            out[s.function] = out.get(s.function, 0.0) + add
            whole += add
    return whole, out


def _change(base: list[float], cand: list[float], unit: str) -> ChangeOut:
    """The in-run change of a profile row: its size only (no interval, no verdict). A real
    run judges the functions in families (analysis/compare/families.py); the history's
    detectors do not read these verdicts, and judging 50 rows a run would be most of the
    bench's time."""
    b, c = sorted(base)[len(base) // 2], sorted(cand)[len(cand) // 2]
    return ChangeOut(c - b, c / b - 1 if b > 0 else None, None, None, None, None, None, "", "", "", unit)


def _function_row(f: str, base: list, cand: list) -> FunctionRow:
    """A profile table row as results.json has it: flat CPU per op (ns) and flat share (%).
    Only flat costs are modelled: the cumulative share the model requires is given as the
    flat one (the history keeps it as cum_share:, which no detector reads)."""
    ns = [[c.get(f, 0.0) for _, c in reps] for reps in (base, cand)]
    pct = [[100 * c.get(f, 0.0) / w for w, c in reps] for reps in (base, cand)]
    share = _side(pct[0]), _side(pct[1]), _change(*pct, "pp")
    return FunctionRow(f, "all", *share, *share, base_flat_ns=_side(ns[0]), cand_flat_ns=_side(ns[1]),
                       flat_ns_change=_change(*ns, "ns/op"))


def _profile(rng: random.Random, shifts: list[Shift], base_run: int, cand_run: int, level: float) -> dict:
    """The profile section of one run: PROFILE_REPS reps per side (each its own server start)."""
    base = [_rep(rng, shifts, base_run, level) for _ in range(PROFILE_REPS)]
    cand = [_rep(rng, shifts, cand_run, level) for _ in range(PROFILE_REPS)]
    whole = [[w for w, _ in reps] for reps in (base, cand)]
    total = MetricRow("all samples", "CPU time per operation", "ns/op", False, _side(whole[0]),
                      _side(whole[1]), _change(*whole, "ns/op"))
    return asdict(ProfileSection(True, weight_unit="nanoseconds", per_op=True, per_op_total=total,
                                 focus=[_function_row(f, base, cand) for f in FUNCTIONS],
                                 movers=[_function_row(f, base, cand) for f in top_functions()]))


def make_job(job: str, days: int, shifts: list[Shift], *, seed: int = 0, reps: int = REPS,
             pairs: int = PAIRS, noise: Noise = QUIET, baseline: str = "pinned",
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
            "profile": _profile(rng, shifts, prev, day, run_level),
            "environment": {"variants": {"base": {"commit": base_commit}, "cand": {"commit": commit}}},
        })
        if baseline == "previous":
            base_commit = commit
    return h
