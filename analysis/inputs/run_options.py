"""manifest.json `options`: what a run was asked to do (RunOptions), so that `--resume`
runs the rest the same way. Built by `stallscope run`'s flags (collectors/runner/
arguments.py) or by a caller of the run API (collectors/runner/api.py RunRequest)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# perf's sampling rate when none is chosen from this host's measured cost per sample
# (collectors/host/sample_cost.py chooses it: the highest rate that keeps the profiler
# under 1% of the server's CPU); what a caller without a host gets.
DEFAULT_FREQ_HZ = 99
SEPARATE_PROFILE_REPS = 3   # where profiles cannot be paired: 3, the fewest with a CI
PAIRED_WINDOW_S = 0.25   # length of one paired window (s)
PAIRED_WINDOWS = 64      # windows per paired rep (ABBA...): 32 pairs


@dataclass
class RunOptions:
    """What a run was asked to do. A plain data class (not a Record): its `extra` holds the
    plugins' flags, and a key a newer writer added is dropped on read."""
    reps: int = 5                  # throughput reps per variant (paired reps with --paired)
    profile: str = "perf"          # perf | off | a plugin's profiler
    # separate profiled reps per variant; None: none when the run is paired (perf samples
    # the paired windows, collectors/profilers/perf/paired.py), SEPARATE_PROFILE_REPS when
    # it cannot pair (api.plan_run decides, the manifest records the number)
    profile_reps: int | None = None
    # perf's rate; None: chosen from this host's measured cost per sample (api.plan_run)
    freq_hz: int | None = None
    keep_perf_data: bool = False
    # auto (default): paired wherever it fits, separate reps otherwise (and why);
    # paired: pairing or an error; unpaired: separate reps (collectors/runner/pairing.py)
    pairing: str = "auto"
    paired: bool = False           # what was decided (set by the runner from `pairing`)
    # Short windows pair better: on the 2-core VM the host's noise drifts over seconds, so
    # two 0.25 s windows side by side differ by ~8% where two 2 s windows differ by ~11%,
    # and 8x as many pairs fit in the same time (docs/statistics.md, "Paired windows").
    paired_window_s: float = PAIRED_WINDOW_S
    paired_windows: int = PAIRED_WINDOWS
    size: str = "default"
    load_generator: str = "auto"   # auto (the case's workload.tool) | redis-benchmark | memtier
    # --precision: the half-width asked of the throughput interval, as a fraction of the
    # ratio (0.02); paired reps are added after the `reps` first-stage reps until it is
    # met or `budget_s` of wall time is spent (collectors/runner/precision.py)
    precision: float | None = None
    budget_s: float | None = None
    # --on FUNCTION[:flat|cum]: --precision narrows that function's CPU time per operation
    precision_on: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)   # plugin options (argparse dests)
    report: bool = False           # render the report when the run ends (stallscope run --report)
