"""The case model: what a workload is, as data classes. The seam between cases/*.yaml
(loaded and validated by collectors.workload.cases), the dataset loader, the runner, and
analysis, which reads the resolved case back from manifest.json ("case").
docs/cases.md documents the YAML."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class ServerSpec:
    config: dict[str, str] = field(default_factory=dict)  # passed as --name value
    io_threads: int = 1
    cluster: bool = False          # cluster-enabled yes (single node, all slots assigned)
    persistence: bool = False      # RDB/AOF off unless the case needs it


@dataclass
class DatasetSpec:
    kind: str = "none"             # none | strings | hashes | zsets
    keys: int = 0                  # number of top-level keys
    value_size: int = 100          # bytes per value (string value or hash field value)
    fields: int = 0                # hashes: fields per hash
    members: int = 0               # zsets: members per sorted set
    key_prefix: str = "key:"
    # What must hold after preload; the runner refuses to measure otherwise.
    expect_encoding: str | None = None   # e.g. "hashtable", "skiplist", "embstr"/"raw"

    def key_name(self, i: int) -> str:
        """The i-th key, named exactly as redis-benchmark expands `__rand_int__` with -r:
        12 zero-padded digits. Preload and workload must agree on this, or the workload
        runs on an empty keyspace."""
        return f"{self.key_prefix}{i:012d}"


@dataclass
class WorkloadSpec:
    tool: str = "redis-benchmark"  # redis-benchmark | memtier | rdb-load
    command: list[str] = field(default_factory=list)  # e.g. ["MSET", "key:__rand_int__", "v", ...]
    keyspace: int = 0              # -r: random key range (0 = no randomisation)
    clients: int = 50
    pipeline: int = 1
    threads: int = 1               # load generator threads
    requests: int = 0              # -n; 0 means run for duration_s
    duration_s: float = 20.0
    warmup_s: float = 2.0


@dataclass
class Case:
    name: str
    description: str
    server: ServerSpec
    dataset: DatasetSpec
    workload: WorkloadSpec
    focus: list[str] = field(default_factory=list)  # functions to watch in profiles
    size: str = "default"          # which size knob was applied
    source: str = ""               # file it came from
    notes: list[str] = field(default_factory=list)  # e.g. what a suite import could not map
    matrix: dict[str, str] = field(default_factory=dict)  # axis -> chosen value, e.g. {"value": "100"}
    # --set FIELD=VALUE overrides applied last (after the size), e.g. {"workload.pipeline": 16}
    overrides: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Case":
        """The case recorded in a manifest. Keys this version does not know (a newer
        writer's) are ignored here; the manifest keeps them in its raw "case" dict."""
        def known(klass: type, x: dict[str, Any]) -> dict[str, Any]:
            names = {f.name for f in fields(klass)}
            return {k: v for k, v in x.items() if k in names}
        d = known(cls, d)
        return cls(server=ServerSpec(**known(ServerSpec, d.pop("server", {}))),
                   dataset=DatasetSpec(**known(DatasetSpec, d.pop("dataset", {}))),
                   workload=WorkloadSpec(**known(WorkloadSpec, d.pop("workload", {}))), **d)
