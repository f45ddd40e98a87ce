"""A host's first run of a case plans again once its first paired rep has said what a rep
costs here (docs/statistics.md, "A host's first run plans again after its first rep").

The plan of a run that decides (collectors/runner/rep_plan.py) prices reps and windows in
the seconds a rep costs on this host: the servers' start, load and settling outside the
windows, and each window. Before its first run of a case the host has recorded neither, so
the plan is the targets' 13 reps of 96 windows, and a budget that holds fewer stopped the
run short of them: on the Xeon guest 8 of 13, every row with a target then covering ~89%
(analysis/sequential.short_coverage). After the first paired rep the cost is known: the
plan is made again from it and the budget left, as a run with that cost recorded would
make it at this run's rate, and the reps still to run take its count, windows and perf's
share of their blocks. The first rep keeps what it had (each rep's paired.json, and rep.json
`paired.order`, say how many windows it ran). A rep that failed says nothing: the first
that measured is the one. Only a run whose plan was made this way (paired, profiled in its
windows, windows, rate and share left to the plan: collectors/runner/api._plan_reps) is
made again.

The rate stays what the first rep sampled at: perf's cost is measured over the run's
perf-on and perf-off blocks together (analysis/compare/perf_blocks.py), one rate a run.

A plan made again below the floor of reps a skewed row's interval needs
(analysis/sequential.FLOOR_REPS) is not taken: the first plan (13) is kept and the budget
stops it. Its early looks are at their strict levels (the first at 99.86% in a plan of 13),
where a plan of 6 looks first at 98.6%; a large change answered at the first look keeps its
94% under the first plan and not under the short one (the first demo planned again to 6
reps marked every row "covers ~88%"), and a run the budget stops is marked by the reps it
made as before (analysis/compare/row_targets.floor_reps).

Why the looks stay valid: the new plan reads the first rep's wall time, never a value of
the comparison, and it is made before the first look (at 4 paired reps), so the looks and
their alphas are planned again from the new count and still add up to 0.05
(analysis/sequential.py).
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass

from analysis.inputs.rundir import RunDir
from analysis.sequential import FLOOR_REPS
from collectors.host import noise, sample_cost
from collectors.runner import rep_plan, targets
from collectors.runner.context import RunContext
from collectors.runner.noise_log import rep_cost


@dataclass(frozen=True)
class Replan:
    """The plan made again, from what the first paired reps cost."""
    plan: rep_plan.RepPlan
    cost: rep_plan.RepCost
    made: int                # paired reps made before it
    short: list[str]         # the targets it cannot reach, and why
    first: int = 0           # the reps the first plan had
    # taken where it reaches the floor of reps (sequential.FLOOR_REPS) or the first plan had
    # fewer: below the floor the first plan is kept (the module's docstring)
    taken: bool = True

    def text(self) -> str:
        """The progress line and the note manifest.json keeps (precision.note)."""
        head = (f"planned again after {self.made} paired rep{'s' * (self.made > 1)} "
                f"({self.cost.fixed_s:.0f} s a rep outside its windows and {self.cost.window_s:.2f} s a "
                f"window here): ")
        if self.taken:
            return "; ".join([head + self.plan.text(), *self.short])
        return head + (f"{self.plan.text()}; fewer than the {FLOOR_REPS} a skewed function row's "
                       f"interval needs, so the first plan of {self.first} is kept: its looks judge a "
                       f"change answered early at their strict levels, where a plan of {self.plan.reps} "
                       f"keeps less, and the budget stops the rest, its rows then marked with what "
                       f"such a run keeps")


def measured_cost(run: RunContext) -> rep_plan.RepCost | None:
    """What the paired reps made so far cost, each part its median over them (None: no rep
    booked its phases)."""
    rd = RunDir(run.run_dir, run.manifest)
    got = [c for r in run.manifest.reps(kind="paired")
           if (c := rep_cost(rd, r, run.opts.paired_windows)) is not None]
    if not got:
        return None
    return rep_plan.RepCost(statistics.median(c[0] for c in got), statistics.median(c[1] for c in got))


def replan(run: RunContext, budget_s: float, spent_s: float, made: int) -> Replan | None:
    """The plan the budget left holds from here (the reps made count in it), or None when no
    rep booked what it cost."""
    cost = measured_cost(run)
    if cost is None:
        return None
    case, opts = run.case, run.opts
    host = run.manifest.host.summary()
    spread = noise.lookup(host, case.name, case.size, paired=True)
    t = targets.Targets()
    rows = targets.focus_family_rows(case.focus, case.server.io_threads)
    hz = opts.frequency_hz or sample_cost.CEILING
    p = rep_plan.plan(spread, budget_s, t, hz, opts.paired_window_s, rows,
                      cost=cost, made=made, spent_s=spent_s)
    short = rep_plan.short_of(p, spread, t, run.manifest.precision.control_s)
    first = run.manifest.precision.planned or 0
    return Replan(p, cost, made, short + _out_of_reach(run, p, t, rows, hz), first,
                  taken=p.reps >= min(FLOOR_REPS, first))


def _out_of_reach(run: RunContext, p: rep_plan.RepPlan, t: targets.Targets, rows: int,
                  hz: int) -> list[str]:
    """The function targets the new plan cannot reach at the run's rate (targets.out_of_reach),
    and, where the new plan would have asked another rate, that the run keeps its own."""
    case, opts = run.case, run.opts
    alpha = targets.final_alpha(p.reps)
    need = targets.rate_need(t, p.reps, p.windows, opts.paired_window_s, focus_rows=rows,
                             alpha=alpha, share=float(p.share))
    rate = sample_cost.choose(run.manifest.host.summary(), case=case.name,
                              need_hz=need or math.inf, size=case.size)
    out = targets.out_of_reach(t, dataclasses.replace(rate, hz=hz), p.reps, p.windows,
                               opts.paired_window_s, rows, alpha, float(p.share))
    if rate.hz != hz:
        out.append(f"perf stays at {hz:,} Hz, the rate its first rep sampled at (a new plan "
                   f"would choose {rate.hz:,} Hz): perf's cost is measured over all of a run's "
                   "blocks, at one rate")
    return out

