"""--precision: add reps until the interval of the run's main change is as narrow as asked,
or the budget is spent (Stein's two-stage design, analysis/twostage.py; docs/statistics.md).

The unit is what the interval is computed over: a paired rep (both variants side by side),
or, in a run that cannot pair (an rdb-load case, no room for two servers), a block of one
rep per variant run back to back (A B, then B A ...), whose ratio cancels the drift the
block shares. The run starts with `reps` units, the first stage (the pilot), then its
profile reps. When the pilot is done, its spread s0 (sd of its units' log ratios) fixes the
total N = max(pilot, ceil((t * s0 / h)^2)); the N - pilot further units go at the end of the
schedule. Before each of their reps the clock is checked: it starts only if, at the pace
of the units so far, it fits the budget. Neither decision looks at the change itself, so the
two-stage interval keeps its 95% at whatever unit the run ends; manifest.json `precision`
says which ended it (the planned precision, or the budget).

A unit that failed is replaced (the plan counts units that measured), budget permitting.

A run that decides (options.targets) uses the same loop without a first stage: its reps
are planned before it starts (collectors/runner/targets.py), and at planned counts of them
it looks at itself (collectors/runner/looks.py) and stops when every row has answered.
"""
from __future__ import annotations

import math
import statistics
import time

from analysis import run_spread, twostage
from analysis.compare.planned import function_log_ratios
from analysis.compare.throughput import main_log_ratios
from analysis.inputs.manifest import PrecisionPlan, Rep
from analysis.inputs.rundir import RunDir
from analysis.intervals import level_text
from collectors.runner import looks, replan
from collectors.runner.context import RunContext
from collectors.runner.new_manifest import rep_seconds
from collectors.runner.progress import duration

MAX_UNITS = 200         # a plan past this is a sign of a broken host, not of a small change


class PrecisionRun:
    """Grows and trims the schedule of a --precision run as its units finish."""

    def __init__(self, run: RunContext):
        self.run = run
        self.plan: PrecisionPlan = run.manifest.precision
        # what was asked (manifest.json options): the half-width (a fraction of the ratio), the
        # wall-time budget, the first stage and --on's function (None: the main metric)
        self.target: float = run.manifest.options.precision
        # (a run that decides keeps precision.control_s of it for its in-cache control)
        budget = run.manifest.options.budget_s
        self.budget_s: float | None = None if budget is None else budget - (self.plan.control_s or 0.0)
        self.pilot: int = (run.manifest.options.reps if run.manifest.options.targets
                           else run.manifest.pilot) or 0
        self.on: tuple[str, str] | None = run.manifest.options.precision_function
        self.names = list(run.variants)
        # a run that decides: its reps planned before it began (so _plan never runs); its
        # looks stop it when it has answered, the clock when the budget is spent
        self.decides = run.manifest.options.targets
        if self.decides and self.plan.planned is None:
            self.plan.planned = self.pilot
        if self.decides:        # its looks (collectors/runner/looks.py), planned once
            looks.plan_looks(self.plan)
        self.kind = "paired" if run.opts.paired else "throughput"
        self._t0 = time.monotonic()
        self._spent0 = self.plan.spent_s or 0.0

    # ------------------------------------------------------------------ the clock
    def spent(self) -> float:
        """Wall time of the run's sessions so far (a resumed run adds to the first's)."""
        return self._spent0 + time.monotonic() - self._t0

    def tick(self) -> None:
        self.plan.spent_s = round(self.spent(), 1)

    def _unit_seconds(self) -> float | None:
        """Median wall time of one unit: a paired rep, or one rep per variant."""
        secs = [s for r in self._reps() if r.status == "ok" and (s := rep_seconds(r)) is not None]
        if not secs:
            return None
        return statistics.median(secs) * (1 if self.kind == "paired" else len(self.names))

    # ------------------------------------------------------------- the decisions
    def may_start(self, rep: Rep) -> bool:
        """False when `rep` belongs to a unit past the pilot that the budget has no room
        for: then every unit rep not run yet is dropped and the run says the budget ended it."""
        if rep.kind != self.kind or self.budget_s is None or (self._units() < self.pilot and not self.decides):
            return True
        need = self._unit_seconds() or 0.0
        if self.spent() + need <= self.budget_s:
            return True
        self._drop_pending()
        self.plan.ended_by = "budget"
        looks.end_by_budget(self.plan)
        self.plan.note = (f"budget of {duration(self.budget_s)} spent after {self._units()} of "
                          f"{self.plan.planned} planned {self._word()}s (one more takes about "
                          f"{duration(need)})")
        self.run.note(f"precision: {self.plan.note}", always=True)
        return False

    def after(self, rep: Rep) -> None:
        """After a unit's rep: replace the unit if it failed; at the end of the pilot, plan
        the rest; then say where the interval stands."""
        if rep.kind != self.kind:
            return
        self.tick()
        if rep.status != "ok":
            self._append(1)
        done = self._units()
        if self.plan.planned is None and done >= self.pilot:
            self._plan(done)
        if self.decides and self.plan.replan and rep.status == "ok" and self.plan.made == 0:
            self._replan(done)
        if self.kind == "paired" or self._block_complete():
            self.run.note(self._progress(done), always=True)
        if self.decides and rep.status == "ok" and looks.due(self.plan, done):
            self.run.note(looks.look(self.plan, RunDir(self.run.run_dir, self.run.manifest), done,
                                     units_left=self._units_left()), always=True)
            if self.plan.ended_by == "answered":
                self._drop_pending()
        if self.plan.planned is not None and done >= self.plan.planned and self.plan.ended_by is None:
            self.plan.ended_by = "precision"
            if not self.decides:      # a run that decides keeps why it planned its reps
                self.plan.note = f"{done} {self._word()}s as planned for ±{self.target:.1%} of the ratio"

    def _units_left(self) -> int | None:
        """The units the budget leaves at the pace so far (None: no budget or no pace yet)."""
        pace = self._unit_seconds()
        if self.budget_s is None or not pace:
            return None
        return max(int((self.budget_s - self.spent()) // pace), 0)

    def _plan(self, done: int) -> None:
        x = self.log_ratios()[: self.pilot]
        sd0 = float(statistics.stdev(x))
        self.plan.pilot_sd = round(sd0, 6)
        want = twostage.planned_reps(sd0, self.pilot, math.log1p(self.target),
                                     floor=twostage.ON_FLOOR if self.on else 0)   # --on: skewed rows
        self.plan.planned = min(want, MAX_UNITS)
        if want > MAX_UNITS:
            self.plan.note = f"the first stage's spread asks for {want} {self._word()}s; capped at {MAX_UNITS}"
        self._append(self.plan.planned - done)

    def _replan(self, done: int) -> None:
        """A host's first run of the case: its plan made again from what its first paired rep
        cost (collectors/runner/replan.py), before the first look; its looks with it."""
        self.plan.replan = False
        try:
            got = replan.replan(self.run, self.budget_s, self.spent(), done) if self.budget_s else None
        except Exception as e:      # noqa: BLE001 - a plan made again must never end the run
            got, why = None, str(e)
        else:
            why = "no rep booked what it cost"
        if got is None:
            self.run.note(f"targets: the plan was not made again after the first rep ({why}); it "
                          "keeps its first, and the budget may stop it sooner", always=True)
            return
        self.run.note(f"targets: {got.text()}", always=True)
        if not got.taken:
            self.plan.note = f"{self.plan.note}; {got.text()}" if self.plan.note else got.text()
            return
        p = got.plan
        for o in (self.run.opts, self.run.manifest.options):
            o.reps, o.paired_windows, o.perf_share = p.reps, p.windows, float(p.share)
        if self.run.manifest.paired is not None:
            self.run.manifest.paired.windows = p.windows
        self._resize(p.reps)
        self.pilot = self.plan.planned = p.reps
        self.plan.looks, self.plan.alphas = [], []
        looks.plan_looks(self.plan)
        self.plan.note = got.text()

    def _resize(self, n: int) -> None:
        """The schedule's paired reps made `n` (a failed one is not counted: another replaced
        it): more at the end, or the last pending ones dropped."""
        sched = self.run.manifest.schedule
        mine = [r for r in sched if r.kind == self.kind and r.status != "failed"]
        if len(mine) < n:
            self._append(n - len(mine))
            return
        extra = {id(r) for r in [r for r in mine if r.status == "pending"][::-1][:len(mine) - n]}
        self.run.manifest.schedule = [r for r in sched if id(r) not in extra]
        if self.run.progress is not None:
            self.run.progress.total -= len(extra)

    def _drop_pending(self) -> None:
        """Every unit rep not run yet leaves the schedule (the run ends after this one)."""
        sched = self.run.manifest.schedule
        keep = [r for r in sched if not (r.kind == self.kind and r.status == "pending")]
        if self.run.progress is not None:
            self.run.progress.total -= len(sched) - len(keep)
        self.run.manifest.schedule = keep

    def _append(self, n: int) -> None:
        """n more units at the end of the schedule (after the profile reps)."""
        sched = self.run.manifest.schedule
        added = 0
        for _ in range(max(n, 0)):
            if self.kind == "paired":
                top = max((r.rep for r in sched if r.kind == "paired"), default=0)
                sched.append(Rep(variant="paired", rep=top + 1, kind="paired"))
                added += 1
                continue
            # a block of one rep per variant, alternating which goes first (A B, B A, ...)
            blocks = min(sum(1 for r in sched if r.variant == v and r.kind == self.kind)
                         for v in self.names)
            order = self.names[blocks % 2:] + self.names[:blocks % 2]
            for v in order:
                top = max((r.rep for r in sched if r.variant == v), default=0)
                sched.append(Rep(variant=v, rep=top + 1, kind=self.kind))
                added += 1
        if added and self.run.progress is not None:
            self.run.progress.total += added

    # ------------------------------------------------------------------ reading
    def _reps(self) -> list[Rep]:
        return [r for r in self.run.manifest.schedule if r.kind == self.kind]

    def _units(self) -> int:
        """Units that measured: ok paired reps, or blocks with an ok rep of every variant."""
        if self.kind == "paired":
            return sum(1 for r in self._reps() if r.status == "ok")
        return len(self.log_ratios())

    def _block_complete(self) -> bool:
        ok = [sum(1 for r in self._reps() if r.variant == v and r.status == "ok") for v in self.names]
        return len(set(ok)) == 1

    def _word(self) -> str:
        return "paired rep" if self.kind == "paired" else "block"

    def log_ratios(self) -> list[float]:
        """Each measured unit's log ratio of the main metric (--on: the function's CPU time
        per operation), in order (the values of the interval)."""
        run = RunDir(self.run.run_dir, self.run.manifest)
        if self.on is not None:
            return function_log_ratios(run, self.names[0], self.names[1], *self.on)
        return main_log_ratios(run, self.names[0], self.names[1])

    def _progress(self, done: int) -> str:
        p = self.plan
        x = self.log_ratios()
        if self.decides:
            return self._progress_targets(done, x)
        if len(x) < max(self.pilot, twostage.MIN_PILOT):
            return f"precision: first stage {len(x)} of {self.pilot} {self._word()}s done"
        iv = twostage.interval(x, self.pilot)
        left = max(0, (p.planned or 0) - done)
        pace = self._unit_seconds()
        eta = f", about {duration(left * pace)}" if left and pace else ""
        budget = f"; {duration(self.spent())} of the {duration(self.budget_s)} budget spent" if self.budget_s else ""
        return (f"precision: {done} {self._word()}s, change {math.expm1(iv.mean):+.1%} "
                f"[{math.expm1(iv.low):+.1%}, {math.expm1(iv.high):+.1%}] (±{math.expm1(iv.half_width):.1%} "
                f"of the ratio, target ±{self.target:.1%}); {left} more planned{eta}{budget}")


    def _progress_targets(self, done: int, x: list[float]) -> str:
        budget = f"; {duration(self.spent())} of the {duration(self.budget_s)} budget spent" if self.budget_s else ""
        if len(x) < twostage.MIN_PILOT:
            return f"targets: {done} of {self.pilot} paired reps{budget}"
        # a t interval at the level of the next look (the one a report of the run would print
        # then: analysis/sequential.py), with the spread between runs the look's throughput
        # row is widened by (analysis/run_spread.py); the report's own method may differ
        p = self.plan
        level = 1 - p.alphas[p.made] if p.made < len(p.alphas) else (p.level or 0.95)
        iv = twostage.interval(x, len(x), level)
        spread = self.run.manifest.run_spread
        room = run_spread.room(spread, level) if spread is not None and spread.sd > 0 else 0.0
        lo, hi = run_spread.widened_bounds(iv.mean, iv.low, iv.high, room)
        return (f"targets: {done} of {self.pilot} paired reps, throughput {math.expm1(iv.mean):+.1%} "
                f"(t interval at {level_text(level)}{' with the spread between runs' if room else ''} "
                f"[{math.expm1(lo):+.1%}, {math.expm1(hi):+.1%}]){budget}")
