"""What a run was asked to do: RunOptions (saved as the manifest's "options", so
--resume runs the rest the same way) and RunError for a run that cannot start."""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any

RUNS_DIR = "runs"
# perf's sampling rate: low enough that the profiler costs the server well under 1% of its
# CPU (measured with profile windows: ~35 us per cpu-clock sample in a KVM guest), high
# enough that 3 profile reps give the focus functions thousands of samples.
DEFAULT_FREQ_HZ = 99
PAIRED_WINDOW_S = 0.25   # length of one paired window (s)
PAIRED_WINDOWS = 64      # windows per paired rep (ABBA...): 32 pairs
PRECISION_PILOT = 8      # first-stage paired reps of a --precision run (docs/statistics.md)
DEFAULT_BUDGET_S = 1800  # --precision without --budget: 30 minutes


class RunError(Exception):
    """A problem with the run as a whole (bad options, unusable variants); exit status 2."""


def parse_duration(text: str) -> float:
    """'30m', '1h', '90s', '1h30m' or plain seconds -> seconds (ValueError otherwise)."""
    t = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", t)
    if not t or parts is None or not any(parts.groups()):
        raise ValueError(f"duration {text!r}: give e.g. 30m, 1h, 90s or 1h30m")
    h, m, s = (int(x or 0) for x in parts.groups())
    return float(h * 3600 + m * 60 + s)


def parse_precision(text: str) -> float:
    """'2%' or '0.02' -> 0.02 (ValueError outside (0, 50%))."""
    t = str(text).strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"precision {text!r}: give a percentage like 2% (or a fraction like 0.02)") from None
    if not 0 < v < 0.5:
        raise ValueError(f"precision {text!r}: must be between 0% and 50%")
    return v


@dataclass
class RunOptions:
    reps: int = 5                  # throughput reps per variant (paired reps with --paired)
    profile: str = "perf"          # perf | off | a plugin's profiler
    profile_reps: int = 3          # separate profiled reps per variant (3: fewest with a CI)
    freq_hz: int = DEFAULT_FREQ_HZ
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
    extra: dict[str, Any] = field(default_factory=dict)   # plugin options (argparse dests)


def precision_type(text: str) -> float:
    """parse_precision for argparse (--precision of run, sweep and experiment)."""
    try:
        return parse_precision(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def duration_type(text: str) -> float:
    """parse_duration for argparse (--budget)."""
    try:
        return parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
