"""What one perf sample costs the server on this host, and the sampling rate it allows.

A run that profiles in its paired windows measures perf's cost in the run itself (perf on in
every other ABBA block: analysis/compare/profiler_cost.py). Divided by the rate, that is the
cost of one sample: the CPU the server loses per cpu-clock sample (the timer interrupt, the
frame-pointer walk, the ring buffer). Each finished run whose server was the bottleneck adds
its figure and its standard error to `sample_cost.json` in the build cache (per host: CPU
model, CPUs, memory). A run whose server waited for the client loses no throughput to perf
whatever perf costs, so it would teach the next run that sampling is free: it adds nothing.

The next run's rate is the highest of RATES whose predicted cost, rate x cost per sample,
stays at or under BUDGET (1% of the server's CPU), with the cost per sample taken at the
one-sided 90% upper bound of the kept runs pooled by inverse variance (with the seed as one
more measurement of SEED_SE): one run's noisy low figure cannot send the rate to 999 Hz,
and many runs narrow the bound to the host's real cost. Before this host has measured
anything, the seed is SEED_US, the cost measured on this project's 2-core KVM guest with
profile windows (docs/statistics.md, "Profiler overhead": 999 Hz took ~3.7% of the server,
99 Hz ~0.4%).

    {"schema": 1, "hosts": {"<host key>": [{"run": RUN_ID, "at": ISO, "hz": 249,
                                            "overhead": 0.008, "us_per_sample": 32.1,
                                            "se_us": 9.5}, ...]}}
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.clock import now_iso
from analysis.inputs.host import HostSummary
from analysis.inputs.rundir import write_json
from collectors.variants.builder import cache_dir

SCHEMA = 1
MAX_KEPT = 20
BUDGET = 0.01           # the share of the server's CPU perf may take
SEED_US = 35.0          # cost of one sample before this host has measured its own
SEED_SE = 10.0          # how far the seed may be off on another host (µs, one standard error)
UPPER_Z = 1.2816        # one-sided 90% upper bound of the pooled cost
# Odd rates near round numbers: not in lockstep with the kernel's 100/250/1000 Hz ticks.
RATES = (999, 799, 599, 499, 399, 299, 249, 199, 149, 99, 49)


@dataclass(frozen=True)
class Rate:
    """A chosen rate and why."""
    hz: int
    us_per_sample: float     # the upper bound the rate was chosen by
    runs: int                # measured runs pooled with the seed (0: the seed alone)

    @property
    def predicted(self) -> float:
        """The share of the server's CPU the rate should cost."""
        return self.hz * self.us_per_sample * 1e-6

    def why(self) -> str:
        src = (f"90% upper bound of {self.runs} run(s) measured on this host and the seed"
               if self.runs else "90% upper bound of the seed, this host has measured none yet")
        return (f"perf at {self.hz} Hz: the highest rate whose predicted cost stays at or under "
                f"{BUDGET:.0%} of the server's CPU ({self.us_per_sample:.1f} µs a sample, {src}: "
                f"{self.predicted:.2%})")


def store_path() -> Path:
    return cache_dir() / "sample_cost.json"


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"schema": SCHEMA, "hosts": {}}
    return doc if isinstance(doc, dict) and isinstance(doc.get("hosts"), dict) else \
        {"schema": SCHEMA, "hosts": {}}


def lookup(host: HostSummary, path: Path | None = None) -> tuple[float, int]:
    """(µs per sample at its 90% upper bound, runs pooled); the runs are weighted by inverse
    variance together with the seed, so the seed's weight fades as the host measures."""
    entries = _load(path or store_path())["hosts"].get(host.key(), [])
    pairs = [(float(e["us_per_sample"]), float(e["se_us"])) for e in entries
             if isinstance(e, dict) and _number(e.get("us_per_sample"))
             and _number(e.get("se_us")) and e["se_us"] > 0]
    pairs.append((SEED_US, SEED_SE))
    weights = [1.0 / se ** 2 for _, se in pairs]
    mean = sum(w * us for w, (us, _) in zip(weights, pairs)) / sum(weights)
    return mean + UPPER_Z / math.sqrt(sum(weights)), len(pairs) - 1


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def choose(host: HostSummary, path: Path | None = None) -> Rate:
    """The highest of RATES that the host's cost per sample keeps within BUDGET."""
    us, runs = lookup(host, path)
    fits = [r for r in RATES if r * us * 1e-6 <= BUDGET]
    return Rate(max(fits) if fits else min(RATES), us, runs)


def record(host: HostSummary, run_id: str, hz: int, overhead: float, se: float,
           path: Path | None = None) -> bool:
    """Keep one run's measured cost: overhead, the share of the server's throughput perf took
    (the negative of the on/off change; noise can make it negative, kept as measured so the
    pooled mean stays unbiased), and its standard error. Only for a run whose server was the
    bottleneck (the caller checks)."""
    if hz <= 0 or not (_number(overhead) and _number(se)) or se <= 0:
        return False
    path = path or store_path()
    doc = _load(path)
    entries = doc["hosts"].setdefault(host.key(), [])
    entries.append({"run": run_id, "at": now_iso(), "hz": hz, "overhead": round(overhead, 6),
                    "us_per_sample": round(overhead / hz * 1e6, 3),
                    "se_us": round(se / hz * 1e6, 3)})
    del entries[:-MAX_KEPT]
    write_json(path, doc)         # atomic: a reader sees the old file or the new one
    return True
