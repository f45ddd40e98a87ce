"""This host's memory latency, as a dependent-load pointer chase measured it
(collectors/host/latency.py; the method: docs/memory-latency.md).

A report sets these figures beside a function's out-of-cache cost (its cost per op at the
run's size minus at an in-cache size): "DRAM ≈ 110 ns, L3 ≈ 35 ns", and a hedged "≈ N DRAM
round trips per op" (`round_trips`). The chase times one load at a time, each waiting for
the one before, so its figure is a whole round trip; misses a program overlaps cost it less
each, which is why N is a lower bound. Read and written through the one converter
(`MemoryLatency.from_json`, `to_json`); unknown keys are kept, as every Record does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.inputs.records import Record

PAGES = ("4k", "thp")


@dataclass
class MemoryLatency(Record):
    """Load-to-use latency in ns of a load that misses to DRAM, and of one that hits the L3."""
    # Median ns per load over the DRAM buffer's reps (a buffer >= 4x the LLC: its loads miss
    # the L3), with the distribution-free 95% interval of that median (order statistics).
    dram_ns: float
    dram_low: float
    dram_high: float
    # The same for the L3 buffer (one that fits in the LLC and not in the L2).
    llc_ns: float
    llc_low: float
    llc_high: float
    dram_bytes: int                  # the DRAM buffer's size
    llc_bytes: int                   # the L3 buffer's size (what llc_ns was measured over)
    page: str                        # "4k" (base pages, as Redis runs: disable-thp yes) or "thp"
    dram_values: list[float]         # ns per load of each rep over the DRAM buffer, in order
    llc_values: list[float]          # ns per load of each rep over the L3 buffer, in order
    cpu: int | None                  # the CPU the probe was pinned to
    method: str                      # how it was measured, in words, with any caveat
    confidence: float = 0.95         # the intervals' own coverage (order statistics: 15 reps give 96.5%)
    loads: int = 0                   # timed dependent loads a rep (DRAM buffer)
    llc_source: int | None = None    # the LLC size the buffers were sized from; None: unknown
    # When the L3 buffer the rule gives (LLC/4) measured more than twice a buffer of 4x the
    # L2, it was not served by the L3 here (a guest's share of a big L3): the 4x-L2 buffer's
    # figure is llc_ns then, and the rule's buffer's median is kept here. None otherwise.
    llc_rule_bytes: int | None = None
    llc_rule_ns: float | None = None
    check_ns: float | None = None    # the 4x-L2 buffer's median (the check above); None if not run
    huge_fraction: float | None = None   # share of the DRAM buffer the kernel put on huge pages
    notes: list[str] = field(default_factory=list)   # the caveats `method` ends with, one each
    cpu_model: str | None = None     # what it ran on
    wall_s: float | None = None      # the probe's wall time: compile (if not cached) + every run
    raw: str = ""                    # the probe's own output, every run, verbatim
    # The largest buffer the L3 served here (its median under 20% of the way from the 4x-L2
    # buffer's latency to DRAM's, over a ladder of doubling buffers from 4x the L2 up to LLC/4):
    # what an in-cache control's dataset may take (collectors/runner/stall_control.py). None:
    # not measured.
    served_bytes: int | None = None
    ladder: dict[str, float] = field(default_factory=dict)   # buffer bytes -> median ns a load

    def miss_ns(self) -> float:
        """What one access costs more when its line comes from DRAM instead of the L3."""
        return self.dram_ns - self.llc_ns

    def round_trips(self, extra_ns_per_op: float) -> float | None:
        """"≈ N DRAM round trips per op": an out-of-cache cost per op (ns) over `miss_ns`.
        A lower bound on the op's extra misses: misses that overlap cost less than a whole
        round trip each. None when the chase saw no difference between DRAM and the L3."""
        miss = self.miss_ns()
        return extra_ns_per_op / miss if miss > 0 else None

    def text(self) -> str:
        """"DRAM ≈ 112 ns [108, 117], L3 ≈ 36 ns [35, 38] (95%, 4 KiB pages)"."""
        page = "4 KiB pages" if self.page == "4k" else "transparent huge pages"
        return (f"DRAM ≈ {self.dram_ns:.0f} ns [{self.dram_low:.0f}, {self.dram_high:.0f}], "
                f"L3 ≈ {self.llc_ns:.0f} ns [{self.llc_low:.0f}, {self.llc_high:.0f}] "
                f"({self.confidence:.0%}, {page})")
