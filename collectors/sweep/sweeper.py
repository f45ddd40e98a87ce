"""The sweep loop: each point that is not complete is one `stallscope run` (the runner's own
code path: builds from the cache, the dataset snapshot shared by points with the same data,
reps interleaved or paired), its run directory inside the sweep directory, tagged with the
point in its manifest ("sweep": sweep id, point id, labels).

sweep.json is saved after every change of state. A point that fails is recorded and the
sweep goes on; Ctrl-C (or SIGTERM) stops it with every process it started ended, the
interrupted point's finished reps kept, and `stallscope sweep --resume SWEEP_DIR` runs what
is left (an interrupted point is resumed, not restarted).
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Callable

from analysis.inputs.layout import MANIFEST
from analysis.inputs.option_specs import MeasureOptions, budget_for
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from analysis.report.fmt import change_cells
from analysis.sweep.point_rows import headline
from analysis.sweep.sweep_manifest import SweepManifest, SweepPoint, save_sweep
from collectors.host import procs
from collectors.runner.api import RunRequest, plan_run
from collectors.runner.options import RunOptions
from analysis.clock import now_iso
from analysis.sweep.sweep_options import SweepOptions
from collectors.runner.progress import duration
from collectors.runner.runner import Runner
from collectors.sweep.fanout import point_host
from collectors.workload.overrides import show

Log = Callable[[str], None]
PREFIX = "stallscope sweep:"


def point_request(m: SweepManifest, p: SweepPoint, opts: SweepOptions, out: Path,
                  progress: bool) -> RunRequest:
    """One point's run, typed (its manifest's command is the request spelled as arguments)."""
    shared = {f.name: getattr(opts, f.name) for f in dataclasses.fields(MeasureOptions)}
    shared["budget_s"] = budget_for(opts.precision, opts.budget_s)
    # the plan chose paired or separate reps for this point (--pairing auto: where it fits);
    # unpaired, a precision run's unit is a block of one rep per variant (runner/precision.py)
    shared["pairing"] = "paired" if p.estimate.paired else "unpaired"
    run = RunOptions(**shared, size=m.size)
    return RunRequest(p.case, list(m.variants), run, sets=[f"{k}={show(v)}" for k, v in p.sets.items()],
                      out=out, progress=progress)


class Sweeper:
    def __init__(self, sweep_dir: Path, m: SweepManifest, opts: SweepOptions, progress: bool = True,
                 log: Log | None = None):
        self.dir, self.m, self.opts, self.progress = Path(sweep_dir), m, opts, progress
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.spent = 0.0          # wall time of the points run so far
        self.estimated = 0.0      # their estimates, to scale the rest

    def save(self) -> None:
        save_sweep(self.dir, self.m)

    def run(self) -> int:
        """0: every point complete (or skipped as planned); 1: some point failed or is
        incomplete; 130: interrupted (resume with --resume)."""
        procs.install_signal_handlers()
        m = self.m
        todo = [p for p in m.points if p.status not in ("complete", "skipped")]
        m.status, m.reason = "running", None
        self.save()
        try:
            for i, p in enumerate(todo):
                self._say_start(p, i, todo)
                self.run_point(p)
                self._say_done(p, todo[i + 1:])
        except procs.Interrupted as e:
            procs.kill_all()
            for p in m.points:
                if p.status == "running":
                    p.status, p.reason, p.finished = "interrupted", str(e), now_iso()
            m.status, m.reason = "interrupted", str(e)
            self.save()
            self.log(f"{PREFIX} {e}; finished points and reps are kept. Resume with:\n"
                     f"  stallscope sweep --resume {self.dir}")
            return 130
        bad = [p for p in m.points if p.status not in ("complete", "skipped")]
        m.status = "complete" if not bad else "incomplete"
        m.reason = None if not bad else f"{len(bad)} point(s) not complete: " + ", ".join(p.id for p in bad)
        self.save()
        return 0 if not bad else 1

    def run_point(self, p: SweepPoint) -> None:
        t0 = time.monotonic()
        p.status, p.started, p.finished = "running", p.started or now_iso(), None
        p.host = point_host()       # where it ran (a resumed point: where it finished)
        self.save()
        try:
            runner = self._runner(p)
            rc = runner.run()
        except procs.Interrupted:
            raise
        except Exception as e:    # a point that cannot run must not end the sweep
            if os.environ.get("STALLSCOPE_DEBUG"):
                raise
            p.status, p.reason = "failed", f"{type(e).__name__}: {e}"
            self.log(f"{PREFIX} point {p.id} failed: {p.reason}")
        else:
            if rc == 130:
                raise procs.Interrupted(2)
            p.status = "complete" if rc == 0 else "incomplete"
            p.reason = None if rc == 0 else (runner.m.status.reason or f"stallscope run exit {rc}")
        finally:
            p.took_s = round((p.took_s or 0) + time.monotonic() - t0, 1)
            p.finished = now_iso()
            self.spent += time.monotonic() - t0
            self.estimated += p.estimate.time_s
            self.save()

    def _runner(self, p: SweepPoint) -> Runner:
        if p.run_dir and (self.dir / p.run_dir / MANIFEST).is_file():
            run_dir = self.dir / p.run_dir
            if load_run(run_dir).manifest.status.state == "complete":
                return _Done(run_dir)
            return Runner.resume(run_dir, self.log, progress=self.progress)
        out = self.dir / p.id
        runner = plan_run(point_request(self.m, p, self.opts, out, self.progress), self.log).runner
        p.run_dir = str(runner.run_dir.relative_to(self.dir))
        runner.m.extra["sweep"] = {"sweep_id": self.m.sweep_id, "point": p.id, "index": p.index,
                                   "labels": dict(p.labels)}
        runner.ctx.save()
        self.save()
        return runner

    # ---------------------------------------------------------------- progress
    def _left_s(self, rest: list[SweepPoint]) -> float:
        scale = self.spent / self.estimated if self.estimated > 0 else 1.0
        return scale * sum(q.estimate.time_s for q in rest)

    def _say_start(self, p: SweepPoint, i: int, todo: list[SweepPoint]) -> None:
        labels = ", ".join(f"{k}={v}" for k, v in p.labels.items()) or "the case as is"
        # numbered within the whole sweep, so a resumed sweep still says where it stands
        self.log(f"{PREFIX} [{p.index}/{len(self.m.points)}] point {p.id} ({labels}): starting, about "
                 f"{duration(p.estimate.time_s)}; the sweep about {duration(self._left_s(todo[i:]))} left")

    def _say_done(self, p: SweepPoint, rest: list[SweepPoint]) -> None:
        what = self.outcome(p)
        left = f"about {duration(self._left_s(rest))} left" if rest else "last point"
        self.log(f"{PREFIX} point {p.id} {p.status} in {duration(p.took_s or 0)}{what}; {left}")

    def outcome(self, p: SweepPoint) -> str:
        """': throughput +12.3% [+4.1, +20.5]% improvement' (or the reason it has none)."""
        if p.status == "failed":
            return f": {p.reason}"
        if not p.run_dir:
            return ""
        try:
            run = load_run(self.dir / p.run_dir)
            r = analyse(run, CompareOptions())
            row, _ = headline(run, r, CompareOptions())
        except Exception as e:   # the progress line must not end the sweep
            return f" (no comparison yet: {type(e).__name__}: {e})"
        if row is None:
            return " (no measurement on both sides)"
        ch, ci = change_cells(row.change, row.unit)
        return f": {row.metric} {ch} {ci} {row.change.verdict}"


class _Done:
    """A point whose run finished before the sweep could record it."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.m = load_run(run_dir).manifest

    def run(self) -> int:
        return 0


def options_of(m: SweepManifest) -> SweepOptions:
    """The sweep's options as recorded (a copy: a resume may change what it runs with)."""
    return dataclasses.replace(m.options)
