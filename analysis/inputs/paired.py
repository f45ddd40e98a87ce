"""paired.json: the windows of one paired rep, as both writers write it and the comparison
reads it. Two modes share the file (docs/run-directory.md): one server process with
CONFIG SET between windows (collectors/runner/paired.py; `defaults` holds the settings'
values before the first switch), or two servers loaded at once, the load switched
(collectors/runner/paired_servers.py; `mode` "servers", `servers`, `warmup_s`, each
window's `server_cpu_s`). Each writer's file keeps exactly its own keys (OMIT_IF_NONE).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from analysis.inputs.records import Record, RecordError
from analysis.inputs.rundir import RunDirError, read_json


@dataclass
class PairedWindow(Record):
    """One window: the active variant and the delta of its server's own counters."""
    OMIT_IF_NONE = frozenset({"server_cpu_s", "perf", "mono0", "mono1"})
    index: int
    variant: str
    config: dict[str, str | None] = field(default_factory=dict)   # the settings in force
    t0: float | None = None            # epoch s
    t1: float | None = None
    seconds: float = 0.0
    total_commands: int = 0            # INFO stats total_commands_processed, delta
    calls: int | None = None           # INFO commandstats calls of the case's command, delta
    ops_per_s: float | None = None
    calls_per_s: float | None = None
    server_cpu_s: float | None = None  # two servers: the main thread's CPU time (schedstat)
    # Whether perf sampled this window (profiles in the paired windows, collectors/
    # profilers/perf/paired.py), and its bounds on CLOCK_MONOTONIC: the clock perf's samples
    # and `perf stat -I`'s start are stamped with (absent in runs made before)
    perf: bool | None = None
    mono0: float | None = None
    mono1: float | None = None

    @property
    def rate(self) -> float | None:
        """calls/s of the case's command when the server counted them; ops/s also counts
        the INFO/CONFIG commands of the switching itself."""
        return self.calls_per_s if self.calls_per_s is not None else self.ops_per_s


@dataclass
class PairedServer(Record):
    """One of the two servers of a paired-servers rep."""
    port: int = 0
    pid: int | None = None
    binary_sha256: str | None = None


@dataclass
class PairedWindows(Record):
    """A paired rep's paired.json."""
    OMIT_IF_NONE = frozenset({"mode", "defaults", "servers", "warmup_s"})
    mode: str | None = None            # "servers"; absent: one process (CONFIG SET)
    setting: list[str] = field(default_factory=list)     # the config keys switched
    defaults: dict[str, str | None] | None = None        # their values before the first switch
    values: dict[str, dict[str, str | None]] = field(default_factory=dict)   # variant -> key -> value
    servers: dict[str, PairedServer] | None = None       # two servers: each variant's
    window_s: float = 0.0
    settle_s: float = 0.0
    warmup_s: float | None = None
    order: list[str] = field(default_factory=list)       # the variant of each window
    command: str = ""
    counter: str = ""
    windows: list[PairedWindow] = field(default_factory=list)

    def of(self, variant: str) -> list[PairedWindow]:
        return [w for w in self.windows if w.variant == variant]


def read_paired(path: Path) -> PairedWindows:
    """A paired.json; RunDirError (malformed JSON, wrong shape) names the file and line."""
    try:
        return PairedWindows.from_json(read_json(path), str(path))
    except RecordError as e:
        raise RunDirError(f"{path}: {e}") from None
