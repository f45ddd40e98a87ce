"""manifest.json `stalls`: the run's in-cache control (docs/statistics.md, "Memory stalls
without a PMU"), or why it has none.

Written when a run is planned (collectors/runner/stall_control.py); the control itself is
a run directory of its own inside the run's (`incache/`, analysis/inputs/layout.py), so the
run directory stays one copyable unit. analysis/compare/stalls.py reads both.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.inputs.records import Record


@dataclass
class StallPlan(Record):
    planned: bool = False        # a control run follows the run's reps
    reason: str = ""             # why not (a case whose cost does not scale with a dataset ...)
    keys: int = 0                # the control's dataset keys (at most a quarter of the cache)
    fraction: float = 0.25       # of the last-level cache the control's dataset may take
    dir: str = ""                # the control run, relative to the run directory
    # what the control run is asked: the run's case argument, --set overrides and variants
    # (built already: the control takes them from the build cache)
    case: str = ""
    sets: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
