"""What each row of a run that decides aimed at, and whether it got there: the rows a look
waits for (analysis/sequential.py, collectors/runner/looks.py) and the rows a report marks
as having missed their target.

The targets (analysis/inputs/option_specs.py; collectors/runner/targets.py plans for them):
the throughput row ±2%; each focus function's flat and cumulative CPU time per operation
±5%, where the function holds 5% of the samples or more on either side; every other
function of 5% or more, a top mover, ±10%. A row **reached** its target when its detectable
size (the "could see ±X% (80% power)" of its verdict, the upward ratio) is at most the target;
a row **decided** its question when its verdict is a change (improvement or regression, minor
or not) or the function is new or gone: a change found needs no size. A row that did neither
**missed** its target; the report says so beside its verdict and results.json in its
`target_missed`.

A look waits for the throughput row and the focus rows (`open_rows`); the top movers report
what they reached.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

from analysis.compare.results import FunctionRow, Judgement, MetricRow, Results
from analysis.inputs.manifest import PrecisionPlan
from analysis.inputs.option_specs import TARGET_FOCUS, TARGET_MOVERS, TARGET_SHARE, TARGET_THROUGHPUT
from analysis import sequential
from analysis.stats import DECIDED

ANSWERS = (*DECIDED, "new in candidate", "gone")


@dataclass(frozen=True)
class RowTarget:
    """One row's target and what it reached."""
    name: str                  # "throughput", "lookupKey (flat)"
    kind: str                  # throughput | focus | mover
    target: float              # the detectable size it aimed at (a fraction: 0.05)
    detectable: float | None   # what it could see (None: no interval)
    verdict: str
    change: float | None = None   # the change as it stands (a fraction of the ratio)

    @property
    def decided(self) -> bool:
        return self.verdict in ANSWERS

    @property
    def reached(self) -> bool:
        return self.detectable is not None and self.detectable <= self.target + 1e-12

    @property
    def settled(self) -> bool:
        return self.decided or self.reached

    def text(self) -> str:
        """"lookupKey (flat) could see ±6.9% (target ±5%)": the size rounded up, so a row that
        missed never reads as its target (±5.03% is "±5.1%")."""
        seen = ("no interval" if self.detectable is None
                else f"could see ±{math.ceil(self.detectable * 1000 - 1e-9) / 10:.1f}%")
        return f"{self.name} {seen} (target ±{self.target:.0%})"


def main_row(r: Results) -> MetricRow | None:
    """The run's throughput row: the paired one, else the first load-generator row."""
    return r.paired[0] if r.paired else (r.throughput[0] if r.throughput else None)


def _share(row: FunctionRow, k: str) -> float:
    """The function's larger median share of the samples, % (flat or cumulative)."""
    return max(getattr(row, f"base_{k}").median or 0, getattr(row, f"cand_{k}").median or 0)


def function_rows(rows: list[FunctionRow]) -> Iterator[tuple[FunctionRow, str]]:
    """(row, "flat" | "cum") of each function holding TARGET_SHARE of the samples or more on
    either side whose CPU time per operation was measured: the rows with a target."""
    for row in rows:
        for k in ("flat", "cum"):
            if (getattr(row, f"base_{k}_ns") is not None and getattr(row, f"cand_{k}_ns") is not None
                    and _share(row, k) >= TARGET_SHARE * 100):
                yield row, k


def _function(row: FunctionRow, k: str, kind: str, target: float) -> RowTarget:
    j: Judgement | None = getattr(row, f"{k}_verdict")
    ch = getattr(row, f"{k}_ns_change")
    verdict = j.verdict if j is not None else ch.verdict
    size = (j.detectable if j is not None and j.detectable_unit == "rel" else ch.detectable)
    return RowTarget(f"{row.name} ({k})", kind, target, size, verdict, ch.rel)


def rows(r: Results) -> list[RowTarget]:
    """Every row with a target: throughput, the focus rows, the top movers' rows."""
    out = []
    main = main_row(r)
    if main is not None:
        out.append(RowTarget("throughput", "throughput", TARGET_THROUGHPUT, main.change.detectable,
                             main.change.verdict, main.change.rel))
    focus = {f.name for f in r.profile.focus}
    out += [_function(f, k, "focus", TARGET_FOCUS) for f, k in function_rows(r.profile.focus)]
    out += [_function(f, k, "mover", TARGET_MOVERS)
            for f, k in function_rows([m for m in r.profile.movers if m.name not in focus])]
    return out


@dataclass(frozen=True)
class Reach:
    """Where a run can still get to: its reps now and at its level, the reps its plan and
    budget leave it and the level it would end at (a look's futility check)."""
    n: int
    level: float
    n_end: int
    level_end: float


def out_of_reach(t: RowTarget, reach: Reach | None) -> bool:
    """An open row that, projected to the run's last reachable reps at its spread now, would
    neither reach its target nor be decided (analysis/sequential.out_of_reach): waiting for it
    buys nothing."""
    if reach is None or t.settled or t.detectable is None:
        return False
    return sequential.out_of_reach(t.detectable, t.change, t.target, reach.n, reach.n_end,
                                   reach.level, reach.level_end)


def open_rows(r: Results, reach: Reach | None = None) -> list[RowTarget]:
    """The rows a look waits for (throughput and focus) that are neither decided nor at
    their target, nor, for a focus row, out of its reach by the run's end (`reach`; a row the
    plan cannot get to its target reports what it reached, marked as having missed it): the
    run has answered when there are none. The throughput row is waited for to the plan's end:
    its reps are what the plan and budget were made for, and a look that gave it up at 4 reps
    printed ±14% where the 8 reps left in the budget would have given about ±2% (a default A/A
    on the 480 MiB Xeon guest, 2026-12-07). Stopping for futility spends no alpha: every
    printed interval keeps its level (docs/statistics.md, "Stop when answered")."""
    return [t for t in rows(r) if t.kind != "mover" and not t.settled
            and (t.kind == "throughput" or not out_of_reach(t, reach))]


def floor_reps(plan: PrecisionPlan | None, made: int | None) -> int | None:
    """The reps a run's intervals are judged against sequential.FLOOR_REPS with: its plan's,
    or where its budget ended it before the plan, the paired reps it `made` (the looks'
    coverage was simulated for plans run to their end or stopped by a look)."""
    if plan is None or plan.planned is None:
        return None
    if plan.ended_by == "budget" and made:
        return min(plan.planned, made)
    return plan.planned


def mark(r: Results, reps: int | None = None) -> list[RowTarget]:
    """Set every targeted row's `target` and `target_missed` (results.json), and in a run of
    `reps` below sequential.FLOOR_REPS (floor_reps) its `level_kept` (the lowest coverage
    such a plan's intervals kept in simulation: each interval may hold less than its level);
    the rows that missed, in order."""
    found = rows(r)
    by_name = {t.name: t for t in found}
    kept = sequential.short_coverage(reps)
    main = main_row(r)
    if main is not None and "throughput" in by_name:
        t = by_name["throughput"]
        main.target, main.target_missed, main.level_kept = t.target, not t.settled, kept
    focus = {f.name for f in r.profile.focus}
    movers = [m for m in r.profile.movers if m.name not in focus]
    for f, k in [*function_rows(r.profile.focus), *function_rows(movers)]:
        t, j = by_name.get(f"{f.name} ({k})"), getattr(f, f"{k}_verdict")
        if t is not None and j is not None:
            j.target, j.target_missed, j.level_kept = t.target, not t.settled, kept
    return [t for t in found if not t.settled]
