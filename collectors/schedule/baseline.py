"""A job's baseline policy resolved to the variant spec that runs beside the candidate in
the same run (so the run-level verdict stays an in-run, interleaved comparison):
`previous` is the commit the job's previous run measured as candidate, `pinned` a fixed
spec, `last-good` the candidate commit of the job's last run marked good. With no earlier
run to point at (a job's first run), the baseline is the candidate commit's parent: every
stored run is a comparison, which the history's in-run verdicts need."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collectors.variants.spec import parse_variant
from collectors.schedule.model import Job, ScheduleError
from collectors.schedule.refs import Resolved, commit_of, pin, resolve

CAND, BASE = "cand", "base"


@dataclass(frozen=True)
class BaselineChoice:
    resolved: Resolved | None     # None: the candidate runs alone
    why: str                      # said in the log and stored with the run


def choose(job: Job, store: Any, store_job: str, cand: Resolved | None = None) -> BaselineChoice:
    policy = job.baseline.policy
    if policy == "pinned":
        r = resolve(job.baseline.spec or "")
        return BaselineChoice(r, f"pinned baseline {job.baseline.spec}")
    if parse_variant(f"x={job.candidate}").kind != "git":
        raise ScheduleError(f"job {job.name!r}: baseline {policy!r} needs a git: candidate "
                            "(it measures an earlier commit of the same tree); use 'pinned: SPEC'")
    if policy == "previous":
        runs = [r for r in store.runs(store_job) if (r.commits or {}).get(CAND)]
        earlier = runs[-1] if runs else None
        label = "previous run"
    else:
        earlier = store.last_good(store_job)
        label = "last run marked good"
    if earlier is None:
        return _parent(job, cand, f"baseline {policy}: no {label} of {store_job} yet")
    sha = earlier.commits[CAND]
    return BaselineChoice(Resolved(pin(job.candidate, sha), sha, sha),
                          f"baseline {policy}: {sha[:12]}, the candidate of the {label} (run {earlier.run_id})")


def _parent(job: Job, cand: Resolved | None, why: str) -> BaselineChoice:
    """The first run of a job compares the candidate commit with its first parent."""
    if cand is None or not cand.commit:
        return BaselineChoice(None, f"{why}, the candidate alone")
    repo = parse_variant(f"x={job.candidate}").source
    try:
        sha = commit_of(repo, f"{cand.commit}^")
    except ScheduleError:
        raise ScheduleError(f"job {job.name!r}: {why} and commit {cand.commit[:12]} has no parent to "
                            "compare with; give the job 'baseline: {pinned: SPEC}' for its first run") from None
    return BaselineChoice(Resolved(pin(job.candidate, sha), sha, f"{cand.commit}^"),
                          f"{why}: the candidate's parent {sha[:12]}")
