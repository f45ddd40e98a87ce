"""Baseline policies resolved to specs against what a history store holds. The store here is
a minimal stand-in with the two queries the policy asks (runs, last_good) of the
analysis.history API; the end-to-end test (test_schedule_e2e) runs the real store."""
from __future__ import annotations

from dataclasses import dataclass

import subprocess

import pytest

from collectors.schedule.baseline import choose
from collectors.schedule.model import Baseline, Job, ScheduleError
from collectors.schedule.refs import commit_of, resolve

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


def test_first_run_compares_with_the_parent_commit(tmp_path):
    repo = tmp_path / "src"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    shas = []
    for i in range(2):
        (repo / "f").write_text(str(i))
        subprocess.run(["git", "-C", str(repo), "add", "f"], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", str(i)], check=True)
        shas.append(commit_of(str(repo), "HEAD"))
    j = job("previous", cand=f"git:{repo}@HEAD")
    c = choose(j, Store([]), "j", resolve(j.candidate))
    assert c.resolved.commit == shas[0] and "parent" in c.why
    assert choose(job("last-good", cand=f"git:{repo}@HEAD"), Store([Run("r1", {"cand": A})]), "j",
                  resolve(f"git:{repo}@HEAD")).resolved.commit == shas[0]
    with pytest.raises(ScheduleError, match="has no parent"):
        choose(j, Store([]), "j", resolve(f"git:{repo}@HEAD~1"))


def test_last_good_and_pinned():
    c = choose(job("last-good"), Store([Run("r2", {"cand": B})], good=Run("r1", {"cand": A})), "j")
    assert c.resolved.commit == A and "marked good" in c.why
    p = choose(job("pinned", "debsrc:redis@8.0.6"), Store([]), "j")
    assert p.resolved.spec == "debsrc:redis@8.0.6" and p.resolved.commit is None


def test_previous_needs_a_git_candidate():
    with pytest.raises(ScheduleError, match="needs a git: candidate"):
        choose(job("previous", cand="debsrc:redis"), Store([]), "j")
