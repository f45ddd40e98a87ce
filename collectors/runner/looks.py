"""A run that decides looks at itself while it runs and stops when it has answered
(analysis/sequential.py; docs/statistics.md, "Stop when answered").

At each planned count of paired reps (manifest.json `precision.looks`) the run is compared
as `stallscope compare` compares it (analysis.compare.engine.analyse), at the look's
confidence 1 - alpha_j. It has answered when the throughput row and every focus row that
holds 5% of the samples or more is either decided or has reached its target
(analysis/compare/row_targets.py): the look records its level as the report's, and the
reps still pending are dropped. A look that cannot compare (a parse error, no paired row
yet) spends its alpha and lets the run go on. The plan's last look is at its last rep:
whatever it finds, the run ends there, read at that look's level.
"""
from __future__ import annotations

from typing import Callable

from analysis import sequential
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.row_targets import Reach, RowTarget, open_rows
from analysis.inputs.manifest import PrecisionPlan
from analysis.inputs.rundir import RunDir
from analysis.intervals import level_text


def plan_looks(plan: PrecisionPlan) -> None:
    """A new run's looks and their alphas, from its planned reps (kept as they are on resume)."""
    if not plan.looks and plan.planned:
        plan.looks = sequential.looks(plan.planned)
        plan.alphas = sequential.spending(plan.looks)


def due(plan: PrecisionPlan, done: int) -> bool:
    """A look is due: `done` paired reps reach the next planned look's count."""
    return plan.made < len(plan.looks) and done >= plan.looks[plan.made]


def judge(run: RunDir, alpha: float, reach: Reach | None = None) -> list[RowTarget] | None:
    """The rows still open when the run is compared at 1 - alpha (and within `reach`); None
    when it cannot be compared yet (the look then finds nothing)."""
    try:
        results = analyse(run, CompareOptions(confidence=1 - alpha, run_level=False))
    except Exception:       # noqa: BLE001 - a look must never end the run it watches
        return None
    if not (results.paired or results.throughput):
        return None
    return open_rows(results, reach)


def reach(plan: PrecisionPlan, done: int, alpha: float, units_left: int | None) -> Reach:
    """The run's reach at a look: `done` reps at 1 - alpha now; at most `units_left` more
    (what its budget leaves at its pace; None: the plan's), at the level of the last look
    they reach, or the alpha the looks before it leave."""
    n_end = plan.planned if units_left is None else min(plan.planned, done + units_left)
    ahead = [i for i, c in enumerate(plan.looks) if done < c <= n_end]
    passed = max((i for i, c in enumerate(plan.looks) if c <= done), default=plan.made)
    a_end = plan.alphas[ahead[-1]] if ahead and plan.looks[ahead[-1]] == n_end else \
        sum(plan.alphas[passed + 1:]) or alpha
    return Reach(done, 1 - alpha, n_end, 1 - a_end)


def look(plan: PrecisionPlan, run: RunDir, done: int,
         judged: Callable[..., list[RowTarget] | None] = judge, units_left: int | None = None) -> str:
    """Make the due look: spend its alpha, record what is open, and when nothing is (or it is
    the last look) end the run at its level. Returns the progress line. Looks passed without
    being made (a session interrupted between a rep and its look) are
    made as one, at the sum of their alphas: the union bound holds all the same."""
    j = plan.made
    k = max(i for i in range(j, len(plan.looks)) if plan.looks[i] <= done)
    alpha = round(sum(plan.alphas[j:k + 1]), 9)
    left = judged(run, alpha, reach(plan, done, alpha, units_left))
    plan.made = k + 1
    plan.open = [t.text() for t in left] if left is not None else ["no comparison yet"]
    last = plan.made == len(plan.looks)
    at = f"look {plan.made} of {len(plan.looks)} at {done} paired reps ({level_text(1 - alpha)})"
    if left is not None and not left:
        plan.ended_by, plan.look, plan.alpha, plan.level = "answered", plan.made, alpha, round(1 - alpha, 9)
        plan.note = plan.note or f"answered at look {plan.made}"
        return (f"targets: {at}: every row decided, at its target, or out of reach by the run's "
                "end (those are marked as having missed it); the run stops here")
    if last:
        plan.look, plan.alpha, plan.level = plan.made, alpha, round(1 - alpha, 9)
    rest = "; the plan ends here" if last else f"; next look at {plan.looks[plan.made]}"
    return f"targets: {at}: open: {'; '.join(plan.open)}{rest}"


def end_by_budget(plan: PrecisionPlan) -> None:
    """The budget stopped the run between looks: its report is read at the alpha left."""
    if plan.looks and plan.level is None:
        plan.alpha = sequential.alpha_left(plan)
        plan.level = round(1 - plan.alpha, 9)
