"""Baseline policies resolved to specs against what a history store holds. The store here is
a minimal stand-in with the two queries the policy asks (runs, last_good) of the
analysis.history API; the end-to-end test (test_schedule_e2e) runs the real store."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from collectors.schedule.baseline import choose
from collectors.schedule.model import Baseline, Job, ScheduleError

A, B = "a" * 40, "b" * 40


@dataclass
class Run:
    run_id: str
    commits: dict


class Store:
    def __init__(self, runs, good=None):
        self._runs, self._good = runs, good

    def runs(self, job):
        return self._runs

    def last_good(self, job):
        return self._good


def job(policy: str, spec: str | None = None, cand: str = "git:/src/redis@unstable+make=OPTIMIZATION=-O3") -> Job:
    return Job(name="j", cron="0 2 * * *", cases=("mget-100keys",), candidate=cand,
               baseline=Baseline(policy, spec))


def test_previous_is_the_candidate_commit_of_the_last_run_with_the_same_modifiers():
    c = choose(job("previous"), Store([Run("r1", {"cand": A}), Run("r2", {"cand": B, "base": A})]), "j")
    assert c.resolved.spec == f"git:/src/redis@{B}+make=OPTIMIZATION=-O3" and c.resolved.commit == B
    assert "r2" in c.why


def test_first_run_has_no_baseline():
    c = choose(job("previous"), Store([]), "j")
    assert c.resolved is None and "candidate alone" in c.why
    assert choose(job("last-good"), Store([Run("r1", {"cand": A})]), "j").resolved is None


def test_last_good_and_pinned_and_none():
    c = choose(job("last-good"), Store([Run("r2", {"cand": B})], good=Run("r1", {"cand": A})), "j")
    assert c.resolved.commit == A and "marked good" in c.why
    p = choose(job("pinned", "debsrc:redis@8.0.6"), Store([]), "j")
    assert p.resolved.spec == "debsrc:redis@8.0.6" and p.resolved.commit is None
    assert choose(job("none"), Store([Run("r1", {"cand": A})]), "j").resolved is None


def test_previous_needs_a_git_candidate():
    with pytest.raises(ScheduleError, match="needs a git: candidate"):
        choose(job("previous", cand="debsrc:redis"), Store([]), "j")
