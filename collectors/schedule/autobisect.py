"""A scheduled job bisects its own regressions: when a job with a `bisect:` block records a run
whose alerted change points hold a regression, and the run's baseline and candidate are two
commits of one local git repository, the first-parent range from the run's baseline to its
candidate is bisected within the block's budget (collectors/bisect/driver.py, the same code
as `stallscope bisect`), its first probe the candidate of the run before the one the history
places the change at (a regression placed at an earlier run and alerted late: the good end of
its own range). What it found (the culprit, or why none) is kept on the stored run
(`meta.bisect`), where the alert and `stallscope history changes` show it beside the range. A
range of one commit needs no bisection: that commit is the culprit."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from analysis.bisect.search import CULPRIT, Bisection
from analysis.errors import StallscopeError
from collectors.bisect import driver
from collectors.bisect.commits import BisectError, first_parent_range
from collectors.schedule.baseline import BASE, CAND
from collectors.schedule.model import Job, Schedule
from collectors.variants.spec import parse_variant

Log = Callable[[str], None]


def bisect_regression(sched: Schedule, job: Job, case: str, candidate: str, stored: Any, store: Any,
                      changes: list, log: Log) -> dict[str, Any] | None:
    """Bisect the run's range when the job asks and a regression was found; returns what was
    kept on the stored run (None: nothing to bisect, or it could not be)."""
    regressions = [c for c in changes if getattr(c, "direction", "") == "regression"]
    if job.bisect is None or not regressions:
        return None
    good, bad, first = _ends(stored, regressions)
    spec = parse_variant(f"x={candidate}")
    if spec.kind != "git" or not good or not bad:
        log(f"schedule: {stored.job}: a regression, but its ends are not two commits of a git "
            f"repository (candidate {candidate}): not bisected")
        return None
    repo = Path(spec.source).expanduser().resolve()
    try:
        good, first, commits = _range(repo, good, bad, first)
    except BisectError as e:
        log(f"schedule: {stored.job}: not bisected: {e}")
        return None
    if len(commits) == 2:
        c = commits[-1]
        found = {"status": CULPRIT, "culprit": c.sha, "subject": c.subject, "date": c.date,
                 "good": good, "bad": bad, "why": "the range holds this one commit"}
    else:
        out = Path(sched.reports_dir) / stored.run_id / "bisect"
        log(f"schedule: {stored.job}: bisecting {good[:12]}..{bad[:12]} ({len(commits) - 1} commits) "
            f"into {out}")
        p = job.bisect
        try:
            b = driver.load(out) if (out / driver.STATE).exists() else driver.start(
                out, case, repo, good, bad, size=job.size, min_change=p.min_change, budget_s=p.budget_s,
                paired_windows=p.paired_windows, log=log, first=first)
            b = driver.bisect(out, b, log, progress=False)
        except StallscopeError as e:
            # a commit of the range that does not build, a run that cannot start: the alert
            # still goes out, with the range and why it was not narrowed
            log(f"schedule: {stored.job}: the bisection failed: {e}")
            found = {"status": "failed", "good": good, "bad": bad, "why": f"the bisection failed: {e}",
                     "report": str(out / "report.md")}
        else:
            found = _found(b, out)
    store.set_culprit(stored.id, found)
    return found


def _ends(stored: Any, regressions: list) -> tuple[str | None, str | None, str | None]:
    """The range to bisect and the commit to probe first: from the run's baseline to its
    candidate, first the candidate of the run before the one the regression is placed at. A
    regression placed at this run: that is the previous run's candidate. One placed at an
    earlier run and alerted late (analysis/history/alert_due.py): the good end of its own
    range, the run before its place, which a pinned baseline's range holds (a previous-run
    baseline's does not: bisect_regression then starts the range there). Only its own
    range would miss a shift E-Divisive placed a run late (its place is uncertain by a run);
    the whole range probed there first costs one step when the place is right (bench 5c)."""
    here = [c for c in regressions if getattr(getattr(c, "first_run", None), "id", stored.id) == stored.id]
    if here:
        before = getattr(here[0], "last_before", None)
        first = before.commit("cand") if before is not None else None
    else:
        first = regressions[0].commit_range[0] or None
    return stored.commits.get(BASE) or first, stored.commits.get(CAND), first


def _range(repo: Path, good: str, bad: str, first: str | None) -> tuple[str, str | None, list]:
    """(good, first, the range): from the run's baseline when the range holds `first`, else
    (a previous-run baseline past a late regression's place) from `first` itself."""
    try:
        commits = first_parent_range(repo, good, bad)
    except BisectError:
        if not first or first == good:
            raise
        commits = []
    if first and not any(c.sha.startswith(first) for c in commits[:-1]):
        return first, None, first_parent_range(repo, first, bad)
    return good, first, commits


def _found(b: Bisection, out: Path) -> dict[str, Any]:
    c = b.culprit()
    got: dict[str, Any] = {"status": b.status, "good": b.commits[0].sha, "bad": b.commits[-1].sha,
                           "why": b.why, "report": str(out / "report.md")}
    if c is not None:
        got.update(culprit=c.sha, subject=c.subject, date=c.date,
                   functions=[f["function"] for f in b.functions][:5])
    return got
