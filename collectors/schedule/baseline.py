"""A job's baseline policy resolved to the variant spec that runs beside the candidate in
the same run (so the run-level verdict stays an in-run, interleaved comparison):
`previous` is the commit the job's previous run measured as candidate, `pinned` a fixed
spec, `last-good` the candidate commit of the job's last run marked good, `none` the
candidate alone. With no earlier run to point at, the candidate runs alone."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collectors.build.spec import parse_variant
from collectors.schedule.model import Job, ScheduleError
from collectors.schedule.refs import Resolved, pin, resolve

CAND, BASE = "cand", "base"


@dataclass(frozen=True)
class BaselineChoice:
    resolved: Resolved | None     # None: the candidate runs alone
    why: str                      # said in the log and stored with the run


def choose(job: Job, store: Any, store_job: str) -> BaselineChoice:
    policy = job.baseline.policy
    if policy == "none":
        return BaselineChoice(None, "baseline policy none: the candidate alone")
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
        return BaselineChoice(None, f"baseline {policy}: no {label} of {store_job} yet, the candidate alone")
    sha = earlier.commits[CAND]
    return BaselineChoice(Resolved(pin(job.candidate, sha), sha, sha),
                          f"baseline {policy}: {sha[:12]}, the candidate of the {label} (run {earlier.run_id})")
