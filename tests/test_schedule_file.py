"""The schedule file: loading, file:line errors, cron due-ness, moving refs (real git)."""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from collectors.schedule.due import is_due, last_fire
from collectors.schedule.loader import load_schedule
from collectors.schedule.model import ScheduleError
from collectors.schedule.refs import pin, resolve

DATA = Path(__file__).parent / "data" / "schedule"
UTC = timezone.utc


def test_example_file_loads_with_defaults_and_overrides():
    s = load_schedule(DATA / "two-jobs.yaml")
    assert [j.name for j in s.jobs] == ["mset", "mget-vs-release"]
    mset, mget = s.jobs
    assert mset.cases == ("mset-10keys",) and mset.reps == 3 and mset.size == "small"
    assert mset.baseline.policy == "previous"
    assert mset.runner_labels == ("self-hosted", "linux", "bare-metal")
    assert [a.kind for a in mset.alerts] == ["github", "file"]
    assert mset.alerts[0].token_env == "STALLSCOPE_ALERT_TOKEN" and mset.alerts[0].token_file is None
    assert mget.baseline.policy == "pinned" and mget.baseline.spec == "debsrc:redis@8.0.6"
    assert mget.reps == 5 and mget.profile_reps == 0 and mget.runner_labels == ("self-hosted", "x86-64")
    assert mget.store_job("mset-50keys") == "mget-vs-release/mset-50keys"
    assert mset.store_job("mset-10keys") == "mset"
    assert s.history == "sqlite:///history.sqlite"


BAD = [
    ("jobs:\n  a:\n    cron: '0 2 * *'\n    case: x\n    candidate: debsrc:redis\n", 3, "not a cron expression"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n    candidate: svn:foo\n", 5, "must start with debsrc:"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n    candidat: debsrc:redis\n", 5, "unknown key 'candidat'"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n", 2, "no 'candidate:'"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n    candidate: debsrc:redis\n    reps: 0\n", 6, "reps must be"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n    candidate: debsrc:redis\n    baseline: latest\n",
     6, "baseline 'latest'"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n    candidate: debsrc:redis\n    alerts:\n"
     "      - github: owner/repo\n", 7, "OWNER/REPO#NUMBER"),
    ("jobs:\n  a: [1, 2\n", 3, "malformed YAML"),
    ("jobs:\n  a:\n    cron: '0 2 * * *'\n    cron: '1 2 * * *'\n", 4, "duplicate key"),
    ("", 1, "empty"),
]


@pytest.mark.parametrize("text,line,msg", BAD)
def test_bad_files_name_file_and_line(tmp_path, text, line, msg):
    f = tmp_path / "sched.yaml"
    f.write_text(text)
    with pytest.raises(ScheduleError) as e:
        load_schedule(f)
    assert str(e.value).startswith(f"{f}:{line}: "), str(e.value)
    assert msg in str(e.value)


JOB = "jobs:\n  a:\n    cron: '0 2 * * *'\n    case: x\n    candidate: git:/r@main\n"


def test_a_bisect_block_is_read_with_its_defaults(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(JOB + "    bisect: {budget: 45m, min-change: 3%, paired-windows: 16}\n")
    b = load_schedule(f).jobs[0].bisect
    assert (b.budget_s, b.min_change, b.paired_windows) == (2700.0, 0.03, 16)
    f.write_text(JOB + "    bisect: true\n")
    b = load_schedule(f).jobs[0].bisect
    assert (b.budget_s, b.min_change, b.paired_windows) == (7200.0, None, None)
    f.write_text(JOB)
    assert load_schedule(f).jobs[0].bisect is None


@pytest.mark.parametrize("block,msg", [("{budgt: 1h}", "unknown key 'budgt' in bisect"),
                                       ("{min-change: 70%}", "bisect min-change: precision '70%'"),
                                       ("{budget: soon}", "bisect budget: duration 'soon'"),
                                       ("{paired-windows: 1}", "paired-windows must be a whole number >= 2")])
def test_a_bad_bisect_block_names_its_line(tmp_path, block, msg):
    f = tmp_path / "s.yaml"
    f.write_text(JOB + f"    bisect: {block}\n")
    with pytest.raises(ScheduleError, match=f"s.yaml:6: .*{msg}"):
        load_schedule(f)


def test_missing_file_says_so(tmp_path):
    with pytest.raises(ScheduleError, match="cannot read the schedule file"):
        load_schedule(tmp_path / "nope.yaml")


def test_due_follows_cron_in_utc():
    cron = "0 2 * * *"
    at = (lambda d, h, m=0: datetime(2026, 11, d, h, m, tzinfo=UTC))
    assert last_fire(cron, at(23, 2)) == at(23, 2)
    assert last_fire(cron, at(23, 1, 59)) == at(22, 2)
    assert is_due(cron, None, at(23, 1))                    # never ran
    assert not is_due(cron, at(22, 2, 5), at(23, 1, 59))    # ran after last night's fire
    assert is_due(cron, at(22, 2, 5), at(23, 2, 0))         # tonight's fire passed
    assert is_due(cron, datetime(2026, 11, 22, 1, 0), at(22, 3))   # naive times are UTC


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_moving_ref_resolves_to_the_commit_it_points_at_now(tmp_path):
    repo = tmp_path / "src"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "unstable")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    (repo / "a.c").write_text("int a;\n")
    _git(repo, "add", "a.c")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    spec = f"git:{repo}@unstable+make=OPTIMIZATION=-O2"
    r1 = resolve(spec)
    assert r1.commit == first and r1.ref == "unstable"
    assert r1.spec == f"git:{repo}@{first}+make=OPTIMIZATION=-O2"
    (repo / "a.c").write_text("int a, b;\n")
    _git(repo, "commit", "-q", "-am", "two")
    r2 = resolve(spec)
    assert r2.commit == _git(repo, "rev-parse", "HEAD") != first
    assert resolve(f"git:{repo}").commit == r2.commit        # no ref: HEAD
    with pytest.raises(ScheduleError, match="cannot resolve the ref"):
        resolve(f"git:{repo}@no-such-branch")
    assert resolve("debsrc:redis@8.0.6").commit is None
    assert pin(f"git:{repo}@x+patch=p.patch", "f" * 40) == f"git:{repo}@{'f' * 40}+patch=p.patch"
