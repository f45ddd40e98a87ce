"""What the history keeps of one run: results.json (docs/results-json.md) flattened into
series points, one per variant role ("base" / "cand") and metric, plus the in-run change
of each series. Series keys (docs/history.md):

  throughput:<test>           ops/s, higher is better (unpaired reps)
  paired:<test>               ops/s from paired windows
  p50 latency:<test> ...      ms
  cpu_per_op:all              CPU time per operation, all samples (ns/op)
  cpu_per_op:<function>       a focus or top function's flat CPU time per operation (ns/op)
  cum_per_op:<function>       a focus function's cumulative CPU time per operation (ns/op)
  flat_share:<function>       % of samples, flat (focus and top functions); cum_share:<function>
                              cumulative (focus functions)
  tma:<node>                  a TMA node (% of its domain)
  stall:<function>            a function's out-of-cache CPU time per operation (its flat cost
                              at the run's size minus its in-cache control's, ns/op; the value
                              the difference of means, low/high its interval, not a spread);
                              stall:all for all samples; in-run change: the share of base's
                              stall the change removed, as a fall (-0.79: 79% removed)
  new:<function>, gone:<function>   in-run changes only: a top mover the run calls new in
                              the candidate (or gone from it), its own CPU time per operation
                              as a share of the baseline's whole (rel), no interval

Values are the side's median; low/high the spread of its reps (min, max).

The document is read typed, as the results model declares it (analysis/compare/results.py,
through the one converter analysis/inputs/records.convert): the sections the history reads
(`Sections`) with the very types of `Results`' fields. Fields a newer results.json adds are
ignored; fields an older one lacks leave their series out (the model's optional fields,
e.g. `base_flat_ns` before per-operation costs, `per_op_total`, `tma.funnel`). A section
that lacks a field the model requires is not a results.json this stallscope can read: a
RecordError names the document and the field, and the run is not stored. Sections the
history does not read (`summary`, `settings`, ...) are not converted, so a schema-1
results.json, whose `summary` items the model no longer declares, is still stored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from analysis.compare.results import CaseInfo, FunctionRow, MetricRow, ProfileSection, TmaSection
from analysis.compare.stall_section import StallSection
from analysis.compare.values import ChangeOut
from analysis.inputs.records import convert


@dataclass(frozen=True)
class Point:
    series: str
    variant: str                 # "base" | "cand": the role, stable across runs of a job
    value: float
    low: float | None
    high: float | None
    n: int
    unit: str
    higher_is_better: bool
    values: list[float] | None = None     # the reps' values, when results.json lists them


@dataclass(frozen=True)
class InRunChange:
    series: str
    rel: float | None            # cand vs base, a ratio - 1 on the log scale
    rel_low: float | None
    rel_high: float | None
    verdict: str


@dataclass
class Sections:
    """The sections of results.json the history reads, each typed as `Results` declares it
    (tests/test_history_extract.py holds the two to the same types)."""
    throughput: list[MetricRow] = field(default_factory=list)
    latency: list[MetricRow] = field(default_factory=list)
    paired: list[MetricRow] = field(default_factory=list)
    profile: ProfileSection = field(default_factory=lambda: ProfileSection(False))
    tma: TmaSection = field(default_factory=lambda: TmaSection("absent"))
    stalls: StallSection = field(default_factory=lambda: StallSection(False))

    @classmethod
    def of(cls, results: Any, where: str = "results.json") -> "Sections":
        """The typed sections of a results.json document (a `Sections` as it is); RecordError
        names `where` and the field when a section does not fit the model."""
        return results if isinstance(results, Sections) else convert(results, cls, where)


@dataclass
class VariantCommit:
    """Of a variant as results.json's environment lists it (BuildFacts), the commit only."""
    commit: str | None = None


@dataclass
class Identity:
    """Who a results.json is: the fields the history keys and labels a run by, typed as
    `Results` declares them and checked strictly (a run stored under a wrong key is lost to
    its series). The environment's sections are stored as the document has them: the store
    keeps what the report said."""
    run_id: str
    created: str = ""
    case: CaseInfo = field(default_factory=CaseInfo)
    base: str = ""
    cand: str = ""
    variants: dict[str, VariantCommit] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Any, where: str = "results.json") -> "Identity":
        """RecordError names `where` and the field when the document does not fit."""
        env = results.get("environment") or {}
        doc = {k: results[k] for k in ("run_id", "created", "case", "base", "cand") if results.get(k) is not None}
        return convert({**doc, "variants": env.get("variants") or {}}, cls, where, strict=True)

    def commits(self) -> dict[str, str]:
        """variant -> commit, for the variants built from a commit."""
        return {v: b.commit for v, b in self.variants.items() if b.commit}


# A side is a results Side (throughput, profile) or a TMA FunnelSide: both have n, median,
# min, max and values.
def _side(series: str, variant: str, side: Any, unit: str, hib: bool) -> Point | None:
    if side is None or side.median is None or not side.n:
        return None
    vals = side.values
    vals = [float(v) for v in vals if isinstance(v, (int, float))] if isinstance(vals, list) else None
    return Point(series, variant, float(side.median), _f(side.min), _f(side.max),
                 int(side.n or 0), unit, hib, vals)


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) else None


def _change(series: str, ch: ChangeOut | None) -> InRunChange | None:
    if ch is None:
        return None
    return InRunChange(series, _f(ch.rel), _f(ch.rel_ci_low), _f(ch.rel_ci_high), str(ch.verdict or ""))


FOCUS_SERIES = (("cpu_per_op", "base_flat_ns", "cand_flat_ns", "flat_ns_change", "ns/op"),
                ("cum_per_op", "base_cum_ns", "cand_cum_ns", "cum_ns_change", "ns/op"),
                ("flat_share", "base_flat", "cand_flat", "flat_change", "%"),
                ("cum_share", "base_cum", "cand_cum", "cum_change", "%"))
# The run's top functions (its top movers: every function with a share of the CPU large
# enough to be one, ranked by how much it moved): their flat cost per operation and share,
# so each is a series of its own (function_series.py tests them together).
MOVER_SERIES = tuple(s for s in FOCUS_SERIES if s[0] in ("cpu_per_op", "flat_share"))

# (series, base side, cand side, change, unit, higher_is_better)
Row = tuple[str, Any, Any, Any, str, bool]


def _rows(sec: Sections) -> Iterator[Row]:
    """(series, base side, cand side, change, unit, higher_is_better) of every metric row."""
    for rows, prefix in ((sec.throughput, "throughput"), (sec.paired, "paired"), (sec.latency, None)):
        for row in rows or []:
            yield (f"{prefix or row.metric}:{row.test}", row.base, row.cand, row.change, row.unit,
                   bool(row.higher_is_better))
    prof = sec.profile or ProfileSection(False)
    total = prof.per_op_total
    if total is not None:
        yield "cpu_per_op:all", total.base, total.cand, total.change, total.unit, False
    focus = prof.focus or []
    yield from _function_rows(focus, FOCUS_SERIES)
    names = {f.name for f in focus}
    yield from _function_rows([f for f in prof.movers or [] if f.name not in names], MOVER_SERIES)
    funnel = sec.tma.funnel if sec.tma is not None else None
    for r in (funnel.rows if funnel is not None else None) or []:
        ch = InRunChange(f"tma:{r.node}", None, None, None, str(r.verdict or ""))
        yield f"tma:{r.node}", r.base, r.cand, ch, r.unit or "%", bool(r.higher_is_better)


def _function_rows(rows: list[FunctionRow], series: tuple) -> Iterator[Row]:
    for f in rows:
        for prefix, b, c, ch, unit in series:
            yield f"{prefix}:{f.name}", getattr(f, b), getattr(f, c), getattr(f, ch), unit, False


def one_sided(results: Any, where: str = "results.json") -> list[InRunChange]:
    """The top movers the run calls new in the candidate or gone: new code's own price is
    what moved when, say, a commit swaps in a slower hash function; a relative change of a
    cost that was 0 has no ratio, so it is given against the baseline's whole CPU time per
    operation (+0.47: the new function costs 47% of what every operation cost before)."""
    prof = Sections.of(results, where).profile or ProfileSection(False)
    base_total = prof.per_op_total.base if prof.per_op_total is not None else None
    total = base_total.median if base_total is not None else None
    out = []
    for f in prof.movers or []:
        verdict = f.flat_verdict.verdict if f.flat_verdict is not None else None
        if verdict not in ("new in candidate", "gone") or not total:
            continue
        side = f.cand_flat_ns if verdict == "new in candidate" else f.base_flat_ns
        if side is None or side.median is None:
            continue
        sign = 1 if verdict == "new in candidate" else -1
        prefix = "new" if sign > 0 else "gone"
        out.append(InRunChange(f"{prefix}:{f.name}", sign * float(side.median) / float(total),
                               None, None, verdict))
    return out


def extract(results: Any, where: str = "results.json") -> tuple[list[Point], list[InRunChange]]:
    """The points and in-run changes of one results.json document (or its `Sections`);
    `where` names the document in a RecordError (its file, or its run)."""
    sec = Sections.of(results, where)
    points, changes = [], []
    for series, base, cand, ch, unit, hib in _rows(sec):
        for variant, side in (("base", base), ("cand", cand)):
            p = _side(series, variant, side, unit, hib)
            if p is not None:
                points.append(p)
        c = ch if isinstance(ch, InRunChange) else _change(series, ch)
        if c is not None and (base is not None or cand is not None):
            changes.append(c)
    stall_points, stall_changes = stalls(sec.stalls)
    return points + stall_points, changes + one_sided(sec) + stall_changes


def stalls(sec: StallSection | None) -> tuple[list[Point], list[InRunChange]]:
    """The stall section's flat rows (and all samples) as series: each variant's out-of-cache
    cost per operation with its interval, and the share of base's the change removed."""
    points: list[Point] = []
    changes: list[InRunChange] = []
    for row in (sec.rows if sec is not None and sec.available else []):
        if row.kind not in ("flat", "total"):
            continue
        series = f"stall:{'all' if row.kind == 'total' else row.function}"
        for variant, side in (("base", row.base), ("cand", row.cand)):
            i = side.out_of_cache
            points.append(Point(series, variant, float(i.value), i.low, i.high, side.large_n,
                                "ns/op", False))
        share = row.share_removed
        if share is not None and share.low is not None:
            changes.append(InRunChange(series, -share.value, -share.high, -share.low,
                                       "improvement" if row.removed.decided and row.removed.value > 0 else
                                       "regression" if row.removed.decided else "no change"))
    return points, changes
