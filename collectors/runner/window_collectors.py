"""The collectors of a paired rep's windows, as one WindowProfiler (collectors/collector.py):
each plugin that watches paired windows (perf: its profile; tma: `perf stat -I` on a PMU
host) gets every call; the facts of all of them go into rep.json under their names. A
collector that fails to stop still lets the others stop, then the rep fails naming it."""
from __future__ import annotations

from analysis.inputs.collector_facts import CollectorFacts
from analysis.inputs.paired import PairedWindow
from collectors.collector import WindowProfiler


class WindowCollectors:
    def __init__(self, each: list[WindowProfiler]):
        self.each = each

    def probe(self, key: str, pid: int) -> None:
        for c in self.each:
            c.probe(key, pid)

    def start(self, pids: dict[str, int]) -> None:
        for c in self.each:
            c.start(pids)

    def set(self, on: bool) -> None:
        for c in self.each:
            c.set(on)

    def stop(self) -> None:
        errors = []
        for c in self.each:
            try:
                c.stop()
            except Exception as e:          # the others still stop; the rep fails below
                errors.append(f"{type(c).__name__}: {e}")
        if errors:
            raise RuntimeError("window collector stop failed: " + "; ".join(errors))

    def fold(self, windows: list[PairedWindow]) -> dict[str, CollectorFacts]:
        out: dict[str, CollectorFacts] = {}
        for c in self.each:
            out.update(c.fold(windows))
        return out
