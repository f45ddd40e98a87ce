"""A sweep or experiment over many runners (docs/sweeps.md, "Over many runners"), as records:
the plan's identity every point run records, the "fanout" entry of sweep.json and
experiment.json (what the two share: `FanoutEntry`; each file's own entry,
`sweep_manifest.SweepFanout` and `experiment.manifest.ExperimentFanout`, says what its
identity and whole plan are), and the `--emit-matrix` rows.

Written by collectors.sweep (fanout, directory, merge) and commands/experiment_fanout.py; read by merge and by
the sweep's report. Unknown keys are kept (Record.extra), as everywhere in sweep.json.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analysis.inputs.host import RunnerHost
from analysis.inputs.records import Record


@dataclass
class IdentityAxis(Record):
    name: str = ""
    kind: str = ""                   # "matrix" | "field"
    values: list[str] = field(default_factory=list)   # the labels, in sweep order


@dataclass
class IdentityPoint(Record):
    id: str = ""
    case: str = ""                   # as `stallscope run` takes it (name@axis=value)
    sets: dict[str, Any] = field(default_factory=dict)       # the point's --sets, as sweep.json's
    # The point's resolved case as JSON: Case.to_json() without "source" (the case file's
    # path on one runner). Kept as written, not as a Case: the plan id is its hash, and a
    # Case read back would write "source" again.
    resolved: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepIdentity(Record):
    """What one sweep (or one experiment part) measures, resolved; its SHA-256 is the plan
    id (collectors.sweep.fanout.identity and digest). Options and --sets as sweep.json has
    them; each host's own choices (estimates, pairing, --skip-unfit) are left out."""
    case: str = ""
    size: str = ""
    variants: list[str] = field(default_factory=list)
    axes: list[IdentityAxis] = field(default_factory=list)
    sets: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    points: list[IdentityPoint] = field(default_factory=list)


@dataclass
class PartIdentity(Record):
    id: str = ""
    sweep: SweepIdentity = field(default_factory=SweepIdentity)


@dataclass
class ExperimentIdentity(Record):
    """An experiment's plan: every part's sweep identity, and --size, --set, --only."""
    experiment: str = ""
    size: str = ""
    variants: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)      # the --set arguments, as given
    only: list[str] = field(default_factory=list)
    parts: list[PartIdentity] = field(default_factory=list)


def plan_identity(d: Any, where: str = "fanout.identity") -> SweepIdentity | ExperimentIdentity | None:
    """An identity as its writer made it: an experiment's names its experiment. (A merged
    experiment's part sweep.json names the experiment's plan, so a sweep.json may hold either.)"""
    if d is None:
        return None
    if isinstance(d, dict) and "experiment" in d:
        return ExperimentIdentity.from_json(d, where)
    return SweepIdentity.from_json(d, where)


@dataclass
class MergedPoint(Record):
    """A point `--merge` took. Its directory is the key "from" (a Python keyword, so it
    stays in `extra`; `source` reads it)."""
    point: str = ""
    host: RunnerHost | None = None   # where it ran

    @classmethod
    def of(cls, point: str, source: str, host: RunnerHost | None) -> MergedPoint:
        return cls(point=point, host=host, extra={"from": source})

    @property
    def source(self) -> str:
        return str(self.extra.get("from", ""))


@dataclass
class FanoutEntry(Record):
    """sweep.json's or experiment.json's "fanout". A point run (`--point`) writes `plan`,
    `identity`, `point`, `host` (where it ran) and `whole` (the whole plan's file(s), what
    --merge assembles); a merged directory (`--merge`) writes `plan`, `identity`, `at` and
    `merged`. `identity` and `whole` are typed by each file's subclass."""
    OMIT_IF_NONE = frozenset({"point", "host", "whole", "at", "merged"})
    plan: str = ""                   # 16 hex digits of the identity's SHA-256
    identity: Record | None = None
    point: str | None = None         # a point run's point id
    host: RunnerHost | None = None   # where a point run ran
    whole: Record | None = None
    at: str | None = None            # when --merge assembled it
    merged: list[MergedPoint] | None = None

    @property
    def is_point_run(self) -> bool:
        return bool(self.plan and self.point)


@dataclass
class MatrixEntry(Record):
    """One row of `--emit-matrix`'s `{"include": [...]}` (a GitHub Actions matrix)."""
    OMIT_IF_NONE = frozenset({"part"})
    point: str
    labels: str                      # "dataset.keys=1M,value=10"
    estimate_s: int                  # the emitting host's estimate, whole seconds
    memory_bytes: int
    part: str | None = None          # an experiment's part
