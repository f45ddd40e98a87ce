"""manifest.json `options`: what a run was asked to do (RunOptions), so that `--resume`
runs the rest the same way. Built by `stallscope run`'s flags (commands/run_arguments.py)
or by a caller of the run API (collectors/runner/api.py RunRequest). The
fields it shares with a sweep's options (MeasureOptions), their defaults and the rules
between them are declared in analysis/inputs/option_specs.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

# The defaults, named here too (older imports): declared in option_specs.
from analysis.inputs.option_specs import (DEFAULT_FREQ_HZ, DEFAULT_LAYOUTS, DEFAULT_SIZE,  # noqa: F401
                                          PAIRED_WINDOW_S, PAIRED_WINDOWS, SEPARATE_PROFILE_REPS,
                                          MeasureOptions)


@dataclass
class RunOptions(MeasureOptions):
    """What a run was asked to do. A plain data class (not a Record): its `extra` holds the
    plugins' flags, and a key a newer writer added is dropped on read."""
    # fields read under an older name (records.convert): the manifests written before 2026-11-27
    RENAMED: ClassVar[dict[str, str]] = {"freq_hz": "frequency_hz"}
    keep_perf_data: bool = False
    paired: bool = False           # what was decided (set by the runner from `pairing`)
    size: str = DEFAULT_SIZE
    # --on FUNCTION[:flat|cum]: --precision narrows that function's CPU time per operation
    precision_on: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)   # plugin options (by RunFlag.dest)
    report: bool = False           # render the report when the run ends (stallscope run --report)
    # --layouts N: each variant built N times in shuffled link orders, --reps paired reps on
    # each (collectors/runner/layouts.py); 1: the upstream order only
    layouts: int = DEFAULT_LAYOUTS
    # `stallscope run` with none of --reps, --precision, --quick: a run that decides, its reps
    # planned before it for the targets of collectors/runner/targets.py, the budget its only
    # early stop
    targets: bool = False
    # --quick: 5 paired reps of 64 windows, perf within 1% of the server (the cheap run
    # before the targets; its report says what it could not see)
    quick: bool = False
    # the in-cache control run after the reps (docs/statistics.md, "Memory stalls without a
    # PMU"): None: a run that decides makes one, other runs not; True: made (the demo);
    # False: --no-stalls
    stalls: bool | None = None
    # --perf-share: perf's share of a paired rep's ABBA blocks (collectors/abba.py SHARES);
    # None: 1/2, or what a run that decides planned (collectors/runner/rep_plan.py, which
    # sets it). The perf-off blocks are what the overhead and the perf-blocks check measure.
    perf_share: float | None = None

    @property
    def precision_function(self) -> tuple[str, str] | None:
        """(function, "flat" | "cum") of --on, or None (--precision narrows the throughput's
        interval)."""
        if not self.precision_on:
            return None
        fn, _, measure = self.precision_on.partition(":")
        return fn, (measure or "cum")
