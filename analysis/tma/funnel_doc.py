"""The funnel as data (schema stallscope.tma-funnel/1, docs/tma.md): what `Funnel.to_json()`
writes, as data classes, so results.json's `tma.funnel` is typed end to end and its
renderers (analysis/report/funnel_md, plots, the summary) read fields, not keys.

Field order is the JSON's key order: `dataclasses.asdict(doc) == funnel.to_json()`.
`FunnelDoc.of(funnel)` and a results.json read (analysis/inputs/records.convert) build it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analysis.inputs.records import convert


@dataclass
class FunnelSide:
    """One node on one side: its per-run values and their summary (% of its domain)."""
    n: int = 0
    values: list[float] = field(default_factory=list)
    median: float | None = None
    min: float | None = None
    max: float | None = None
    mad: float | None = None
    multiplex: float | None = None   # lowest share of time the counters ran (%), None: full
    estimate: bool = False           # multiplexed: the values are estimates
    slots_values: list[float] = field(default_factory=list)
    slots_median: float | None = None
    excluded: list[str] = field(default_factory=list)    # implausible values left out
    intervals: list[str] = field(default_factory=list)   # per value: its run's intervals


@dataclass
class FunnelRowDoc:
    node: str                        # dotted path
    leaf: str
    level: int
    domain: str | None
    unit: str
    base: FunnelSide
    cand: FunnelSide
    delta_pp: float | None           # in delta_unit: pp; % (a ratio node, log scale); MPKI
    ci_pp: list[float] | None
    confidence: float | None
    verdict: str
    reason: str
    significant: bool
    notable: bool
    direction: str | None
    slots_delta_pp: float | None
    higher_is_better: bool
    delta_unit: str = "pp"
    stage2: bool = False             # one of Arm's Stage-2 metric groups
    memory: bool = False             # one of the catalogue's memory-stall nodes


@dataclass
class FunnelTree:
    """The top-down tree the rows are nodes of (the catalogue)."""
    vendor: str = "intel"
    model: str = ""
    title: str = ""
    slots_per_cycle: Any = None
    roots: list[str] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)


@dataclass
class FunnelRuns:
    base: int = 0
    cand: int = 0


@dataclass
class FunnelDoc:
    schema: str
    base_label: str
    cand_label: str
    tree: FunnelTree | None
    base_sources: list[str] = field(default_factory=list)
    cand_sources: list[str] = field(default_factory=list)
    runs: FunnelRuns = field(default_factory=FunnelRuns)
    method: str = ""
    rows: list[FunnelRowDoc] = field(default_factory=list)       # the rows shown
    all_rows: list[FunnelRowDoc] = field(default_factory=list)   # every node compared
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interval: str = "mean"           # which interval(s) of an -I file a value is of (absent
                                     # from results.json before it was said: the plain mean)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "FunnelDoc":
        return convert(d, cls, "funnel")
