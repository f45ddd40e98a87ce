"""What a sweep was asked to do (saved as sweep.json "options", so --resume runs the rest the
same way)."""
from __future__ import annotations

from dataclasses import dataclass, field

PAIRINGS = ("auto", "paired", "interleaved")


@dataclass
class SweepOptions:
    reps: int = 5                    # throughput reps per variant (paired reps when paired)
    profile: str = "perf"            # perf | off | a plugin's profiler
    profile_reps: int = 3
    frequency: int = 999
    # auto: config-only variants paired in one process, different builds interleaved;
    # paired: two builds loaded at once too, where two datasets fit; interleaved: never paired
    pairing: str = "auto"
    paired_window_s: float = 2.0
    paired_windows: int = 8
    load_generator: str = "auto"
    lookup: list[str] = field(default_factory=list)   # the lookup column's function(s)
    skip_unfit: bool = False         # run the points that fit, mark the others skipped
