"""`stallscope schedule run|check|install|github`: scheduled profiling (docs/schedule.md)."""
from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from collectors.command import run_command
from collectors.host import procs
from collectors.pr import runners
from collectors.schedule import due, jobrun, systemd, workflow
from collectors.schedule.alerting import make_deliverer
from collectors.schedule.loader import load_schedule
from collectors.schedule.model import Job, Schedule, ScheduleError
from commands import run_arguments

EPILOG = """\
Examples:
  stallscope schedule check nightly.yaml              # read and check it, list jobs and next runs
  stallscope schedule run nightly.yaml --once         # run every due job once, then exit
  stallscope schedule run nightly.yaml --once --job mset --force   # that job now, due or not
  stallscope schedule run nightly.yaml --history postgresql://bench@db/stallscope
  stallscope schedule install nightly.yaml --out ~/.config/systemd/user
  stallscope schedule github nightly.yaml --out .github/workflows/stallscope.yml

A job is due when it never ran or its cron expression (UTC) fired since its last recorded
run started. A case whose candidate commit was measured already is skipped. Every run is
recorded in the history store: --history URL, else the file's history:, else the default
SQLite file (docs/history.md). Without --once the command stays up and runs jobs as they
come due. Exit status: 0 all ran or skipped, 1 a run failed, 2 bad input, 130 interrupted.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stallscope schedule", epilog=EPILOG,
                                description="Scheduled profiling: run a schedule file's due jobs, "
                                            "or write systemd units / a GitHub Actions workflow that do.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    r = sub.add_parser("run", help="run the due jobs and record them in the history store")
    r.add_argument("file", metavar="FILE", help="schedule file (YAML, docs/schedule.md)")
    r.add_argument("--once", action="store_true", help="one pass over the due jobs, then exit")
    r.add_argument("--job", action="append", metavar="NAME", help="only this job (repeatable)")
    r.add_argument("--force", action="store_true", help="run the selected jobs whether due or not")
    r.add_argument("--history", metavar="URL", help="history store: path, sqlite:///PATH or postgresql://...")
    c = sub.add_parser("check", help="read and check a schedule file; list the jobs and their next run")
    c.add_argument("file", metavar="FILE")
    i = sub.add_parser("install", help="write a systemd service + timer that run the schedule")
    i.add_argument("file", metavar="FILE")
    i.add_argument("--out", default=".", metavar="DIR", help="where the units go (default .; "
                   "/etc/systemd/system or ~/.config/systemd/user to install)")
    i.add_argument("--name", default="stallscope-schedule", help="unit name (default stallscope-schedule)")
    i.add_argument("--every", default="*:0/15", metavar="ONCALENDAR",
                   help="timer tick, a systemd OnCalendar value (default *:0/15, every 15 min)")
    i.add_argument("--user", help="run the service as this user (system units)")
    i.add_argument("--history", metavar="URL")
    g = sub.add_parser("github", help="write a GitHub Actions workflow for self-hosted runners")
    g.add_argument("file", metavar="FILE")
    g.add_argument("--out", default=".github/workflows/stallscope-schedule.yml", metavar="PATH")
    g.add_argument("--secret", default=workflow.SECRET, help="secret holding the history URL")
    g.add_argument("--environment", default=workflow.ENVIRONMENT, metavar="NAME",
                   help=f"the job's GitHub environment, whose secrets only the default branch gets "
                   f"(default {workflow.ENVIRONMENT}; docs/schedule.md)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run_command("stallscope schedule", lambda: _main(args),
                       "(recorded runs are kept)")


def _main(args: argparse.Namespace) -> int:
    sched = load_schedule(args.file)
    if args.action == "check":
        return check(sched)
    if args.action == "install":
        return install(sched, args)
    if args.action == "github":
        out = Path(args.out)
        if not runners.GROUP.fullmatch(args.environment):
            raise ScheduleError(f"--environment {args.environment!r}: give an environment name (letters, digits, "
                                "spaces and _ . -)")
        runners.check_apart(workflow.targets(sched, str(out)), runners.peers(out))
        text = workflow.render(sched, args.file, args.secret, args.environment)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(out)
        return 0
    procs.install_signal_handlers()
    return run(sched, args)


def check(sched: Schedule) -> int:
    now = datetime.now(timezone.utc)
    for j in sched.jobs:
        print(f"{j.name}: cron {j.cron!r} (next {due.next_fire(j.cron, now):%Y-%m-%d %H:%M} UTC), "
              f"cases {', '.join(j.cases)}, candidate {j.candidate}, baseline {j.baseline.policy}"
              f"{' ' + j.baseline.spec if j.baseline.spec else ''}, runs-on {', '.join(j.runner_labels)}")
    return 0


def install(sched: Schedule, args: argparse.Namespace) -> int:
    exe = str(Path(sys.executable).with_name("stallscope"))
    units = systemd.render(args.name, Path(args.file).resolve(), Path.cwd(), exe,
                           args.history or sched.history, args.every, args.user)
    for p in systemd.write(units, args.name, Path(args.out)):
        print(p)
    print(f"then: systemctl daemon-reload && systemctl enable --now {args.name}.timer", file=sys.stderr)
    return 0


def open_store(url: str | None):
    try:
        from analysis.history.store import HistoryStore
    except ImportError as e:
        raise ScheduleError(f"the history store (analysis.history) is not available: {e}") from None
    return HistoryStore.open(url)


def selected(sched: Schedule, names: list[str] | None) -> list[Job]:
    return [sched.job(n) for n in names] if names else list(sched.jobs)


def run(sched: Schedule, args: argparse.Namespace) -> int:
    jobs = selected(sched, args.job)
    store = open_store(args.history or sched.history)
    log = jobrun.stderr_log
    rc = run_pass(sched, jobs, store, args.force, log)
    while not args.once:
        now = datetime.now(timezone.utc)
        wake = min(due.next_fire(j.cron, now) for j in jobs)
        log(f"schedule: next due at {wake:%Y-%m-%d %H:%M} UTC")
        time.sleep(max(1.0, (wake - now).total_seconds()))
        rc = max(rc, run_pass(sched, jobs, store, False, log))
    return rc


def run_pass(sched: Schedule, jobs: list[Job], store, force: bool, log) -> int:
    rc = 0
    deliver = make_deliverer(log)
    for job in jobs:
        last = last_started(store, job)
        if not force and not due.is_due(job.cron, last):
            log(f"schedule: {job.name}: not due (last run {last:%Y-%m-%d %H:%M} UTC, cron {job.cron!r})")
            continue
        for out in jobrun.run_job(sched, job, store, log, deliver, run_arguments=run_arguments):
            if out.status == "failed":
                log(f"schedule: {out.job}: failed: {out.message}")
                rc = 1
    return rc


def last_started(store, job: Job) -> datetime | None:
    times = [r.started_at for case in job.cases for r in store.runs(job.store_job(case))]
    times = [datetime.fromisoformat(t) if isinstance(t, str) else t for t in times if t]
    return max(times) if times else None
