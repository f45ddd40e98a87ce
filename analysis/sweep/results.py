"""The sweep results model: one row per point (the seed-shaped table), as data.

analysis.sweep.point_rows fills it from a sweep directory; analysis.sweep.markdown/html and
the crossover plot render it; `SweepResults.to_json()` is the sweep's results.json
(schema "stallscope.sweep-results/1", docs/sweeps.md). Numbers stay numbers here; the
renderers format them.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from analysis.sweep.mountain import Mountain
from analysis.compare.results import ChangeOut, FdrFamily, MetricRow, Side
from analysis.inputs.host import RunnerHost
from analysis.inputs.records import Record, plain
from analysis.sweep.sweep_manifest import PointIdentity

SCHEMA = "stallscope.sweep-results/1"


@dataclass
class LookupCost:
    """The lookup's CPU time per operation (ns/op) at one point, with its change: flat, or
    cumulative when the lookup is inlined (analysis/sweep/point_rows.py chooses)."""
    function: str = ""
    thread: str = ""                 # the thread view of the point's profile section
    command: str = ""                # what one operation is ("MSET")
    base: Side | None = None
    cand: Side | None = None
    change: ChangeOut | None = None
    reason: str = ""                 # why there is none
    measure: str = "flat"            # "flat" | "cumulative"
    # the function's verdict as the point's report gives it (its Judgement: "undersampled"
    # where the statistic's "unstable" is counting noise); "" in sweeps written before
    verdict: str = ""


@dataclass
class PointRow(PointIdentity):
    status: str = "pending"          # the point's state in sweep.json
    keys: int = 0
    dataset_bytes: int = 0
    run_dir: str | None = None       # relative to the sweep directory
    report: str | None = None        # the point's report directory, relative to the sweep report
    method: str = ""                 # how the headline was measured
    metric: MetricRow | None = None  # the headline: throughput, paired throughput or load time
    best: dict[str, float] = field(default_factory=dict)   # variant -> best rep (min load time)
    lookup: LookupCost | None = None
    reason: str = ""                 # why the row has no numbers (skipped, failed, not run)
    notes: list[str] = field(default_factory=list)
    host: RunnerHost | None = None   # where it ran (None: not run)


@dataclass
class AxisOut:
    name: str
    kind: str
    values: list[str]
    keyspace: bool = False


@dataclass
class FanoutSummary(Record):
    """results.json "fanout" of a sweep run over many runners: the plan's id and the point
    (one point's run, `--point`) or the merged points (a sweep assembled by `--merge`)."""
    OMIT_IF_NONE = frozenset({"point", "merged"})
    plan: str = ""
    point: str | None = None
    merged: list[str] | None = None


@dataclass
class SweepResults:
    sweep_id: str
    created: str
    case: str
    size: str
    base: str
    cand: str
    axes: list[AxisOut]
    points: list[PointRow]
    x_axis: str | None               # the axis the crossover plot runs along
    l3_bytes: int | None = None
    noise: float = 0.03              # the relative noise waterline of the verdicts
    regression: float = 0.05
    confidence: float = 0.95
    status: str = ""
    command: list[str] = field(default_factory=list)
    sets: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # a sweep of more than two variants: the other candidates' reports, each against the
    # same baseline (name -> report directory relative to this one, "vs-NAME")
    others: dict[str, str] = field(default_factory=dict)
    # run over many runners (None, written {}, for a sweep run whole)
    fanout: FanoutSummary | None = None
    # the points' headline verdicts judged together (None: fewer than two to judge)
    fdr: FdrFamily | None = None
    # each focus function's out-of-cache cost against the keys (analysis/sweep/mountain.py)
    mountain: Mountain = field(default_factory=lambda: Mountain(False))
    schema: str = SCHEMA

    def to_json(self) -> dict[str, Any]:
        d = plain(self)
        d["fanout"] = self.fanout.to_json() if self.fanout else {}
        return json_clean({"schema": d.pop("schema"), **d})

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    def axis(self, name: str) -> AxisOut:
        return next(a for a in self.axes if a.name == name)


def json_clean(x: Any) -> Any:
    """JSON-safe and stable, as results.json is: no inf/NaN, floats to 12 digits."""
    if isinstance(x, float):
        return float(f"{x:.12g}") if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): json_clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_clean(v) for v in x]
    return x
