"""The case model: what a workload is, as data classes. The seam between cases/*.yaml
(loaded and validated by collectors.workload.cases), the dataset loader, the runner, and
analysis, which reads the resolved case back from manifest.json ("case").
docs/cases.md documents the YAML.

Every part is a Record (analysis/inputs/records.py): the case a newer writer recorded
keeps the fields this version does not know, and every field has a default, so a partial
case in a hand-made manifest still reads (`Case.from_json`, the one converter)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from analysis.inputs.records import Record


@dataclass
class ServerSpec(Record):
    config: dict[str, str] = field(default_factory=dict)  # passed as --name value
    io_threads: int = 1
    cluster: bool = False          # cluster-enabled yes (single node, all slots assigned)
    persistence: bool = False      # RDB/AOF off unless the case needs it


@dataclass
class DatasetSpec(Record):
    kind: str = "none"             # none | strings | hashes | zsets
    keys: int = 0                  # number of top-level keys
    value_size: int = 100          # bytes per value (string value or hash field value)
    fields: int = 0                # hashes: fields per hash
    members: int = 0               # zsets: members per sorted set
    key_prefix: str = "key:"
    # What must hold after preload; the runner refuses to measure otherwise.
    expect_encoding: str | None = None   # e.g. "hashtable", "skiplist", "embstr"/"raw"

    def shape(self) -> str:
        """Keyspace × element count × value size: "10M keys × 10 B"."""
        if self.kind == "none" or not self.keys:
            return ""
        noun = {"hashes": "hash", "zsets": "zset"}.get(self.kind, "key")
        noun += "" if self.keys == 1 else ("es" if noun == "hash" else "s")
        out = [f"{count(self.keys)} {noun}"]
        if self.kind == "hashes" and self.fields:
            out.append(f"{count(self.fields)} fields")
        if self.kind == "zsets" and self.members:
            out.append(f"{count(self.members)} members")
        if self.kind != "zsets" and self.value_size:
            out.append(size(self.value_size))
        return " × ".join(out)

    def key_name(self, i: int) -> str:
        """The i-th key, named exactly as redis-benchmark expands `__rand_int__` with -r:
        12 zero-padded digits. Preload and workload must agree on this, or the workload
        runs on an empty keyspace."""
        return f"{self.key_prefix}{i:012d}"


@dataclass
class WorkloadSpec(Record):
    tool: str = "redis-benchmark"  # redis-benchmark | memtier | rdb-load
    command: list[str] = field(default_factory=list)  # e.g. ["MSET", "key:__rand_int__", "v", ...]
    keyspace: int = 0              # -r: random key range (0 = no randomisation)
    clients: int = 50
    pipeline: int = 1
    threads: int = 1               # load generator threads
    requests: int = 0              # -n; 0 means run for duration_s
    duration_s: float = 20.0
    warmup_s: float = 2.0


    def shape(self, test: str | None = None) -> str:
        """The command's shape: "50 keys per MSET", "HGETALL", "RDB load"."""
        if self.tool == "rdb-load":
            return "RDB load"
        words = (test.split() if test else None) or [str(w) for w in self.command]
        if not words:
            return ""
        cmd, args = words[0].upper(), words[1:]
        if cmd in ("MSET", "MSETNX") and len(args) > 2:
            return f"{len(args) // 2} keys per {cmd}"
        if cmd in ("MGET", "DEL", "EXISTS", "UNLINK") and len(args) > 1:
            return f"{len(args)} keys per {cmd}"
        return cmd


def count(n: int) -> str:
    """10000000 -> "10M", 200000 -> "200K", 1500 -> "1.5K", 129 -> "129"."""
    for div, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "K")):
        if n >= div:
            v = n / div
            return f"{v:.0f}{suffix}" if v == int(v) or v >= 100 else f"{v:.3g}{suffix}"
    return str(n)


def size(n: int) -> str:
    """Value size as the seed tables write it: "10 B", "1000 B", "4 KiB"."""
    if n >= 4096 and n % 1024 == 0:
        return f"{n // 1024} KiB" if n < 1 << 20 or n % (1 << 20) else f"{n >> 20} MiB"
    return f"{n} B"


def binary_size(n: float) -> str:
    """Bytes as the cache sizes are written: "18 MiB", "1.1 GiB", "480 MiB"."""
    for unit, div in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= div * 0.95:
            v = n / div
            return f"{v:.0f} {unit}" if v >= 100 or v == int(v) else f"{v:.2g} {unit}"
    return f"{n:.0f} B"


@dataclass
class WorkingSet(Record):
    """The dataset against the last-level cache, as the case's size asked for it on the host
    that resolved it (collectors/workload/working_set.py; docs/cases.md "Sizes from the host's
    cache"). Kept in the resolved case, so a report says how large the dataset was against
    the cache of the machine that ran it."""
    llc_bytes: int | None = None    # one instance of the last-level cache; None: not known
    llc_name: str = "L3"            # its level: L3, or L2 where the host reports no L3
    llc_source: str = "host"        # host | --llc (a planned target machine's cache)
    multiple: float | None = None   # the size asked for at least this many times the cache
    floor_keys: int = 0             # the size's own key count: never fewer
    bytes: int = 0                  # the dataset's memory estimate (about +-30%)
    # what set the key count: "size" (its own), "llc" (raised to the multiple), or the
    # explicit source that won ("--set dataset.keys=1M", "matrix keys=1M")
    keys_from: str = "size"
    why_in_cache: str | None = None  # the size says why it may fit in the cache

    @property
    def ratio(self) -> float | None:
        """The dataset's bytes over the cache's."""
        return self.bytes / self.llc_bytes if self.llc_bytes and self.bytes else None

    def describe(self, keys: int) -> str:
        """"12M keys ≈ 1.1 GiB = 2.4× L3 of 480 MiB" (the cache's source when not the host's)."""
        head = f"{count(keys)} key{'s' * (keys != 1)} ≈ {binary_size(self.bytes)}"
        if not self.llc_bytes:
            return head + " (last-level cache not known)"
        if self.ratio is None:
            return f"{head} ({self.llc_name} of {binary_size(self.llc_bytes)})"
        src = "" if self.llc_source == "host" else f", {self.llc_source}"
        return f"{head} = {self.ratio:.2g}× {self.llc_name} of {binary_size(self.llc_bytes)}{src}"

    def why(self) -> str:
        """How the key count was chosen, in a few words."""
        if self.keys_from == "llc":
            return f"at least {self.multiple:g}× {self.llc_name}"
        if self.keys_from == "size":
            if self.multiple and self.llc_bytes:
                return f"the size's floor of {count(self.floor_keys)} keys, past {self.multiple:g}× {self.llc_name}"
            return self.why_in_cache or "the size's key count"
        return f"as given: {self.keys_from}"


@dataclass
class Case(Record):
    name: str = ""
    description: str = ""
    server: ServerSpec = field(default_factory=ServerSpec)
    dataset: DatasetSpec = field(default_factory=DatasetSpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    focus: list[str] = field(default_factory=list)  # functions to watch in profiles
    size: str = "default"          # which size knob was applied
    source: str = ""               # file it came from
    notes: list[str] = field(default_factory=list)  # e.g. what a suite import could not map
    matrix: dict[str, str] = field(default_factory=dict)  # axis -> chosen value, e.g. {"value": "100"}
    # --set FIELD=VALUE overrides applied last (after the size), e.g. {"workload.pipeline": 16}
    overrides: dict[str, Any] = field(default_factory=dict)
    # the dataset against the last-level cache (None: resolved before sizes knew the cache,
    # and then left out of the JSON, so an older manifest's case reads back as it was)
    working_set: WorkingSet | None = None
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"working_set"})

    def label(self, test: str | None = None) -> str:
        """What the case measures, as the seed PR tables name it: keyspace × value size,
        command shape, then what changes the server's work (pipeline, io-threads).

        "10M keys × 10 B, 50 keys per MSET"; "10K hashes × 100 fields × 100 B, HGETALL";
        "5M keys × 100 B, GET, pipeline 16, 2 io-threads". `test` names another command
        of the same load (redis-benchmark -t set,get: one row per test) for its row."""
        parts = [p for p in (self.dataset.shape(), self.workload.shape(test)) if p]
        if self.workload.pipeline > 1:
            parts.append(f"pipeline {self.workload.pipeline}")
        if self.server.io_threads > 1:
            # Redis counts the main thread in io-threads N
            parts.append(f"io-threads {self.server.io_threads}")
        return ", ".join(parts) or self.name
