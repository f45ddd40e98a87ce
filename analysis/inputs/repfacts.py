"""rep.json: the facts of one rep, written by the runner when the rep ends (ok or not).

Analysis reads facts from here (how many requests the load generator was given, when the
steady window opened and closed, which perf event at which rate, how long perf was
attached) instead of re-parsing command lines. Schema 1 files (no "schema" key; hand-made
ones with shell-string commands) are migrated on read.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from analysis.inputs.collector_facts import FACTS_BY_NAME, CollectorFacts, PerfFacts
from analysis.inputs.layout import REP_JSON
from analysis.inputs.manifest import Calibration
from analysis.inputs.records import Record

SCHEMA = 2


@dataclass
class Window(Record):
    """The measured window: load generator start/end (epoch s) and the profile window."""
    t0: float | None = None
    t1: float | None = None
    profile_window_s: float | None = None   # planned length of the collectors' window
    # The profiler was attached before the load started and detached after it ended, so
    # every request of the load falls inside the profile (hand-recorded runs).
    perf_covers_load: bool = False


@dataclass
class BenchSummary(Record):
    """The load generator's own summary of the measured run (parsed raw output)."""
    test: str = ""
    rps: float | None = None
    avg_latency_ms: float | None = None
    min_latency_ms: float | None = None
    p50_latency_ms: float | None = None
    p95_latency_ms: float | None = None
    p99_latency_ms: float | None = None
    max_latency_ms: float | None = None
    wall_s: float | None = None
    requests: int | None = None          # -n; None for memtier (--test-time)


@dataclass
class ThreadUse(Record):
    """CPU time one server thread used during the measured window (/proc per-thread)."""
    tid: int
    name: str                            # comm: redis-server, io_thd_1, bio_lazy_free ...
    cpu_s: float                         # utime + stime consumed in the window (s)
    busy: float                          # cpu_s / window_s: 1.0 = busy all the time
    waiting: float | None = None         # runnable but not on a CPU, share of the window
                                         #   (schedstat run_delay): other work took its CPU


@dataclass
class Saturation(Record):
    """Who was busy during the window: was the server the bottleneck, or the client?
    Written by the runner for every measured rep (docs/run-directory.md)."""
    window_s: float
    main_tid: int | None = None          # the server's pid: its main thread
    server_threads: list[ThreadUse] = field(default_factory=list)
    client_cpu_s: float | None = None    # the load generator process, all its threads (s)
    client_busy: float | None = None     # client_cpu_s / window_s (CPU-seconds per second)
    client_capacity: float | None = None  # CPUs the load generator could use (its threads, capped
                                         #   by the CPUs it was pinned to)
    host_busy: float | None = None       # all processes, share of all CPUs (/proc/stat)
    host_steal: float | None = None      # taken by the hypervisor for other guests, share

    def main_thread(self) -> ThreadUse | None:
        """The main thread (tid == the server's pid)."""
        return next((t for t in self.server_threads if t.tid == self.main_tid), None)


@dataclass
class RdbLoad(Record):
    """How long the server took to become ready at its start (a restored RDB's load)."""
    seconds_to_ready_s: float | None = None
    log_load_seconds_s: float | None = None
    keys_loaded: int | None = None
    keys_expired: int | None = None


@dataclass
class RdbLoadResult(Record):
    """rdb-load cases: the measurement of one load (also rdb_load.json beside rep.json)."""
    keys: int = 0                        # DBSIZE after the load
    seconds_to_ready_s: float | None = None   # start to PING answered
    log_load_seconds_s: float | None = None   # "DB loaded from disk: N seconds" in the log
    load_seconds_s: float | None = None  # the measurement: the log's, else to ready
    keys_per_s: float | None = None
    keys_loaded_info: int | None = None  # INFO persistence/keyspace keys loaded
    rdb_bytes: int | None = None


@dataclass
class Settle(Record):
    """Waiting for a restored keyspace to finish rehashing (collectors/load/settle.py)."""
    OMIT_IF_NONE = frozenset({"hz_during_settle", "note"})
    rehashing_s: float | None = None     # seconds waited; None: the server does not say
    hz_during_settle: int | None = None  # hz raised meanwhile
    note: str | None = None


@dataclass
class KeySample(Record):
    """One workload key checked: it exists, with the promised encoding and size (its size
    in the dataset's unit: bytes of a string, fields of a hash, members of a sorted set)."""
    OMIT_IF_NONE = frozenset({"bytes", "fields", "members"})
    key: str = ""
    exists: bool = False
    encoding: str | None = None
    bytes: int | None = None
    fields: int | None = None
    members: int | None = None


@dataclass
class DatasetCheck(Record):
    """The keyspace a rep measured, verified (collectors/workload/dataset.verify)."""
    ok: bool = False
    dbsize: int = 0
    expected_keys: int = 0
    kind: str | None = None
    expected_encoding: str | None = None
    encodings_seen: dict[str, int] = field(default_factory=dict)
    key_format: str | None = None
    samples: list[KeySample] = field(default_factory=list)


@dataclass
class PairedFacts(Record):
    """A paired rep's windows in brief (the windows themselves: paired.json)."""
    order: list[str] = field(default_factory=list)   # the variant of each window
    setting: list[str] = field(default_factory=list)
    counter: str = ""


@dataclass
class RepCpus(Record):
    server: list[int] | None = None
    client: list[int] | None = None


@dataclass
class RepFacts(Record):
    variant: str = ""
    rep: int = 0
    kind: str = "throughput"
    schema: int = SCHEMA
    commands: dict[str, list[str]] = field(default_factory=dict)   # server, warmup, bench
    requests: int | None = None          # the requests the measured load was given (-n)
    pid: int | None = None
    port: int | None = None
    cpus: RepCpus | None = None
    window: Window | None = None
    bench: BenchSummary | None = None
    warmup: BenchSummary | None = None
    calibration: Calibration | None = None
    collectors: dict[str, CollectorFacts] = field(default_factory=dict)  # name -> facts
    rdb_load: RdbLoad | None = None                # server start: load timing
    rdb_load_result: RdbLoadResult | None = None   # rdb-load cases: the measurement
    dataset: DatasetCheck | None = None            # verification of the keyspace
    settle: Settle | None = None                   # waiting for the rehash to finish
    settle_by_variant: dict[str, Settle] = field(default_factory=dict)   # paired servers: each
    # Where the rep's wall time went, seconds per phase in order (paired servers: load,
    # verify, settle, warmup, windows, stop): what a rep costs besides its windows, which
    # the precision planner needs (docs/statistics.md, "Where a rep's time goes").
    phases: dict[str, float] = field(default_factory=dict)
    saturation: Saturation | None = None           # CPU use of server threads and client
    saturation_by_variant: dict[str, Saturation] = field(default_factory=dict)  # paired servers:
                                                   #   each server over its own windows
    paired: PairedFacts | None = None
    server_stop: str | None = None                 # shutdown | sigterm | sigkill
    error: str | None = None
    traceback: str | None = None

    def __post_init__(self) -> None:
        # The converter reads every collectors.<name> as CollectorFacts; each known
        # collector's entry becomes its own record (its fields typed, nothing dropped).
        self.collectors = {name: _typed_facts(name, c) for name, c in self.collectors.items()}

    @property
    def perf(self) -> PerfFacts | None:
        c = self.collectors.get("perf")
        return c if isinstance(c, PerfFacts) else None

    def perf_of(self, variant: str) -> PerfFacts | None:
        """A paired rep's profile of one variant (collectors["perf:<variant>"])."""
        c = self.collectors.get(f"perf:{variant}")
        return c if isinstance(c, PerfFacts) else None

    @classmethod
    def load(cls, d: Any, where: str = REP_JSON) -> "RepFacts":
        return cls.from_json(migrate(dict(d) if isinstance(d, dict) else {}), where)


def _typed_facts(name: str, c: Any) -> CollectorFacts:
    # "perf:<variant>": a paired rep's profile of one variant (collectors/profilers/perf/paired.py)
    cls = FACTS_BY_NAME.get(name.split(":", 1)[0], CollectorFacts)
    if isinstance(c, cls):
        return c
    doc = c.to_json() if isinstance(c, CollectorFacts) else c
    return cls.from_json(doc if isinstance(doc, dict) else {}, f"collectors.{name}")


def _argv(x: Any) -> list[str]:
    """A recorded command: a list, or (hand-made schema 1 files) one shell string."""
    if isinstance(x, str):
        return shlex.split(x)
    return [str(a) for a in x] if isinstance(x, list) else []


def _flag(argv: list[str], *names: str) -> str | None:
    for i, a in enumerate(argv[:-1]):
        if a in names:
            return argv[i + 1]
    return None


def migrate(d: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 rep.json -> schema 2: commands as lists, `requests` and collectors.perf
    `event` recorded as facts (schema 1 had them only inside command lines)."""
    if d.get("schema", 1) >= SCHEMA:
        return d
    d = dict(d)
    cmds = {k: _argv(v) for k, v in (d.get("commands") or {}).items()}
    d["commands"] = cmds
    if d.get("requests") is None:
        b = d.get("bench")
        if isinstance(b, dict) and isinstance(b.get("requests"), (int, float)):
            d["requests"] = int(b["requests"])
        else:
            n = _flag(cmds.get("bench", []), "-n")
            d["requests"] = int(n) if n is not None and n.isdigit() else None
    win = d.get("window")
    if isinstance(win, dict) and "profile_window_s" not in win:
        # Only hand-recorded runs (tests/data/runs/record.sh) wrote a window without the
        # profile window: their perf bracketed the whole load.
        d["window"] = {**win, "perf_covers_load": True}
    coll = dict(d.get("collectors") or {})
    perf = coll.get("perf")
    if isinstance(perf, dict) and not perf.get("event"):
        perf = dict(perf)
        perf["event"] = _flag(_argv(perf.get("command")), "-e", "--event")
        coll["perf"] = perf
    d["collectors"] = coll
    d["schema"] = SCHEMA
    return d
