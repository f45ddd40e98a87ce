"""A TMA interval recording lined up with the paired windows: the intervals of one variant.

A paired rep's `perf stat -I` (collectors/profilers/tma/windows.py) counts a server for all
of the rep's windows; its intervals carry their times in seconds since perf started
counting, and rep.json records that start on CLOCK_MONOTONIC, the clock paired.json times
the windows with. A variant's value of a node in that rep is the time-weighted mean of the
intervals that fall in its own windows (at least half of an interval inside them): the other
server's windows, the switching and the settling are left out, as they are from its
throughput and its profile.
"""
from __future__ import annotations

from dataclasses import replace

from analysis.tma.model import TmaResult

MIN_INSIDE = 0.5        # share of an interval that must lie in the variant's windows


def _inside(start: float, end: float, spans: list[tuple[float, float]]) -> float:
    """Seconds of [start, end] inside the spans."""
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)


def in_windows(result: TmaResult, spans: list[tuple[float, float]], start_mono: float
               ) -> TmaResult:
    """`result` with only the intervals whose time, shifted by `start_mono` (when perf began
    counting, CLOCK_MONOTONIC), lies at least MIN_INSIDE in `spans` (the variant's windows,
    CLOCK_MONOTONIC). Its collapse("time") is the variant's value for the rep."""
    keep = {iv.end for iv in result.timeline()
            if iv.seconds > 0 and _inside(start_mono + iv.start, start_mono + iv.end, spans)
            >= MIN_INSIDE * iv.seconds}
    return replace(result, values=[v for v in result.values if v.interval in keep])
