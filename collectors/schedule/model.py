"""The schedule file's model: what a job is once the YAML has been read and checked."""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.errors import UserError
from analysis.inputs.option_specs import DEFAULT_REPS, DEFAULT_SIZE

BASELINE_POLICIES = ("previous", "pinned", "last-good")


class ScheduleError(UserError):
    """A schedule that cannot be loaded or run; the message starts with file:line when it
    comes from the file."""


@dataclass(frozen=True)
class Baseline:
    policy: str                   # previous | pinned | last-good
    spec: str | None = None       # pinned only: a variant spec (debsrc:redis@8.0.6, git:...@v8.0.2)


@dataclass(frozen=True)
class Alert:
    kind: str                     # github | webhook | file
    target: str                   # owner/repo#N, a URL, or a path
    token_env: str = "GITHUB_TOKEN"   # github: where the token comes from
    token_file: str | None = None
    api_url: str = "https://api.github.com"
    line: int = 0                 # where the alert is in its file (for messages)


@dataclass(frozen=True)
class Job:
    name: str
    cron: str
    cases: tuple[str, ...]
    candidate: str                # a variant spec; git:PATH@REF moves with REF
    baseline: Baseline
    reps: int = DEFAULT_REPS
    profile_reps: int | None = None   # separate profile reps; None: the run's default
    size: str = DEFAULT_SIZE
    runner_labels: tuple[str, ...] = ("self-hosted",)
    runner_group: str | None = None       # the GitHub workflow's runner group (`schedule github` needs one)
    run_args: tuple[str, ...] = ()
    alerts: tuple[Alert, ...] = ()
    bisect: BisectPolicy | None = None   # None: regressions are reported with their range only
    line: int = 0                 # where the job starts in its file (for messages)

    def store_job(self, case: str) -> str:
        """The history store's job name: one series per job and case."""
        return self.name if len(self.cases) == 1 else f"{self.name}/{case}"


@dataclass(frozen=True)
class BisectPolicy:
    """A job's `bisect:` block: when its run regresses against its baseline over more than
    one commit, bisect that range within this budget (docs/schedule.md, docs/bisect.md)."""
    budget_s: float
    min_change: float | None = None      # None: from the host's noise (stallscope bisect's default)
    paired_windows: int | None = None    # None: the run's default


@dataclass
class Schedule:
    path: str
    jobs: list[Job] = field(default_factory=list)
    history: str | None = None    # store URL from the file; --history overrides
    runs_dir: str = "runs"
    reports_dir: str = "reports"

    def job(self, name: str) -> Job:
        for j in self.jobs:
            if j.name == name:
                return j
        raise ScheduleError(f"{self.path}: no job named {name!r} (jobs: {', '.join(j.name for j in self.jobs)})")
