"""What a run was asked to do: RunOptions (saved as the manifest's "options", so
--resume runs the rest the same way) and RunError for a run that cannot start."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

RUNS_DIR = "runs"
# perf's sampling rate: low enough that the profiler costs the server well under 1% of its
# CPU (measured with profile windows: ~35 us per cpu-clock sample in a KVM guest), high
# enough that 3 profile reps give the focus functions thousands of samples.
DEFAULT_FREQ_HZ = 99
PAIRED_WINDOW_S = 0.25   # length of one paired window (s)
PAIRED_WINDOWS = 64      # windows per paired rep (ABBA...): 32 pairs


class RunError(Exception):
    """A problem with the run as a whole (bad options, unusable variants); exit status 2."""


@dataclass
class RunOptions:
    reps: int = 5                  # throughput reps per variant (paired reps with --paired)
    profile: str = "perf"          # perf | off | a plugin's profiler
    profile_reps: int = 3          # separate profiled reps per variant (3: fewest with a CI)
    freq_hz: int = DEFAULT_FREQ_HZ
    keep_perf_data: bool = False
    paired: bool = False
    # Short windows pair better: on the 2-core VM the host's noise drifts over seconds, so
    # two 0.25 s windows side by side differ by ~8% where two 2 s windows differ by ~11%,
    # and 8x as many pairs fit in the same time (docs/statistics.md, "Paired windows").
    paired_window_s: float = PAIRED_WINDOW_S
    paired_windows: int = PAIRED_WINDOWS
    size: str = "default"
    load_generator: str = "auto"   # auto (the case's workload.tool) | redis-benchmark | memtier
    extra: dict[str, Any] = field(default_factory=dict)   # plugin options (argparse dests)
