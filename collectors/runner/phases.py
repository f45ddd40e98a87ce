"""Where a rep's wall time goes: a clock that books the seconds since its last mark to a
named phase (rep.json `phases`). The precision planner and docs/statistics.md read them:
a paired rep of the demo spends most of its time loading and settling two servers, not in
its windows, and that ratio decides how many windows a rep should have."""
from __future__ import annotations

import time


class PhaseClock:
    def __init__(self, phases: dict[str, float]):
        self.phases = phases
        self._since = time.monotonic()

    def mark(self, phase: str) -> None:
        """Book the time since the last mark to `phase` (added up if it repeats)."""
        now = time.monotonic()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - self._since, 3)
        self._since = now
