"""`stallscope schedule github`: a GitHub Actions workflow for self-hosted bare-metal runners:
`on: schedule` (every job's cron) + `workflow_dispatch` (one job or all), a matrix over the
jobs with `runs-on` each job's runner labels, the reports uploaded as artifacts, the
history written to the shared database whose URL is a repository secret.

Third-party actions are pinned by commit (collectors/pr/actions.py) and the checkout keeps
no credentials in .git/config (`persist-credentials: false`): nothing this job runs needs to
push, and a token left on a self-hosted runner's disk outlives the job. The job holds the
history URL and alert tokens: run it on runners no pull request's code runs on
(docs/schedule.md, docs/pr.md)."""
from __future__ import annotations

import re

import yaml

from collectors.pr.actions import CHECKOUT, UPLOAD, annotate
from collectors.pr.runners import SCHEDULE_ROLE, RunsOn, Target
from collectors.schedule.model import Schedule, ScheduleError

SECRET = "STALLSCOPE_HISTORY_URL"
SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The job's environment: its secrets (the history URL, alert tokens) can be environment
# secrets, given only to jobs the environment's rules admit (deployment branches: the
# default branch), not to any workflow of any branch as repository secrets are.
ENVIRONMENT = "stallscope-schedule"


def targets(sched: Schedule, out: str) -> list[Target]:
    """Where each job of the workflow runs: its runner group and labels. ScheduleError
    (file:line) for a job without a group: labels are no wall between these jobs, which
    hold the alert tokens, and a pull request's (collectors/pr/runners.py)."""
    for j in sched.jobs:
        if not j.runner_group:
            raise ScheduleError(f"{sched.path}:{j.line}: job {j.name!r} has no runner-group: on GitHub, scheduled "
                                "jobs run on a runner group of their own that only this workflow may use, never the "
                                "PR workflow's (docs/schedule.md); add runner-group: NAME to the job or to defaults:")
    return [Target(f"{out}, job profile {j.name}", SCHEDULE_ROLE, RunsOn(j.runner_group, j.runner_labels))
            for j in sched.jobs]


def alert_secrets(sched: Schedule, environment: str) -> dict[str, str]:
    """The step's env for the GitHub alerts' tokens: each `token-env: NAME` from the secret
    NAME. ScheduleError (file:line) for a `token-file:` (a file on the runner outlives the
    job and whatever ran there before can read it) or a GITHUB_* variable (no secret may be
    named so, and the job's own token is read-only)."""
    env = {}
    for j in sched.jobs:
        for a in (a for a in j.alerts if a.kind == "github"):
            at = f"{sched.path}:{a.line}: job {j.name!r}: alert github: {a.target}"
            if a.token_file:
                raise ScheduleError(f"{at}: token-file: is a file on the runner; in a GitHub workflow the token "
                                    f"comes from a secret: give token-env: NAME and set the secret NAME in the "
                                    f"environment {environment} (docs/schedule.md)")
            if not SECRET_NAME.fullmatch(a.token_env) or a.token_env.upper().startswith("GITHUB_"):
                raise ScheduleError(f"{at}: token-env: {a.token_env}: in a GitHub workflow give the name of a "
                                    "secret holding the token (letters, digits and _, not GITHUB_*: the job's own "
                                    "token may not comment)")
            env[a.token_env] = f"${{{{ secrets.{a.token_env} }}}}"
    return env


def render(sched: Schedule, schedule_path: str, secret: str = SECRET, environment: str = ENVIRONMENT) -> str:
    targets(sched, schedule_path)
    crons = sorted({j.cron for j in sched.jobs})
    matrix = [{"job": j.name, "group": j.runner_group, "labels": list(j.runner_labels)} for j in sched.jobs]
    # the job's name reaches the script through env:, not pasted into its text
    run = f'stallscope schedule run {schedule_path} --once --job "$JOB" --history "$STALLSCOPE_HISTORY"'
    steps = [
        {"uses": CHECKOUT, "with": {"fetch-depth": 0, "persist-credentials": False}},
        {"name": "Set up stallscope (idempotent; fast on a prepared runner)", "run": "make setup"},
        {"name": "Run the job when due (or when dispatched)",
         # matrix is not available in a job-level `if`: a dispatch for one job skips here.
         "if": "${{ github.event_name != 'workflow_dispatch' || inputs.job == '' || inputs.job == matrix.job }}",
         "env": {"STALLSCOPE_HISTORY": f"${{{{ secrets.{secret} }}}}", **alert_secrets(sched, environment),
                 "JOB": "${{ matrix.job }}",
                 "FORCE": "${{ github.event_name == 'workflow_dispatch' && '--force' || '' }}"},
         # ${FORCE:+"$FORCE"}: the flag when set, no empty argument when not (shellcheck SC2086)
         "run": f'. .venv/bin/activate\n{run} ${{FORCE:+"$FORCE"}}\n'},
        {"name": "Upload the reports", "if": "always()", "uses": UPLOAD,
         "with": {"name": "stallscope-${{ matrix.job }}-${{ github.run_id }}",
                  "path": f"{sched.reports_dir}/\n{sched.runs_dir}/*/manifest.json\n",
                  "if-no-files-found": "ignore"}},
    ]
    job = {"name": "${{ matrix.job }}",
           "strategy": {"fail-fast": False, "matrix": {"include": matrix}},
           "runs-on": {"group": "${{ matrix.group }}", "labels": "${{ matrix.labels }}"},
           "environment": environment,
           "timeout-minutes": 360,
           "steps": steps}
    doc = {"name": "stallscope scheduled profiling",
           "on": {"schedule": [{"cron": c} for c in crons],
                  "workflow_dispatch": {"inputs": {"job": {
                      "description": "one job of the schedule (empty: all)", "required": False,
                      "type": "string", "default": ""}}}},
           # One scheduled run of a job at a time: two would share the bare-metal box.
           "concurrency": {"group": "stallscope-schedule-${{ github.ref }}", "cancel-in-progress": False},
           "permissions": {"contents": "read"},
           "jobs": {"profile": job}}
    header = (f"# Generated by `stallscope schedule github {schedule_path}`; regenerate after editing\n"
              f"# the schedule. Needs the secret {secret} (postgresql://... URL of the shared history\n"
              f"# database) in the environment {environment} (deployment branches: the default one), the\n"
              "# self-hosted runners in the runner groups below, which only this workflow may use and\n"
              "# which never run pull requests' code (docs/schedule.md).\n")
    return header + annotate(yaml.safe_dump(doc, sort_keys=False, width=100))
