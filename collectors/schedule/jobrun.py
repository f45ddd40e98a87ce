"""Run one job of a schedule once: for each case, resolve the moving refs, skip what ran
already for the same commits, choose the baseline, run it, compare it, record it in the
history store, and deliver the alerts the change points at this run raise. The run and its
report go through the run API (collectors/runner/api.py) and analysis.report.writer.report_run,
in-process; a run that cannot start fails this job with the reason and the schedule goes on."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from analysis.compare.errors import CompareError
from analysis.inputs.rundir import RunDirError
from analysis.history import alert_due
from analysis.history.sources import ingest_path
from analysis.inputs.option_specs import budget_for, first_stage
from analysis.report.summary_text import text_lines
from analysis.report.writer import report_run
from collectors.host import procs
from collectors.runner.api import RunRequest, execute, plan_run
from collectors.runner.options import RunOptions
from collectors.schedule import baseline
from collectors.schedule.autobisect import bisect_regression
from collectors.schedule.model import Job, Schedule, ScheduleError
from collectors.schedule.refs import resolve


class RunArguments(Protocol):
    """`stallscope run`'s parser, which reads a job's extra run arguments (run_args) so they
    mean what they mean there: commands/run_arguments.py, which the schedule command passes
    in (the library never imports the command layer)."""
    def given(self, run_args: list[str]) -> dict[str, Any]:
        """The RunRequest fields run_args set, RunOptions fields under "options" (plugin
        flags in its "extra"); SystemExit when they are not `stallscope run` arguments."""
        ...


@dataclass
class CaseOutcome:
    job: str                       # the store's job name (job, or job/case)
    case: str
    status: str                    # recorded | skipped | failed
    commits: dict[str, str] = field(default_factory=dict)
    run_dir: Path | None = None
    report: Path | None = None
    message: str = ""
    changes: list[Any] = field(default_factory=list)


def run_job(sched: Schedule, job: Job, store: Any, log: Callable[[str], None],
            deliver: Callable[[Job, list, Any], None] | None = None, *,
            run_arguments: RunArguments) -> list[CaseOutcome]:
    return [run_case(sched, job, case, store, log, deliver, run_arguments) for case in job.cases]


def run_case(sched: Schedule, job: Job, case: str, store: Any, log: Callable[[str], None],
             deliver: Callable[[Job, list, Any], None] | None, run_arguments: RunArguments) -> CaseOutcome:
    series_job = job.store_job(case)
    cand = resolve(job.candidate)
    key = {baseline.CAND: cand.commit} if cand.commit else {}
    if key and store.find_run(series_job, key) is not None:
        log(f"schedule: {series_job}: skipped, {cand.commit[:12]} ({cand.ref}) was measured already")
        return CaseOutcome(series_job, case, "skipped", key, message="measured already")
    choice = baseline.choose(job, store, series_job, cand)
    log(f"schedule: {series_job}: candidate {cand.spec}; {choice.why}")
    commits = dict(key)
    variants = []
    if choice.resolved is not None:
        variants.append(f"{baseline.BASE}={choice.resolved.spec}")
        if choice.resolved.commit:
            commits[baseline.BASE] = choice.resolved.commit
    variants.append(f"{baseline.CAND}={cand.spec}")
    run_dir, rc = _run(sched, job, case, variants, log, run_arguments)
    if run_dir is None:
        return CaseOutcome(series_job, case, "failed", commits, message=f"stallscope run exited {rc}")
    report = Path(sched.reports_dir) / run_dir.name
    if len(variants) > 1:
        report_status = _report(run_dir, report, log)
        if report_status != 0:
            return CaseOutcome(series_job, case, "failed", commits, run_dir,
                               message=f"stallscope compare {run_dir} exited {report_status}")
    meta = {"schedule": sched.path, "schedule_job": job.name, "case": case,
            "refs": {baseline.CAND: cand.ref}, "baseline": choice.why}
    stored = ingest_path(store, run_dir, job=series_job, commits=commits,
                         report_url=str(report / "report.html") if report.exists() else None, meta=meta)
    out = CaseOutcome(series_job, case, "recorded", commits, run_dir, report if report.exists() else None)
    out.changes = _changes_at(store, series_job, stored)
    log(f"schedule: {series_job}: recorded {run_dir}"
        + (f"; {len(out.changes)} change point(s) at this run" if out.changes else ""))
    if bisect_regression(sched, job, case, cand.spec, stored, store, out.changes, log) is not None:
        stored = store.run(stored.id)          # the alert names the culprit it keeps
    if out.changes and deliver is not None:
        deliver(job, out.changes, stored)
    alert_due.record(store, stored, out.changes)
    return out


def job_request(sched: Schedule, job: Job, case: str, variants: list[str],
                arguments: RunArguments) -> RunRequest:
    """The run of one case of a job, as data: the job's fields, then what its run_args set
    (read by `stallscope run`'s own parser, so they mean what they mean there, and win over
    the job's fields as flags later on a command line do); `profile-reps: 0` turns the
    profiler off whatever run_args say. The rules fill what neither set (option_specs)."""
    try:
        given = arguments.given(list(job.run_args))
    except SystemExit:
        # argparse printed what is wrong with the job's arguments
        raise ScheduleError(f"{sched.path}: job {job.name}: run arguments {job.run_args} are not "
                            "valid `stallscope run` arguments (see stallscope run --help)") from None
    if "resume" in given:
        raise ScheduleError(f"{sched.path}: job {job.name}: run arguments {job.run_args}: a job "
                            "makes a new run; --resume is not one of its run arguments")
    opts = {"reps": job.reps, "profile_reps": job.profile_reps, "size": job.size, **given.pop("options")}
    if job.profile_reps == 0:
        opts["profile"] = "off"
    opts["reps"] = first_stage(opts["reps"], opts.get("precision"))
    opts["budget_s"] = budget_for(opts.get("precision"), opts.get("budget_s"))
    return RunRequest(**{"out": Path(sched.runs_dir), "progress": False, **given, "case": case,
                         "variants": [*variants, *given.get("variants", [])],
                         "options": RunOptions(**opts)})


def _run(sched: Schedule, job: Job, case: str, variants: list[str],
         log: Callable[[str], None], arguments: RunArguments) -> tuple[Path | None, int]:
    """The job's run through the run API (job_request); the manifest's command is the
    request's own arguments (RunRequest.argv), how to make the same run by hand."""
    req = job_request(sched, job, case, variants, arguments)
    log("schedule: stallscope run " + " ".join(req.argv()))
    procs.install_signal_handlers()     # Ctrl-C during a build ends as during a rep
    try:
        outcome = execute(plan_run(req, log))
    except procs.Interrupted:
        procs.kill_all()
        log("schedule: interrupted before the run's first rep")
        raise KeyboardInterrupt from None
    except Exception as e:      # noqa: BLE001 - as `stallscope run` ends: this job fails, said
        log(f"schedule: stallscope run: error: {type(e).__name__}: {e}")
        return None, 2
    if outcome.status == 130:
        # Ctrl-C reached the runner (it stopped its servers): stop the schedule too, not the
        # next job. The unfinished run directory is kept for `stallscope run --resume`.
        log(f"schedule: interrupted; {outcome.run_dir} is kept")
        raise KeyboardInterrupt
    return outcome.run_dir, outcome.status


def _report(run_dir: Path, report: Path, log: Callable[[str], None]) -> int:
    try:
        r, _ = report_run(run_dir, report)
    except (RunDirError, CompareError, ValueError) as e:
        log(f"  stallscope compare: error: {e}")
        return 2
    for ln in text_lines(r):
        log(f"  {ln}")
    return 0


def _changes_at(store: Any, series_job: str, stored: Any) -> list[Any]:
    """The findings this run alerts (analysis/history/alert_due.py): placed at it by any
    signal (the run's paired test, its in-run verdicts, E-Divisive over the job's stored
    series), or placed at an earlier run and not alerted yet; detected over the whole
    history, so a shift is alerted once."""
    return alert_due.due(store, series_job, stored)


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
