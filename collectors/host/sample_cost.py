"""What one perf sample costs the server on this host, and the sampling rate it allows.

A run that profiles in its paired windows measures perf's cost in the run itself (perf on in
a share of the ABBA blocks: analysis/compare/profiler_cost.py). Divided by the rate, that is the
cost of one sample: the CPU the server loses per cpu-clock sample (the timer interrupt, the
frame-pointer walk, the ring buffer). Each finished run whose server was the bottleneck adds
its figure, its standard error, its case and its size to `sample_cost.json` among the host's
records (per host: CPU model, CPUs, memory). A run whose server waited for the client loses no throughput
to perf whatever perf costs, so it would teach the next run that sampling is free: it adds
nothing.

A run that decides (and a --reps or --precision run) samples at the lowest of RATES that
gives its function rows their targets (collectors/runner/targets.py), but none whose
predicted cost, rate x cost per sample, passes PERTURBATION (5% of the server's CPU); a
--quick run, and separate profile reps, at the highest whose predicted cost stays at or
under BUDGET (1%). The cost per sample is taken at a one-sided 90% upper bound of what the
NEXT run will cost, not of the mean cost, so a prediction is a bound that about one run in
ten exceeds, not a cap on what a run costs (a run at 1999 Hz predicted under 5% measured
5.1% [4.4, 6.2]): the run measures what perf took and the report prints it.

- Why not the mean. Pooling the runs by inverse variance alone (fixed effect) bounds one
  common cost, as if every run measured the same thing; many runs then narrow it to the
  mean of whatever the host ran. On this project's KVM guest the runs do not share one
  cost: MGET of 100 keys at pipeline 16 pooled to 39 +- 7 µs a sample over six runs, MSET
  of 50 keys to 3 +- 4 over seven, a spread between cases no run's standard error holds
  (tests/data/sample-cost; docs/statistics.md, "The rate is chosen by it"). Twenty such
  runs had narrowed the common bound to ~19 µs, 499 Hz: 1.9% of the server for MGET.
- The model. Run i measures y_i = c_i + e_i, its error e_i ~ N(0, se_i^2), and the runs'
  own costs c_i ~ N(mu, tau^2) (random effects). tau^2 is DerSimonian and Laird's moment
  estimate, mu the mean weighted by 1 / (se_i^2 + tau^2) with SE(mu)^2 = 1 / sum of the
  weights, and the next run's cost is mu + z * sqrt(SE(mu)^2 + tau^2), z = UPPER_Z. With
  tau^2 = 0 (the runs agree within their errors) it is the fixed-effect bound.
- The starting cost. Before this host has measured anything, the cost is START_US +- START_SE, the cost
  measured on this project's 2-core KVM guest with profile windows (docs/statistics.md,
  "Profiler overhead": 999 Hz took ~3.7% of the server, 99 Hz ~0.4%); it stays one more
  measurement in every pool, so one run's noisy low figure cannot send the rate to 999 Hz.
- Negative costs. Noise makes some runs measure perf as free or better; they are kept as
  measured: clipping them at 0 would bias mu and tau^2 upwards.
- Per case and size. The pool is the runs of the case at the run's size on this host when
  it has MIN_CASE_RUNS of them (what it costs to sample depends on what the server does
  between samples, and a dataset that fits in cache is another workload: the case's name
  alone pooled the demo's small size with its default one), else all of the host's runs,
  whose tau^2 then carries the spread between cases. Entries written before the size was
  stored join the host's pool only; entries written before the case was stored name it in
  their run id (<date>-<time>-<case>). The store keeps a case's last MAX_KEPT runs at each
  size, and HOST_KEPT of the host's in all.

bench/sample_cost.py (`make bench` figure 11) replays both bounds on recorded stores.

    {"schema": 1, "hosts": {"<host key>": [{"run": RUN_ID, "at": ISO, "hz": 249, "estimator": 3,
                                            "case": "mset-50keys", "size": "default",
                                            "overhead": 0.008,
                                            "us_per_sample": 32.1, "se_us": 9.5}, ...]}}
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from analysis.clock import now_iso
from analysis.inputs.host import HostSummary
from analysis.inputs.rundir import write_json
from collectors.variants.builder import records_dir

SCHEMA = 1
MAX_KEPT = 20           # a case's last runs kept per host and size
HOST_KEPT = 100         # and the host's last runs in all
BUDGET = 0.01           # the share of the server's CPU perf may take in a --quick run
# ... in any other: the function rows' targets set the rate (collectors/runner/targets.py), up
# to this perturbation. Both servers are sampled at one rate in the same blocks, so a common
# cost cancels in every ratio; the run measures it, and checks that its perf-on and perf-off
# blocks agree (analysis/compare/profiler_cost.py)
PERTURBATION = 0.05
START_US = 35.0         # the starting cost: one sample's before this host has measured its own
START_SE = 10.0         # how far the starting cost may be off on another host (µs, one standard error)
UPPER_Z = 1.2816        # one-sided 90% upper bound of the next run's cost
# A case's own runs make its pool from 5 on: with the starting cost that is 6 measurements, 5 degrees
# of freedom for tau^2. From fewer, Q can hardly tell a costlier case from noise (tau^2 comes
# out 0 and the bound as narrow as the fixed one); the host's pool is the wider, safer bound.
MIN_CASE_RUNS = 5
# Odd rates near round numbers: not in lockstep with the kernel's 100/250/1000 Hz ticks.
RATES = (1999, 1499, 1249, 999, 799, 599, 499, 399, 299, 249, 199, 149, 99, 49)
CEILING = max(RATES)    # the highest rate perf is run at, whatever a budget would allow
# How the run measured its cost (analysis/compare/profiler_cost.py). 2: each perf-on block
# of a paired rep against the off blocks on both sides. Entries without it were measured
# against the block before alone, which a rep's upward drift biased toward perf being free
# or better (about 1% of throughput on tests/data/runs/mset-aa-paired-small): not pooled.
# 3: the rep's cold first ABBA block left out (its first window ran 11-33% slow as perf
# attached, which read perf as free): entries of 2 are not pooled either.
ESTIMATOR = 3
# what the function rows' rate is for (collectors/runner/targets.py), as the reason says it
_TARGET_TEXT = ("function of 5% of the samples seen to ±10% as a top mover and ±5% as a focus row, "
                "at its family's level")
_STAMP = re.compile(r"^\d{8}-\d{6}-")     # a run id's <date>-<time>- (new_manifest.new_run_id)


@dataclass(frozen=True)
class Pooled:
    """Measured costs pooled with the starting cost by random effects (µs a sample)."""
    mean: float
    se: float          # SE of the mean
    tau: float         # the spread of the runs' own costs around it (0: they agree)

    @property
    def bound(self) -> float:
        """One-sided 90% upper bound of the next run's cost."""
        return self.mean + UPPER_Z * math.sqrt(self.se ** 2 + self.tau ** 2)


def pool(pairs: Sequence[tuple[float, float]], random: bool = True) -> Pooled:
    """(µs, se) measurements and the starting cost pooled. random=False: the fixed-effect pool (tau 0),
    the bound on a common mean this module used before (bench/sample_cost.py compares)."""
    ys = [float(y) for y, _ in pairs] + [START_US]
    vs = [float(s) ** 2 for _, s in pairs] + [START_SE ** 2]
    w = [1.0 / v for v in vs]
    mean = sum(wi * y for wi, y in zip(w, ys)) / sum(w)
    tau2 = 0.0
    if random and len(ys) > 1:
        # DerSimonian-Laird: Q's excess over its degrees of freedom, scaled to a variance
        q = sum(wi * (y - mean) ** 2 for wi, y in zip(w, ys))
        c = sum(w) - sum(wi * wi for wi in w) / sum(w)
        tau2 = max(0.0, (q - (len(ys) - 1)) / c)
        w = [1.0 / (v + tau2) for v in vs]
        mean = sum(wi * y for wi, y in zip(w, ys)) / sum(w)
    return Pooled(mean, 1.0 / math.sqrt(sum(w)), math.sqrt(tau2))


@dataclass(frozen=True)
class Rate:
    """A chosen rate and why."""
    hz: int
    us_per_sample: float     # the upper bound the rate was chosen by
    runs: int                # measured runs pooled with the starting cost (0: it alone)
    case: str | None = None  # the case whose own runs were pooled; None: all of the host's
    tau: float = 0.0         # the pool's spread between runs (µs a sample)
    budget: float = BUDGET   # the share of the server's CPU the rate may cost
    need_hz: float | None = None   # what the function rows' targets ask (None: not asked)
    size: str | None = None  # the size of the case's runs pooled

    @property
    def predicted(self) -> float:
        """The share of the server's CPU the rate is predicted to cost: a 90% upper bound of the
        next run's cost, not a cap (about one run in ten costs more)."""
        return self.hz * self.us_per_sample * 1e-6

    def why(self) -> str:
        cost = (f"{self.predicted:.2%} of the server's CPU predicted ({self.us_per_sample:.1f} µs a "
                f"sample, {self._source()}; a bound that about one run in ten exceeds, not a cap: "
                f"the report measures what perf took)")
        if self.need_hz is None:
            return (f"perf at {self.hz} Hz: the highest rate whose predicted cost stays at or under "
                    f"{self.budget:.0%} of the server's CPU: {cost}")
        if self.hz >= self.need_hz:
            return (f"perf at {self.hz} Hz: the function rows' targets ask {self.need_hz:.0f} Hz (a "
                    f"{_TARGET_TEXT}); {cost}; the {self.budget:.0%} budget is on that prediction")
        asks = (f"ask {self.need_hz:.0f} Hz" if math.isfinite(self.need_hz)
                else "ask more than any rate gives in the planned reps")
        if self.need_hz > CEILING:
            # the ceiling binds whatever the budget: say it first, then the budget if it binds too
            budget = (f"; the {self.budget:.0%} budget of the server's CPU holds it to {self.hz} Hz"
                      if self.hz < CEILING else "")
            return (f"perf at {self.hz} Hz: the function rows' targets {asks} (a {_TARGET_TEXT}), "
                    f"above {CEILING} Hz, the highest rate perf is run at{budget}: {cost}; the "
                    "targets out of reach are named below, and each row says what it could see")
        return (f"perf at {self.hz} Hz: the function rows' targets {asks} (a {_TARGET_TEXT}), more "
                f"than a {self.budget:.0%} budget of the server's CPU allows: {cost}; each row says "
                "what it could see")

    def _source(self) -> str:
        if not self.runs:
            src = "90% upper bound of the starting cost, this host has measured none yet"
        else:
            at = f" at size {self.size}" if self.size else ""
            whose = (f"{self.runs} run(s) of {self.case}{at} on this host" if self.case else
                     f"all {self.runs} run(s) measured on this host")
            src = (f"90% upper bound of the next run's cost from {whose} and the starting cost, "
                   f"{self.tau:.1f} µs spread between runs")
        return src


def store_path() -> Path:
    """sample_cost.json among the host's records (collectors.variants.builder.records_dir)."""
    return records_dir() / "sample_cost.json"


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"schema": SCHEMA, "hosts": {}}
    return doc if isinstance(doc, dict) and isinstance(doc.get("hosts"), dict) else \
        {"schema": SCHEMA, "hosts": {}}


def host_entries(host: HostSummary, path: Path | None = None) -> list[dict[str, Any]]:
    """The host's usable entries measured by this ESTIMATOR, oldest first."""
    entries = usable(_load(path or store_path())["hosts"].get(host.key(), []))
    return [e for e in entries if e.get("estimator") == ESTIMATOR]


def usable(entries: Any) -> list[dict[str, Any]]:
    """The entries with a measured cost and a positive standard error."""
    return [e for e in entries if isinstance(e, dict) and _number(e.get("us_per_sample"))
            and _number(e.get("se_us")) and e["se_us"] > 0] if isinstance(entries, list) else []


def entry_case(entry: dict[str, Any]) -> str:
    """The entry's case, as a run id spells it (`/` and `@` as `_`): an entry written before
    the case was stored names it only in its run id."""
    case = entry.get("case")
    if isinstance(case, str) and case:
        return _as_in_run_id(case)
    return _STAMP.sub("", str(entry.get("run", "")))


def _as_in_run_id(case: str) -> str:
    return case.replace("/", "_").replace("@", "_")


def pick(entries: list[dict[str, Any]], case: str | None, min_runs: int = MIN_CASE_RUNS,
         size: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """(the entries to pool, the case they are of or None): the case's own at `size` from
    min_runs of them on, else all of them. An entry without a size (stored before sizes
    were) is no case's own where a size is asked."""
    if case:
        own = [e for e in entries if entry_case(e) == _as_in_run_id(case)
               and (size is None or e.get("size") == size)]
        if len(own) >= min_runs:
            return own, case
    return entries, None


def rate_for(us: float, budget: float = BUDGET) -> int:
    """The highest of RATES whose cost at `us` a sample stays within `budget`."""
    fits = [r for r in RATES if r * us * 1e-6 <= budget]
    return max(fits) if fits else min(RATES)


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def choose(host: HostSummary, path: Path | None = None, case: str | None = None,
           need_hz: float | None = None, budget: float | None = None, size: str | None = None
           ) -> Rate:
    """need_hz None (a --quick run): the highest of RATES that the next run's cost per sample
    keeps within BUDGET. Else the lowest of RATES at or above need_hz, but none whose cost
    passes `budget` (default PERTURBATION), and never below what BUDGET allows anyway. The
    pool: the case's runs at `size` (pick)."""
    used, whose = pick(host_entries(host, path), case, size=size)
    p = pool([(float(e["us_per_sample"]), float(e["se_us"])) for e in used])
    at = size if whose else None
    if need_hz is None:
        return Rate(rate_for(p.bound), p.bound, len(used), whose, p.tau, size=at)
    budget = PERTURBATION if budget is None else budget
    cap, floor = rate_for(p.bound, budget), rate_for(p.bound)
    enough = min((r for r in RATES if r >= need_hz), default=max(RATES))
    return Rate(max(floor, min(enough, cap)), p.bound, len(used), whose, p.tau, budget, need_hz, at)


def record(host: HostSummary, run_id: str, hz: int, overhead: float, se: float,
           path: Path | None = None, case: str | None = None, size: str | None = None) -> bool:
    """Keep one run's measured cost: overhead, the share of the server's throughput perf took
    (the negative of the on/off change; noise can make it negative, kept as measured so the
    pooled mean stays unbiased), its standard error, the run's case and size. Only for a run
    whose server was the bottleneck (the caller checks)."""
    if hz <= 0 or not (_number(overhead) and _number(se)) or se <= 0:
        return False
    path = path or store_path()
    doc = _load(path)
    entries = doc["hosts"].setdefault(host.key(), [])
    entry = {"run": run_id, "at": now_iso(), "hz": hz, "estimator": ESTIMATOR}
    if case:
        entry["case"] = case
    if size:
        entry["size"] = size
    entry.update({"overhead": round(overhead, 6), "us_per_sample": round(overhead / hz * 1e6, 3),
                  "se_us": round(se / hz * 1e6, 3)})
    entries.append(entry)
    # per case and size: a host that runs many keeps enough of each to pool them alone
    same = (entry_case(entry), entry.get("size"))
    mine = [i for i, e in enumerate(entries) if isinstance(e, dict)
            and (entry_case(e), e.get("size")) == same]
    for i in reversed(mine[:-MAX_KEPT]):
        del entries[i]
    del entries[:-HOST_KEPT]
    write_json(path, doc)         # atomic: a reader sees the old file or the new one
    return True
