"""What a sweep was asked to do (saved as sweep.json "options", so --resume runs the rest the
same way)."""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.inputs.run_options import PAIRED_WINDOW_S, PAIRED_WINDOWS

PAIRINGS = ("paired", "interleaved")


@dataclass
class SweepOptions:
    reps: int = 5                    # throughput reps per variant (paired reps when paired)
    profile: str = "perf"            # perf | off | a plugin's profiler
    profile_reps: int | None = None  # separate profile reps; None: none where paired, else 3
    frequency: int = 0               # perf Hz; 0: the runner's default
    # paired: config-only variants in one process, two builds loaded at once (where two
    # datasets fit this host, else interleaved); interleaved: a server start per rep
    pairing: str = "paired"
    paired_window_s: float = PAIRED_WINDOW_S
    paired_windows: int = PAIRED_WINDOWS
    load_generator: str = "auto"
    lookup: list[str] = field(default_factory=list)   # the lookup column's function(s)
    # every paired point adds reps until its throughput interval is this narrow (a fraction
    # of the ratio) or budget_s is spent (`stallscope run --precision`); None: `reps` reps
    precision: float | None = None
    budget_s: float | None = None
    skip_unfit: bool = False         # run the points that fit, mark the others skipped
