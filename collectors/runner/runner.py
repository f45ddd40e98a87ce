"""The run loop: the dataset snapshot and calibration first (collectors.runner.snapshot),
then every rep of the schedule that is not "ok" yet, one at a time.

The manifest is saved after every change of state, so a killed run says which reps are
done. A rep that fails is recorded (status, reason, rep.json error) and the run goes on;
SIGINT/SIGTERM end the run with exit status 130 and everything it started killed;
`run --resume RUN_DIR` (Runner.resume) runs the reps that are not "ok".
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import traceback
from pathlib import Path
from typing import Callable

from analysis.inputs.manifest import Manifest, Rep, Resume, RunStatus, Variant
from analysis.inputs.repfacts import RepFacts
from analysis.inputs.rundir import load_run, write_rep_facts
from collectors.variants.builder import build_variant
from collectors.runner.layouts import build_layouts
from collectors.variants.spec import parse_variant
from collectors.runner.plugins import plugins, window_profilers
from collectors.host import procs
from collectors.load import memtier
from collectors.runner.context import RunContext
from analysis.clock import now_iso
from collectors.runner import noise_log
from collectors.runner.options import RunError
from collectors.runner.precision import PrecisionRun
from collectors.runner.progress import Progress
from collectors.runner.reps import rep_kind
from collectors.runner.snapshot import ensure_calibration, ensure_snapshot


class Runner:
    def __init__(self, ctx: RunContext, progress: bool = True):
        self.ctx = ctx
        self.show_progress = progress

    @property
    def run_dir(self) -> Path:
        return self.ctx.run_dir

    @property
    def m(self) -> Manifest:
        return self.ctx.manifest

    def run(self) -> int:
        """0: every rep ok; 1: some rep failed; 130: interrupted (resume with --resume)."""
        run = self.ctx
        procs.install_signal_handlers()
        self.m.status = RunStatus("running", None, now_iso())
        run.save()
        # Reps to run in this session: those not ok now, and those a --precision run adds.
        self._todo = {id(r) for r in self.m.schedule if r.status != "ok"}
        run.progress = Progress(len(self._todo), run.case.name, enabled=self.show_progress)
        precision = PrecisionRun(run) if self.m.precision is not None else None
        try:
            rdb = ensure_snapshot(run)
            while (rep := self._next()) is not None:
                procs.raise_if_interrupted()
                if precision is not None and not precision.may_start(rep):
                    run.save()
                    continue
                if rep.kind != "paired":
                    # paired reps need no calibration; a paired run's later reps take theirs
                    # from its windows (snapshot.ensure_calibration)
                    ensure_calibration(run, rdb)
                run.progress.start(rep)
                facts = self.run_one(rep, rdb)
                procs.raise_if_interrupted()
                run.progress.finish(rep, facts)
                if precision is not None:
                    precision.after(rep)
                    self._todo |= {id(r) for r in self.m.schedule if r.status == "pending"}
                    run.save()
        except procs.Interrupted as e:
            if precision is not None:
                precision.tick()
            self._abort("interrupted", str(e), str(e))
            print(f"\nstallscope run: {e}; finished reps kept. Resume with:\n"
                  f"  stallscope run --resume {self.run_dir}", file=sys.stderr)
            return 130
        except BaseException as e:
            self._abort("failed", f"{type(e).__name__}: {e}", f"{type(e).__name__}: {e}")
            raise
        finally:
            run.progress.close()
            shutil.rmtree(run.scratch, ignore_errors=True)
        failed = [r for r in self.m.schedule if r.status != "ok"]
        self.m.status = RunStatus("complete" if not failed else "incomplete",
                                  None if not failed else f"{len(failed)} rep(s) failed", now_iso())
        run.save()
        noise_log.keep(run)      # this host's noise, for the plans of later runs
        noise_log.keep_sample_cost(run)   # what a perf sample cost here, for later runs' rate
        return 0 if not failed else 1

    def _next(self) -> Rep | None:
        """The first rep of the schedule still to run in this session (each runs once)."""
        for r in self.m.schedule:
            if id(r) in self._todo:
                self._todo.discard(id(r))
                return r
        return None

    def _abort(self, state: str, reason: str, rep_reason: str) -> None:
        """Kill everything the run started; the rep that was running is failed."""
        procs.kill_all()
        for r in self.m.schedule:
            if r.status == "running":
                r.status, r.reason, r.finished = "failed", rep_reason, now_iso()
        self.m.status = RunStatus(state, reason, now_iso())
        self.ctx.save()

    def run_one(self, rep: Rep, rdb: Path | None) -> RepFacts:
        """One rep, start to rep.json; a failure is recorded and does not end the run."""
        run = self.ctx
        rep_dir = self.run_dir / rep.dir
        if rep_dir.exists():
            shutil.rmtree(rep_dir)  # a failed/interrupted attempt: start this rep afresh
        rep_dir.mkdir(parents=True)
        rep.status, rep.reason, rep.started, rep.finished = "running", None, now_iso(), None
        run.save()
        facts = RepFacts(variant=rep.variant, rep=rep.rep, kind=rep.kind)
        try:
            rep_kind(run, rep)(run, rep, rep_dir, rdb, facts).execute()
        except Exception as e:   # one failed rep must not end the run: record it, go on
            rep.status, rep.reason = "failed", f"{type(e).__name__}: {e}"
            facts.error = rep.reason
            if os.environ.get("STALLSCOPE_DEBUG"):
                facts.traceback = traceback.format_exc()
            print(f"stallscope run: rep {rep.dir} failed: {rep.reason}", file=sys.stderr)
        else:
            rep.status = "ok"
        finally:
            write_rep_facts(rep_dir, facts)
        rep.finished = now_iso()
        run.save()
        return facts

    @classmethod
    def resume(cls, run_dir: Path, log: Callable[[str], None], progress: bool = True) -> "Runner":
        """The run of RUN_DIR with the binaries it was measured with, ready to run what is
        not "ok" (RunError when a variant now builds differently or memtier is gone)."""
        m = load_run(run_dir).manifest
        variants = {name: _rebuilt(run_dir, name, vm, log) for name, vm in m.variants.items()}
        left = [r for r in m.schedule if r.status != "ok"]
        m.resumes = m.resumes + [Resume(now_iso(), list(sys.argv), len(left))]
        log(f"stallscope run: resuming {run_dir}: {len(left)} of {len(m.schedule)} reps to run")
        memtier_bin = None
        if m.load_generator.used == "memtier":
            # Finished reps were measured with memtier: the rest must be too, or they don't compare.
            memtier_bin = memtier.find_memtier()
            if memtier_bin is None:
                raise RunError(f"{run_dir}/manifest.json: this run's reps were measured with "
                               f"memtier_benchmark ({m.load_generator.path}), which is no longer "
                               f"on PATH; {memtier.INSTALL_HINT}")
        opts = dataclasses.replace(m.options)
        run = RunContext(Path(run_dir), m, m.case, variants, opts,
                         collector_factories=[p.rep_collectors for p in plugins()],
                         window_profiler_factories=window_profilers(plugins()),
                         memtier_bin=memtier_bin)
        return cls(run, progress=progress)


def _rebuilt(run_dir: Path, name: str, recorded: Variant, log: Callable[[str], None]) -> Variant:
    spec = parse_variant(f"{name}={recorded.spec}")
    if recorded.layouts:        # --layouts: every layout's build, each checked below
        v = build_layouts(spec, [int(x["seed"]) for x in recorded.layouts], log)
    else:
        v = build_variant(spec, log=log)
    pairs = ([(x["binary_sha256"], y["binary_sha256"]) for x, y in zip(recorded.layouts, v.layouts or [])]
             if recorded.layouts else [(recorded.binary_sha256, v.binary_sha256)])
    for was, now in pairs:
        if was != now:
            raise RunError(f"{run_dir}/manifest.json: variant {name} was built as sha256 "
                           f"{str(was)[:12]}, the build now gives {now[:12]}; cannot resume "
                           f"with a different binary")
    return v
