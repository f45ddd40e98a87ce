"""The memory-stall section of results.json: each function's out-of-cache cost per operation,
from the run at its size and an in-cache control run of the same builds (docs/statistics.md,
"Memory stalls without a PMU"). Data only: analysis/compare/stalls.py fills it,
analysis/report/stall_tables.py renders it.

A function's CPU time per operation is its execution plus its memory stalls. The same build
over a dataset that fits in the last-level cache pays (almost) no DRAM stall, so the run's
cost per operation minus the control's is the function's out-of-cache cost: the DRAM and
TLB-walk time that grows with the working set, the stall a prefetch can hide.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.inputs.latency import MemoryLatency


@dataclass
class Interval:
    """An estimate with its interval at `StallSection.level` (None: no interval, `why`)."""
    value: float
    low: float | None = None
    high: float | None = None
    why: str = ""            # why there is no interval (a side without spread, an unbounded ratio)

    @property
    def decided(self) -> bool:
        """The interval excludes 0."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


@dataclass
class StallSide:
    """One variant's cost of one function (ns per operation): at the run's size, in the
    in-cache control, and their difference, the out-of-cache cost."""
    large: float             # mean over the run's profile reps
    small: float             # mean over the control's profile reps
    large_n: int
    small_n: int
    out_of_cache: Interval   # large - small (Welch t interval: the two runs are independent)


@dataclass
class StallRow:
    """One function (flat: its own cost; cum: with its callees) in both variants."""
    function: str
    kind: str                # "flat" | "cum" | "total" (all samples of the view)
    base: StallSide
    cand: StallSide
    # the stall the change removed: base's out-of-cache cost - cand's, ns/op (> 0: removed);
    # the pairs of each run's reps taken as pairs (Welch over the two runs' pair differences)
    removed: Interval
    # removed / base's out-of-cache cost (Fieller's interval for a ratio of correlated
    # estimates); None where base's out-of-cache cost is not decided above 0
    share_removed: Interval | None = None
    focus: bool = False      # a focus function of the case
    # round trips: each variant's out-of-cache cost / (DRAM - L3 latency), a lower bound on
    # the misses it stands for (overlapped misses each cost less than a full latency)
    base_trips: float | None = None
    cand_trips: float | None = None


@dataclass
class StallSection:
    available: bool
    reason: str = ""                 # why not, when not available
    control_dir: str = ""            # the control run, relative to the run directory
    control_keys: int = 0
    keys: int = 0                    # the run's dataset keys
    control_working_set: str = ""    # "1.3M keys ≈ 112 MiB = 0.23× L3 of 480 MiB"
    working_set: str = ""
    command: str = ""                # what one operation is ("MSET")
    thread: str = "all"              # the thread view of every row (the run's own)
    level: float = 0.95              # every interval's confidence (Bonferroni over the rows)
    family_level: float = 0.95       # the table's: the chance that every interval covers
    rows: list[StallRow] = field(default_factory=list)
    latency: MemoryLatency | None = None
    # the control's paired throughput change (the prefetch buys nothing in cache: a check)
    control_change: float | None = None
    control_low: float | None = None
    control_high: float | None = None
    control_reps: int = 0
    notes: list[str] = field(default_factory=list)
    # on a PMU host: TMA's DRAM_Bound beside the out-of-cache cost of all samples, and whether
    # the two tell one story ("agree", "disagree", "cannot tell"; "" without a funnel)
    tma: str = ""
    tma_agree: str = ""
