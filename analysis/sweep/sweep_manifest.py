"""sweep.json: what a sweep is (case, variants, axes, sweep-wide --set), its points and the
state of each, written by collectors.sweep after every change of state and read here.

A point is an ordinary run directory (docs/run-directory.md) inside the sweep directory;
its manifest.json carries a "sweep" entry (sweep id, point id, labels) so anything that
reads runs can group them. Unknown fields are kept (Record.extra), as in manifest.json.
A sweep run over many runners (`--point`, `--merge`) adds "fanout", a `SweepFanout`
(analysis/sweep/fanout_entry.py: the plan's identity, the point and where it ran, the whole
sweep's sweep.json; docs/sweeps.md, "Over many runners").
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from analysis.errors import UserError
from analysis.inputs.host import HostSummary, RunnerHost
from analysis.inputs.layout import SWEEP_JSON
from analysis.inputs.manifest import Resume
from analysis.inputs.option_specs import SWEEP_PAIRINGS_V1
from analysis.inputs.records import Record, RecordError
from analysis.inputs.rundir import RunDirError, read_json, write_json
from analysis.sweep.fanout_entry import ExperimentIdentity, FanoutEntry, SweepIdentity, plan_identity
from analysis.sweep.sweep_options import SweepOptions

# 2: options.pairing in the run's words (auto | paired | unpaired); schema 1 said paired for
# auto and interleaved for unpaired (migrated on read, _v1_to_v2)
SCHEMA = 2
POINT_STATES = ("pending", "running", "complete", "incomplete", "failed", "interrupted", "skipped")


class SweepError(UserError):
    """A sweep directory that cannot be read or run; the message names the file."""


@dataclass
class SweepAxis(Record):
    name: str                        # a matrix axis ("keys") or a case field ("dataset.keys")
    kind: str                        # "matrix" | "field"
    values: list[str] = field(default_factory=list)   # labels, in sweep order
    keyspace: bool = False           # dataset.keys changes along it (L3 marked on plots)


@dataclass
class Estimate(Record):
    """The plan's numbers for one point (collectors.sweep.estimate)."""
    time_s: float = 0.0              # wall time, preload included when it is not shared
    memory_bytes: int = 0            # peak resident memory of the server(s)
    dataset_bytes: int = 0           # keyspace_bytes_estimate of the point's case
    keys: int = 0
    fits: bool = True
    method: str = ""                 # "paired windows (one process)", "interleaved reps" ...
    paired: bool = False
    preload_shared_with: str | None = None   # a point before it with the same dataset


@dataclass
class PointIdentity:
    """What names a point of a sweep, declared once: the plan's PointSpec
    (collectors/sweep/axes.py), sweep.json's SweepPoint and the results' PointRow
    (analysis/sweep/results.py) are this and what each adds."""
    index: int
    id: str                          # p01-keys-1M-value-10: the directory name part
    labels: dict[str, str] = field(default_factory=dict)   # axis -> value label
    x: dict[str, float | None] = field(default_factory=dict)  # axis -> number (None: categorical)
    case: str = ""                   # the case as `stallscope run` takes it (name@axis=value)

    def identity(self) -> dict[str, Any]:
        """The identity fields as keyword arguments (copies), to build another shape."""
        return {f.name: copy.copy(getattr(self, f.name)) for f in fields(PointIdentity)}


@dataclass
class SweepPoint(PointIdentity, Record):
    sets: dict[str, Any] = field(default_factory=dict)     # every --set of this point
    estimate: Estimate = field(default_factory=Estimate)
    status: str = "pending"
    reason: str | None = None
    run_dir: str | None = None       # relative to the sweep directory
    started: str | None = None
    finished: str | None = None
    took_s: float | None = None
    # where it ran (a fanned-out sweep's points differ); None: not run yet
    host: RunnerHost | None = None

    def __post_init__(self) -> None:
        if self.status not in POINT_STATES:
            raise RecordError(f"point status {self.status!r} not one of {POINT_STATES}")


@dataclass
class SweepManifest(Record):
    OMIT_IF_NONE = frozenset({"fanout"})
    sweep_id: str
    created: str
    command: list[str]
    case: str                        # as given (may fix matrix values: name@axis=value)
    size: str
    variants: list[str]              # NAME=SPEC, as given; the first is the baseline
    axes: list[SweepAxis] = field(default_factory=list)
    points: list[SweepPoint] = field(default_factory=list)
    sets: dict[str, Any] = field(default_factory=dict)     # sweep-wide --set
    options: SweepOptions = field(default_factory=SweepOptions)   # what was asked (resume reuses it)
    host: HostSummary = field(default_factory=HostSummary)   # the planning host (memory, L3)
    status: str = "planned"          # planned | running | complete | incomplete | interrupted
    reason: str | None = None
    resumes: list[Resume] = field(default_factory=list)
    schema: int = SCHEMA
    fanout: SweepFanout | None = None    # a sweep over many runners: a point run or a merge

    def __post_init__(self) -> None:
        # every sweep.json read, the ones nested in a fanout or an experiment's too
        if isinstance(self.schema, int) and self.schema == 1:
            _v1_to_v2(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "") -> SweepManifest:
        """As every Record, but "fanout" read by SweepFanout.from_json (its identity is a
        sweep's or an experiment's; the one converter would take the first type)."""
        if not isinstance(d, dict) or d.get("fanout") is None:
            return super().from_json(d, where)
        m = super().from_json({k: v for k, v in d.items() if k != "fanout"}, where)
        m.fanout = SweepFanout.from_json(d["fanout"], f"{where}.fanout" if where else "fanout")
        return m

    @property
    def variant_names(self) -> list[str]:
        return [v.split("=", 1)[0] for v in self.variants]

    def point(self, point_id: str) -> SweepPoint:
        for p in self.points:
            if p.id == point_id:
                return p
        raise KeyError(f"sweep {self.sweep_id} has no point {point_id}")


@dataclass
class SweepFanout(FanoutEntry):
    """sweep.json "fanout" (FanoutEntry): a point run's `whole` is the whole sweep's
    sweep.json. `identity` is the sweep's, except in the part of a merged experiment, whose
    plan (and identity) is the experiment's."""
    identity: SweepIdentity | ExperimentIdentity | None = None
    whole: SweepManifest | None = None

    @classmethod
    def from_json(cls, d: Any, where: str = "fanout") -> SweepFanout:
        if not isinstance(d, dict):
            return super().from_json(d, where)
        f = super().from_json({k: v for k, v in d.items() if k != "identity"}, where)
        f.identity = plan_identity(d.get("identity"), f"{where}.identity")
        return f


def read_dir_json(directory: str | Path, name: str, what: str, marker: str) -> tuple[Path, dict]:
    """`name` (sweep.json, experiment.json) of a directory as a JSON object that holds
    `marker`; SweepError saying which file and what it lacks otherwise."""
    path = Path(directory) / name
    if not path.is_file():
        raise SweepError(f"{path}: no {name} here; is {directory} a stallscope {what} directory?")
    try:
        d = read_json(path)
    except RunDirError as e:
        raise SweepError(str(e)) from None
    if not isinstance(d, dict) or marker not in d:
        raise SweepError(f"{path}: not a stallscope {what} (no {marker!r} field)")
    return path, d


def load_sweep(sweep_dir: str | Path) -> SweepManifest:
    path, d = read_dir_json(sweep_dir, SWEEP_JSON, "sweep", "schema")
    if not isinstance(d["schema"], int) or d["schema"] > SCHEMA:
        raise SweepError(f"{path}: sweep schema {d['schema']!r} is newer than this stallscope "
                         f"understands ({SCHEMA}); upgrade stallscope to read it")
    try:
        return SweepManifest.from_json(d)
    except RecordError as e:
        raise SweepError(f"{path}: invalid sweep manifest: {e}") from None


def _v1_to_v2(m: SweepManifest) -> None:
    """Schema 1's sweep words for pairing as the run's: paired (where it fits) is auto,
    interleaved is unpaired."""
    o = m.options
    o.pairing = SWEEP_PAIRINGS_V1.get(o.pairing, o.pairing)
    m.schema = 2


def save_sweep(sweep_dir: str | Path, m: SweepManifest) -> None:
    """sweep.json, replaced atomically (a killed sweep leaves the old or the new file)."""
    write_json(Path(sweep_dir) / SWEEP_JSON, m.to_json())
