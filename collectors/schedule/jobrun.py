"""Run one job of a schedule once: for each case, resolve the moving refs, skip what ran
already for the same commits, choose the baseline, run it (`stallscope run`), compare it
(`stallscope compare`), record it in the history store, and deliver the alerts the change
points at this run raise. The runner and compare run in-process through their commands'
`main(argv)`, exactly as a user's `stallscope run` would."""
from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from analysis.compare import cli as compare_cli
from collectors.runner import cli as runner_cli
from collectors.schedule import baseline
from collectors.schedule.model import Job, Schedule, ScheduleError
from collectors.schedule.refs import resolve


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
            deliver: Callable[[Job, list, Any], None] | None = None) -> list[CaseOutcome]:
    return [run_case(sched, job, case, store, log, deliver) for case in job.cases]


def run_case(sched: Schedule, job: Job, case: str, store: Any, log: Callable[[str], None],
             deliver: Callable[[Job, list, Any], None] | None) -> CaseOutcome:
    sjob = job.store_job(case)
    cand = resolve(job.candidate)
    key = {baseline.CAND: cand.commit} if cand.commit else {}
    if key and store.find_run(sjob, key) is not None:
        log(f"schedule: {sjob}: skipped, {cand.commit[:12]} ({cand.ref}) was measured already")
        return CaseOutcome(sjob, case, "skipped", key, message="measured already")
    choice = baseline.choose(job, store, sjob, cand)
    log(f"schedule: {sjob}: candidate {cand.spec}; {choice.why}")
    commits = dict(key)
    variants = []
    if choice.resolved is not None:
        variants.append(f"{baseline.BASE}={choice.resolved.spec}")
        if choice.resolved.commit:
            commits[baseline.BASE] = choice.resolved.commit
    variants.append(f"{baseline.CAND}={cand.spec}")
    run_dir, rc = _run(sched, job, case, variants, log)
    if run_dir is None:
        return CaseOutcome(sjob, case, "failed", commits, message=f"stallscope run exited {rc}")
    report = Path(sched.reports_dir) / run_dir.name
    if len(variants) > 1:
        crc = _quiet(compare_cli.main, [str(run_dir), "--out", str(report)], log)
        if crc != 0:
            return CaseOutcome(sjob, case, "failed", commits, run_dir,
                               message=f"stallscope compare {run_dir} exited {crc}")
    meta = {"schedule": sched.path, "schedule_job": job.name, "case": case,
            "refs": {baseline.CAND: cand.ref}, "baseline": choice.why}
    stored = store.ingest(run_dir, job=sjob, commits=commits,
                          report_url=str(report / "report.html") if report.exists() else None, meta=meta)
    out = CaseOutcome(sjob, case, "recorded", commits, run_dir, report if report.exists() else None)
    out.changes = _changes_at(store, sjob, stored)
    log(f"schedule: {sjob}: recorded {run_dir}"
        + (f"; {len(out.changes)} change point(s) at this run" if out.changes else ""))
    if out.changes and deliver is not None:
        deliver(job, out.changes, stored)
    return out


def _run(sched: Schedule, job: Job, case: str, variants: list[str],
         log: Callable[[str], None]) -> tuple[Path | None, int]:
    argv = [case, *[a for v in variants for a in ("--variant", v)], "--reps", str(job.reps),
            "--profile-reps", str(job.profile_reps), "--size", job.size, "--out", sched.runs_dir,
            "--no-progress", *job.run_args]
    if job.profile_reps == 0:
        argv += ["--profile", "off"]
    log("schedule: stallscope run " + " ".join(argv))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = runner_cli.main(argv)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    if rc == 130:
        # Ctrl-C reached the runner (it stopped its servers): stop the schedule too, not the
        # next job. The unfinished run directory is kept for `stallscope run --resume`.
        log(f"schedule: interrupted; {lines[-1] if lines else 'no run directory'} is kept")
        raise KeyboardInterrupt
    # `stallscope run` prints the run directory as stdout's last line when a run exists.
    run_dir = Path(lines[-1]) if lines and rc in (0, 1) else None
    if run_dir is not None and not (run_dir / "manifest.json").exists():
        raise ScheduleError(f"stallscope run printed {run_dir}, which has no manifest.json")
    return run_dir, rc


def _quiet(fn: Callable[[list[str]], int], argv: list[str], log: Callable[[str], None]) -> int:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = fn(argv)
    for ln in buf.getvalue().splitlines():
        log(f"  {ln}")
    return rc


def _changes_at(store: Any, sjob: str, stored: Any) -> list[Any]:
    """The findings placed at this run by any signal (the run's paired test, its in-run
    verdicts, E-Divisive over the job's stored series): detected over the whole history,
    so a shift placed at an earlier run is not alerted twice."""
    from analysis.history.changepoints import at_run
    return at_run(store, sjob, stored)


def stderr_log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
