"""What `stallscope pr github` writes: two workflows that actionlint (make setup installs it)
accepts, the measuring one read-only and secret-free, the commenting one never touching the
PR's code; the merge-base step's shell run for real on a git repository; config errors."""
from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from collectors.pr import cli, workflow
from tests.actionlint import lint

LABELS = ["self-hosted", "linux", "bare-metal"]


def _load(path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, None) or doc.get("on")      # YAML 1.1 reads a bare `on` as true
    return doc


def _write(tmp_path, *extra: str):
    cfg = tmp_path / "stallscope-pr.yaml"
    cfg.write_text("cases: [mset-50keys, get-iothreads@pipeline=1]\nsize: small\n"
                   "precision: 2%\nbudget: 20m\n")
    out = tmp_path / ".github" / "workflows"
    assert cli.main(["github", "--config", str(cfg), "--runner-labels", ",".join(LABELS),
                     "--out", str(out), *extra]) == 0
    return out / workflow.PR_FILE, out / workflow.COMMENT_FILE


def test_both_workflows_pass_actionlint_and_keep_the_write_token_away_from_pr_code(tmp_path):
    pr_file, comment_file = _write(tmp_path)
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    pr, com = _load(pr_file), _load(comment_file)

    assert pr["name"] == workflow.PR_NAME and pr["on"] == {"pull_request": {"types": ["labeled", "synchronize"]}}
    assert pr["permissions"] == {"contents": "read"}                  # nothing else, at any level
    assert "secrets." not in pr_file.read_text() and "permissions" not in pr["jobs"]["measure"]
    job = pr["jobs"]["measure"]
    assert "github.event.label.name == 'stallscope'" in job["if"]
    assert "contains(github.event.pull_request.labels.*.name, 'stallscope')" in job["if"]
    assert job["runs-on"] == LABELS and job["timeout-minutes"] == 60 + 2 * (45 + 20)
    runs = [s for s in job["steps"] if s.get("name", "").endswith("merge base vs head")]
    assert [s["env"]["CASE"] for s in runs] == ["mset-50keys", "get-iothreads@pipeline=1"]
    for s in runs:
        assert "--size small --paired --precision 2% --budget 20m" in s["run"]
        assert '--variant "base=git:$server@$MERGE_BASE" --variant "cand=git:$server@$HEAD_SHA"' in s["run"]
        assert 'stallscope compare "$run_dir" --out "$OUT/reports/$REPORT"' in s["run"]
        assert "${{" not in s["run"]        # event values reach the shell through env only
    upload = job["steps"][-1]
    assert upload["uses"] == workflow.UPLOAD and upload["with"]["name"] == workflow.ARTIFACT
    assert "stallscope-out/pr.json" in upload["with"]["path"]

    assert com["on"] == {"workflow_run": {"workflows": [workflow.PR_NAME], "types": ["completed"]}}
    assert com["permissions"] == {"pull-requests": "write", "actions": "read"}
    steps = com["jobs"]["comment"]["steps"]
    assert not [s for s in steps if s.get("uses", "").startswith("actions/checkout")]
    text = comment_file.read_text()
    assert "pull_request.head" not in text and "head_branch" not in text and "git " not in text
    dl = next(s for s in steps if s.get("uses") == workflow.DOWNLOAD)
    assert dl["with"]["run-id"] == "${{ github.event.workflow_run.id }}" and "github-token" in dl["with"]
    post = steps[-1]
    assert post["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert "stallscope pr comment" in post["run"] and "--require-head" in post["run"]


def test_actionlint_run_this_way_catches_a_mistake(tmp_path):
    """The same lint() call fails on the rendered file with one wrong reference in it."""
    pr_file, comment_file = _write(tmp_path)
    pr_file.write_text(pr_file.read_text().replace("steps.commits.outputs.merge_base",
                                                   "steps.commit.outputs.merge_base", 1))
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode != 0 and 'property "commit" is not defined' in r.stdout, r.stdout
    assert lint([comment_file], []).returncode != 0          # 'bare-metal' unknown without the config


def test_stallscope_from_its_own_repository_and_label_only(tmp_path):
    pr_file, comment_file = _write(tmp_path, "--stallscope-repo", "octo-org/stallscope", "--labeled-only",
                                   "--label", "perf check")
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    pr, com = _load(pr_file), _load(comment_file)
    assert pr["on"]["pull_request"]["types"] == ["labeled"]
    assert pr["jobs"]["measure"]["if"] == ("(github.event.action == 'labeled' && "
                                          "github.event.label.name == 'perf check')")
    checkouts = [s["with"] for s in com["jobs"]["comment"]["steps"] if s.get("uses") == workflow.CHECKOUT]
    assert checkouts == [{"repository": "octo-org/stallscope", "ref": "main", "path": "stallscope",
                          "persist-credentials": False}]               # stallscope's code, never the PR's
    assert com["permissions"] == {"pull-requests": "write", "actions": "read", "contents": "read"}
    assert any("make -C stallscope setup" in s.get("run", "") for s in pr["jobs"]["measure"]["steps"])


def test_the_merge_base_step_runs(tmp_path):
    """The rendered shell of the merge-base step, run as GitHub runs a step (bash -e -o
    pipefail) on a real repository: base and head diverged after a common commit."""
    pr_file, _ = _write(tmp_path)
    step = next(s for s in _load(pr_file)["jobs"]["measure"]["steps"] if s.get("id") == "commits")
    ws = tmp_path / "ws"
    server = ws / "server"
    git = ["git", "-C", str(server), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", "-b", "unstable", str(server)], check=True)
    shas = []
    for branch, msg in (("unstable", "common"), ("unstable", "base moved on"), ("topic", "the PR")):
        if msg == "the PR":
            subprocess.run(git + ["checkout", "-q", "-b", "topic", shas[0]], check=True)
        subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", msg], check=True)
        shas.append(subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    out = ws / "stallscope-out"
    env = {**os.environ, "BASE_SHA": shas[1], "HEAD_SHA": shas[2], "PR": "42", "OUT": str(out),
           "GITHUB_OUTPUT": str(ws / "github_output")}
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=ws,
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (ws / "github_output").read_text() == f"merge_base={shas[0]}\n"
    assert cli.read_pr_json(str(out / "pr.json")) == (42, shas[2], shas[0])


@pytest.mark.parametrize("text, message", [
    ("cases: [mset-50keys]\nbudgit: 20m\n", ":2: unknown key 'budgit'"),
    ("cases: [no-such-case]\n", "case 'no-such-case' at size default: no case named 'no-such-case'"),
    ("cases: [mset-50keys]\nprecision: 80%\n", ":2: precision '80%': must be between 0% and 50%"),
    ("cases: [mset-50keys]\nprecision:\nbudget: 1h\n", "budget goes with precision"),
    ("size: small\n", ":1: no 'cases:' list"),
    ("cases: ['mset; rm -rf ~']\n", ":1: case 'mset; rm -rf ~': letters, digits"),
])
def test_config_errors_name_the_line(tmp_path, capsys, text, message):
    cfg = tmp_path / "pr.yaml"
    cfg.write_text(text)
    assert cli.main(["github", "--config", str(cfg), "--out", str(tmp_path / "wf")]) == 2
    err = capsys.readouterr().err
    assert (f"{cfg}{message}" if message.startswith(":") else message) in err, err
    assert not (tmp_path / "wf").exists()
