"""What `stallscope schedule install` and `stallscope schedule github` write, checked by the
tools that judge them: systemd-analyze verify for the units, actionlint (make setup installs
it, pinned) for the workflow."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from commands import schedule as cli
from collectors.schedule.workflow import SECRET
from tests.actionlint import actionlint as _actionlint

DATA = Path(__file__).parent / "data" / "schedule"


def test_github_workflow_passes_actionlint(tmp_path, capsys):
    out = tmp_path / ".github" / "workflows" / "stallscope.yml"
    assert cli.main(["github", str(DATA / "two-jobs.yaml"), "--out", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    on = doc[True] if True in doc else doc["on"]   # YAML 1.1 reads a bare `on` as true
    assert [s["cron"] for s in on["schedule"]] == ["0 2 * * *", "30 2 * * 1-5"]
    assert "workflow_dispatch" in on
    job = doc["jobs"]["profile"]
    assert job["runs-on"] == {"group": "${{ matrix.group }}", "labels": "${{ matrix.labels }}"}
    assert job["strategy"]["matrix"]["include"] == [
        {"job": "mset", "group": "nightly-bench", "labels": ["self-hosted", "linux", "bare-metal"]},
        {"job": "mget-vs-release", "group": "nightly-bench", "labels": ["self-hosted", "x86-64"]}]
    steps = job["steps"]
    assert any("secrets.STALLSCOPE_HISTORY_URL" in str(s.get("env")) for s in steps)
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in steps)
    # the runner labels actionlint should accept as self-hosted ones
    (tmp_path / ".github" / "actionlint.yaml").write_text(
        "self-hosted-runner:\n  labels: [linux, bare-metal, x86-64]\n")
    r = subprocess.run([_actionlint(), "-no-color", str(out)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def undefined_references(doc: dict) -> list[str]:
    """The `matrix.X`, `inputs.X` and `secrets.X` a workflow's expressions use that it does
    not define (a matrix key, a dispatch input, the one documented secret). actionlint cannot
    see these: a matrix of `include` rows may hold any key, and a secret is never declared."""
    import re
    on = doc[True] if True in doc else doc["on"]
    inputs = set(on.get("workflow_dispatch", {}).get("inputs", {}))
    problems = []
    for name, job in doc["jobs"].items():
        rows = job.get("strategy", {}).get("matrix", {}).get("include", [])
        keys = {k for row in rows for k in row}
        for kind, ref in re.findall(r"\b(matrix|inputs|secrets)\.([A-Za-z_][A-Za-z0-9_-]*)", yaml.safe_dump(job)):
            known = {"matrix": keys, "inputs": inputs, "secrets": {SECRET, "STALLSCOPE_ALERT_TOKEN"}}[kind]
            if ref not in known:
                problems.append(f"{name}: {kind}.{ref}")
    return problems


def test_the_workflow_uses_only_what_it_defines(tmp_path):
    out = tmp_path / "stallscope.yml"
    assert cli.main(["github", str(DATA / "two-jobs.yaml"), "--out", str(out)]) == 0
    text = out.read_text()
    assert undefined_references(yaml.safe_load(text)) == []
    # a renamed matrix key or dispatch input, the slip this check is for, is caught
    assert undefined_references(yaml.safe_load(text.replace("matrix.job }}", "matrix.name }}", 1))) == [
        "profile: matrix.name"]
    assert undefined_references(yaml.safe_load(text.replace("inputs.job ", "inputs.jobs ", 1))) == [
        "profile: inputs.jobs"]


def test_alert_tokens_come_from_secrets_never_from_files_on_the_runner(tmp_path, capsys):
    """In the workflow an alert's token-env is filled from the secret of that name (of the
    job's environment); a token-file: (a file on the runner, readable by whatever ran there
    before) or a GITHUB_* variable (no secret can be named so) is an error naming the line."""
    out = tmp_path / "stallscope.yml"
    assert cli.main(["github", str(DATA / "two-jobs.yaml"), "--out", str(out)]) == 0
    job = yaml.safe_load(out.read_text())["jobs"]["profile"]
    assert job["environment"] == "stallscope-schedule"
    run = next(s for s in job["steps"] if "schedule run" in s.get("run", ""))
    assert run["env"]["STALLSCOPE_ALERT_TOKEN"] == "${{ secrets.STALLSCOPE_ALERT_TOKEN }}"
    text = (DATA / "two-jobs.yaml").read_text()
    line = text.splitlines().index("      - github: stallscope/stallscope#11") + 1
    for alert, said in (("token-file: ~/.config/stallscope/github-token", "token-file: is a file on the runner"),
                        ("token-env: GITHUB_TOKEN", "token-env: GITHUB_TOKEN: in a GitHub workflow give the name"),
                        ("api-url: https://ghe.example/api/v3", "token-env: GITHUB_TOKEN")):   # the default
        bad = tmp_path / "bad.yaml"
        bad.write_text(text.replace("token-env: STALLSCOPE_ALERT_TOKEN", alert))
        assert cli.main(["github", str(bad), "--out", str(tmp_path / "bad.yml")]) == 2
        err = capsys.readouterr().err
        assert f"{bad}:{line}: job 'mset': alert github: stallscope/stallscope#11: {said}" in err, err
        assert not (tmp_path / "bad.yml").exists()


def test_systemd_units_verify(tmp_path):
    sched = tmp_path / "nightly.yaml"
    sched.write_text((DATA / "two-jobs.yaml").read_text())
    units = tmp_path / "units"
    assert cli.main(["install", str(sched), "--out", str(units), "--name", "ss-nightly",
                     "--history", "postgresql://bench@127.0.0.1/stallscope"]) == 0
    service = (units / "ss-nightly.service").read_text()
    timer = (units / "ss-nightly.timer").read_text()
    exe = str(Path(sys.executable).with_name("stallscope"))
    assert f"ExecStart={exe} schedule run {sched} --once --history postgresql://bench@127.0.0.1/stallscope" in service
    assert "Type=oneshot" in service and "KillMode=control-group" in service
    assert "OnCalendar=*:0/15" in timer and "Persistent=true" in timer and "Unit=ss-nightly.service" in timer
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze not installed (Debian package systemd)")
    r = subprocess.run([tool, "verify", "--man=no", str(units / "ss-nightly.service"),
                        str(units / "ss-nightly.timer")], capture_output=True, text=True, timeout=120)
    problems = [ln for ln in (r.stdout + r.stderr).splitlines()
                if "ss-nightly" in ln or "Unknown" in ln or "Invalid" in ln]
    assert r.returncode == 0 and not problems, r.stdout + r.stderr


def test_a_regression_over_one_commit_names_it_and_a_failed_bisection_is_kept_with_why(tmp_path):
    from types import SimpleNamespace as NS
    from collectors.schedule.autobisect import bisect_regression
    from tests.git_history import small_repo
    from collectors.schedule.model import Baseline, BisectPolicy, Job, Schedule
    r, shas = small_repo(tmp_path, 3)
    kept = {}
    store = NS(set_culprit=lambda rid, found: kept.update({rid: found}))
    job = Job("j", "0 2 * * *", ("no-such-case",), f"git:{r}@main", Baseline("previous"),
              bisect=BisectPolicy(budget_s=60))
    sched = Schedule(str(tmp_path / "s.yaml"), reports_dir=str(tmp_path / "reports"))
    regression = [NS(direction="regression")]
    one = NS(id=1, job="j", run_id="r1", commits={"base": shas[1], "cand": shas[2]})
    found = bisect_regression(sched, job, "no-such-case", job.candidate, one, store, regression, print)
    assert found["culprit"] == shas[2] and found["subject"] == "commit 2" and kept[1] is found
    # two commits: a bisection, which fails on the unknown case; the schedule goes on with why
    two = NS(id=2, job="j", run_id="r2", commits={"base": shas[0], "cand": shas[2]})
    found = bisect_regression(sched, job, "no-such-case", job.candidate, two, store, regression, print)
    assert found["status"] == "failed" and "no-such-case" in found["why"] and kept[2] is found
    # a regression placed at an earlier run, alerted late: from its own range's good end to
    # this run's candidate, not this run's range
    late = [NS(direction="regression", first_run=NS(id=1), commit_range=(shas[0], shas[1]))]
    three = NS(id=3, job="j", run_id="r3", commits={"base": shas[1], "cand": shas[2]})
    found = bisect_regression(sched, job, "no-such-case", job.candidate, three, store, late, print)
    assert (found["status"], found["good"], found["bad"]) == ("failed", shas[0], shas[2]) and kept[3] is found
    # no regression, or no bisect: block: nothing
    assert bisect_regression(sched, job, "x", job.candidate, two, store, [NS(direction="improvement")], print) is None


def test_a_regressions_range_starts_at_the_baseline_and_probes_the_run_before_its_place_first(tmp_path):
    from types import SimpleNamespace as NS
    from collectors.schedule.autobisect import _ends, _range
    from tests.git_history import small_repo
    r, shas = small_repo(tmp_path, 5)
    # pinned baseline shas[0]; the run of shas[4] has a regression placed at it, the run before built shas[3]
    run = NS(id=5, commits={"base": shas[0], "cand": shas[4]})
    here = [NS(first_run=NS(id=5), last_before=NS(commit=lambda role: shas[3]))]
    assert _ends(run, here) == (shas[0], shas[4], shas[3])
    good, first, commits = _range(r, shas[0], shas[4], shas[3])
    assert (good, first, len(commits)) == (shas[0], shas[3], 5)
    # alerted late, placed at the run of shas[2]: the good end of its own range, shas[1], first
    late = [NS(first_run=NS(id=3), commit_range=(shas[1], shas[2]))]
    assert _ends(run, late) == (shas[0], shas[4], shas[1])
    # a previous-run baseline past that place: the range starts at its own good end
    prev = NS(id=5, commits={"base": shas[3], "cand": shas[4]})
    good, first, commits = _range(r, *_ends(prev, late))
    assert (good, first, [c.sha for c in commits]) == (shas[1], None, shas[1:])
