"""rep.json `collectors.<name>`: what each collector reported when its rep's window closed.

The RepCollector seam (collectors/collector.py) returns one of these from `stop(ctx)`; the
runner writes its `to_json()` under collectors.<name> and analysis reads it back by name
(`FACTS_BY_NAME`, through RepFacts). A plugin's collector may return plain CollectorFacts
with its own fields kept in `extra`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from analysis.inputs.records import Record

TIME_EVENTS = ("cpu-clock", "task-clock")   # perf software clocks: a sample's period is ns


@dataclass
class ThreadProbe(Record):
    """One thread's frame-pointer probe samples: how many stacks stop early, and where;
    how many skip the caller of a leaf in code without frame pointers (None in runs recorded
    before 2026-12-06, whose probe did not count them), and at which frames."""
    samples: int = 0
    truncated_pct: float = 0.0           # % of its samples whose stack misses the entry
    roots: dict[str, float] = field(default_factory=dict)   # where they start -> % of samples
    skipped_pct: float | None = None     # % of its samples with a skipped caller
    sites: dict[str, float] = field(default_factory=dict)   # "listed -> leaf" -> % of samples


@dataclass
class SkippedThread(Record):
    """One thread's samples in a rep by the skipped-caller rule (analysis/profile/skipped.py):
    all of them, those whose leaf-most frames are code without frame pointers followed by
    other code (at risk), those of them whose next frame does not call into a shared object
    (skipped: a caller is missing) and those whose call site could not be read (unknown)."""
    samples: int = 0
    at_risk: int = 0
    skipped: int = 0
    unknown: int = 0
    sites: dict[str, int] = field(default_factory=dict)     # "listed -> leaf" -> skipped samples


@dataclass
class UnwindProbe(Record):
    """The short frame-pointer profile that chose per-thread DWARF (--call-graph auto,
    collectors/profilers/perf/unwind.py); made once per run, in its first profile rep."""
    at: float = 0.0                      # epoch s
    rep: str = ""                        # variant/rep it ran in
    seconds: float = 0.0
    wall_s: float | None = None
    frequency_hz: int | None = None
    callgraph: str = "fp"
    switch_pct: float = 0.0              # a thread truncated (or skipping callers) over
                                         #   this % gets DWARF
    min_samples: int | None = None       # fewer samples: not judged
    # the one-sided confidence of the rule (its lower bound over switch_pct); None in runs
    # recorded before 2026-11-29, whose rule was the share as seen or, for a day, the same
    # lower bound unrecorded
    confidence: float | None = None
    threads: dict[str, ThreadProbe] = field(default_factory=dict)   # comm -> its probe


@dataclass
class ProfileWindow(Record):
    """One window of a profile rep: perf sampling (`perf`) or not, and the server's
    throughput in it (commands counted on the server)."""
    index: int = 0
    perf: bool = False
    seconds: float = 0.0
    commands: int = 0
    ops_per_s: float | None = None


@dataclass
class WindowPlan(Record):
    """How many windows a profile rep asked for and got (collectors/profilers/perf/windows.py)."""
    asked: int | None = None
    left_s: float | None = None          # window time left after the unwinding probe
    info_ms: float | None = None         # the slowest of 3 INFO round trips (counts the commands)
    planned: int | None = None


@dataclass
class CollectorFacts(Record):
    """What one collector reported when it stopped (rep.json collectors.<name>): the
    RepCollector seam's return type (`stop(ctx) -> CollectorFacts`). Each collector returns
    its own subclass (PerfFacts, TmaFacts, ParcaFacts; a plugin's unknown fields are kept
    in `extra`); `status`/`reason`/`error` are common: the runner records a collector that
    failed to start or stop as CollectorFacts(status="failed", error=...)."""
    status: str | None = None            # ok | unavailable | failed | pending (parca)
    reason: str | None = None            # why, when not ok
    error: str | None = None             # the exception of a collector that failed
    # Left out while None, so each collector's rep.json entry keeps exactly its own keys.
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"status", "reason", "error"})


@dataclass
class PerfFacts(CollectorFacts):
    """What perf record did in this rep (rep.json collectors.perf)."""
    profiler: str = "perf"
    command: list[str] = field(default_factory=list)
    event: str | None = None             # cpu-clock
    frequency_hz: int | None = None
    window_s: float | None = None        # seconds perf was attached
    callgraph: str | None = None         # fp | dwarf | fp+dwarf (dwarf for dwarf_threads)
    dwarf_threads: list[str] = field(default_factory=list)   # fp+dwarf: threads (comm) unwound
                                         #   with DWARF, the others with frame pointers
    dwarf_stack_bytes: int | None = None  # user stack copied per DWARF sample
    commands: list[list[str]] = field(default_factory=list)  # fp+dwarf: both perf record
    # --call-graph auto: the frame-pointer probe that chose the unwinding (perf/unwind.py)
    unwind_probe: UnwindProbe | None = None
    # thread (comm) -> its samples by the skipped-caller rule, as unwound; None in runs
    # recorded before 2026-12-06
    skipped: dict[str, SkippedThread] | None = None
    folded_lines: int | None = None
    samples: int | None = None
    threads: list[str] = field(default_factory=list)
    mmap_pages: int | None = None
    # Profile windows (off/on ABBA, perf's control FIFO); the "on" windows' seconds and
    # server commands add up below.
    windows: list[ProfileWindow] = field(default_factory=list)
    window_plan: WindowPlan | None = None
    sampled_s: float | None = None
    sampled_commands: int | None = None
    windows_error: str | None = None
    # Profiles in the paired windows (collectors/profilers/perf/paired.py; rep.json
    # collectors["perf:<variant>"]): the variant's folded file, and the samples of the
    # rep's perf that fell outside every counted window (switching, settling, idle)
    file: str | None = None
    outside_windows_samples: int | None = None
    OMIT_IF_NONE: ClassVar[frozenset[str]] = CollectorFacts.OMIT_IF_NONE | {
        "file", "outside_windows_samples", "skipped"}

    @property
    def weights_are_ns(self) -> bool:
        """cpu-clock/task-clock folds sum sample periods: nanoseconds of CPU time."""
        return self.event in TIME_EVENTS


@dataclass
class TmaFacts(CollectorFacts):
    """What the TMA collector did in this rep (rep.json collectors.tma; the raw output is
    tma.* beside it, docs/tma-collection.md)."""
    backend: str | None = None           # perf | toplev | topdown-tool
    file: str | None = None              # the raw output's name (tma.csv, tma.json ...)
    rc: int | None = None                # the tool's exit code
    files: list[str] = field(default_factory=list)   # every tma.* file of the rep
    command: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nodes: int | None = None             # tree nodes parsed (status ok)
    max_level: int | None = None
    multiplexed: dict[str, float] = field(default_factory=dict)   # node -> % of time counted
    warnings: list[str] = field(default_factory=list)
    # TMA in the paired windows (collectors/profilers/tma/windows.py; rep.json
    # collectors["tma:<variant>"]): when perf stat -I started counting, on CLOCK_MONOTONIC
    # (its intervals' times are seconds since then), and its interval length
    start_mono: float | None = None
    interval_ms: int | None = None
    OMIT_IF_NONE: ClassVar[frozenset[str]] = CollectorFacts.OMIT_IF_NONE | {
        "start_mono", "interval_ms"}


@dataclass
class ParcaFacts(CollectorFacts):
    """What the Parca collector fetched for this rep (rep.json collectors.parca)."""
    file: str | None = None              # profile.pb.gz
    samples: int | None = None


# rep.json collectors.<name> -> the record it is read as (any other name: CollectorFacts)
FACTS_BY_NAME: dict[str, type[CollectorFacts]] = {"perf": PerfFacts, "tma": TmaFacts,
                                                  "parca": ParcaFacts}
