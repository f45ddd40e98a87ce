"""What `stallscope pr github` writes: two workflows that actionlint (make setup installs it)
accepts; the measuring one read-only, secret-free, labelled-only, with a cache of its own;
the trusted one (comment, unlabel) on a GitHub-hosted runner with stallscope at a pinned
commit, never touching the PR's code. Which job runs for which event, and in which
concurrency group, is evaluated from the generated YAML (tests/gh_expr.py); the steps' shell
is run for real (the merge base on a git repository, the comment and unlabel steps against
the local GitHub-like server with the standard library only). Config errors name the line."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from collectors.pr import actions, post, workflow
from collectors.pr.runners import RunsOn
from commands import pr as cli
from tests import github_like
from tests.actionlint import lint
from tests.conftest import REPO
from tests.gh_expr import condition, interpolate

LABELS = ["self-hosted", "linux", "bare-metal"]
STALLSCOPE_SHA = "5e0c3a1f2b4d6e8f00112233445566778899aabb"
PIN = ["--stallscope-repo", "octo-org/stallscope", "--stallscope-ref", STALLSCOPE_SHA, "--runner-group", "pr-bench"]
SHA1 = "3f5d2c1b0a99887766554433221100ffeeddccbb"
SHA2 = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"


def _load(path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, None) or doc.get("on")      # YAML 1.1 reads a bare `on` as true
    return doc


def _write(tmp_path, *extra: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = tmp_path / "stallscope-pr.yaml"
    cfg.write_text("cases: [mset-50keys, get-iothreads@pipeline=1]\nsize: small\n"
                   "precision: 2%\nbudget: 20m\n")
    out = tmp_path / ".github" / "workflows"
    assert cli.main(["github", "--config", str(cfg), "--runner-labels", ",".join(LABELS),
                     "--out", str(out), *PIN, *extra]) == 0
    return out / workflow.PR_FILE, out / workflow.COMMENT_FILE


def _pr_event(action: str, label: str | None = None, labels=(), fork: bool = False, number: int = 42) -> dict:
    head_repo = "mallory/redis" if fork else "octo-org/redis"
    pr = {"number": number, "labels": [{"name": x} for x in labels],
          "head": {"sha": SHA2, "repo": {"full_name": head_repo}},
          "base": {"sha": SHA1, "repo": {"full_name": "octo-org/redis"}}}
    event = {"action": action, "pull_request": pr}
    if label is not None:
        event["label"] = {"name": label}
    return event


def _ctx(event_name: str, event: dict, **extra) -> dict:
    return {"github": {"event_name": event_name, "event": event, "repository": "octo-org/redis",
                       "token": github_like.TOKEN, "workspace": "/ws", **extra},
            "runner": {"temp": "/tmp/runner-temp"}}


def _run_event(path: str = ".github/workflows/stallscope-pr.yml", conclusion: str = "success",
               event: str = "pull_request", branch: str = "topic", head_repo: str = "mallory/redis") -> dict:
    return {"workflow_run": {"id": 77, "name": workflow.PR_NAME, "path": path, "event": event,
                             "conclusion": conclusion, "head_sha": SHA2, "head_branch": branch,
                             "head_repository": {"full_name": head_repo},
                             "html_url": "https://github.com/octo-org/redis/actions/runs/77",
                             "pull_requests": []}}


def test_both_workflows_pass_actionlint_and_keep_the_write_token_away_from_pr_code(tmp_path):
    pr_file, comment_file = _write(tmp_path)
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    pr, com = _load(pr_file), _load(comment_file)

    assert pr["name"] == workflow.PR_NAME
    assert pr["permissions"] == {"contents": "read"}                  # nothing else, at any level
    assert "secrets." not in pr_file.read_text() and "permissions" not in pr["jobs"]["measure"]
    job = pr["jobs"]["measure"]
    assert "github.event.label.name == 'stallscope'" in job["if"]
    assert job["runs-on"] == {"group": "pr-bench", "labels": LABELS} and job["timeout-minutes"] == 60 + 2 * (45 + 20)
    runs = [s for s in job["steps"] if s.get("name", "").endswith("merge base vs head")]
    assert [s["env"]["CASE"] for s in runs] == ["mset-50keys", "get-iothreads@pipeline=1"]
    for s in runs:
        assert "--size small --precision 2% --budget 20m --pairing auto" in s["run"]   # the run's default
        assert '--variant "base=git:$server@$MERGE_BASE" --variant "cand=git:$server@$HEAD_SHA"' in s["run"]
        assert 'stallscope compare "$run_dir" --out "$OUT/reports/$REPORT"' in s["run"]
        assert "${{" not in s["run"]        # event values reach the shell through env only
    upload = job["steps"][-1]
    assert upload["uses"] == actions.UPLOAD and upload["with"]["name"] == workflow.ARTIFACT
    assert "stallscope-out/pr.json" in upload["with"]["path"]

    assert com["on"]["workflow_run"] == {"workflows": [workflow.PR_NAME], "types": ["completed"]}
    assert com["permissions"] == {}
    assert com["jobs"]["comment"]["permissions"] == {"actions": "read", "contents": "read",
                                                     "pull-requests": "write"}
    steps = com["jobs"]["comment"]["steps"]
    checkouts = [s["with"] for j in com["jobs"].values() for s in j["steps"] if s.get("uses") == actions.CHECKOUT]
    assert checkouts and all(c["repository"] == "octo-org/stallscope" for c in checkouts)   # never the PR's
    text = comment_file.read_text()
    assert "pull_request.head" not in text
    # git only in the step that checks the pinned stallscope commit is on its default branch
    gits = [s for j in com["jobs"].values() for s in j["steps"] if "git " in yaml.safe_dump(s)]
    assert gits and all(s.get("env", {}).get("STALLSCOPE_REPO") == "octo-org/stallscope" for s in gits)
    # the branch name (the PR author's text) keys the concurrency group and reaches the post
    # step through env: (compared with the PR's head.ref), never a script's text
    assert "head_branch" not in yaml.safe_dump([s.get("run", "") for j in com["jobs"].values() for s in j["steps"]])
    assert text.count("head_branch") == 2
    assert "head_branch" in com["jobs"]["comment"]["concurrency"]["group"]
    assert steps[-1]["env"]["HEAD_BRANCH"] == "${{ github.event.workflow_run.head_branch }}"
    dl = next(s for s in steps if s.get("uses") == actions.DOWNLOAD)
    assert dl["with"]["run-id"] == "${{ github.event.workflow_run.id }}" and "github-token" in dl["with"]
    post = steps[-1]
    assert post["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    assert "commands.pr_post comment" in post["run"] and "--require-head" in post["run"]
    for j in com["jobs"].values():
        assert all("${{" not in s.get("run", "") for s in j["steps"])


def test_actionlint_run_this_way_catches_a_mistake(tmp_path):
    """The same lint() call fails on the rendered file with one wrong reference in it."""
    pr_file, comment_file = _write(tmp_path)
    pr_file.write_text(pr_file.read_text().replace("steps.commits.outputs.merge_base",
                                                   "steps.commit.outputs.merge_base", 1))
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode != 0 and 'property "commit" is not defined' in r.stdout, r.stdout
    assert lint([pr_file], []).returncode != 0          # 'bare-metal' unknown without the config


def test_stallscope_set_up_on_the_runner_and_another_label(tmp_path):
    pr_file, comment_file = _write(tmp_path, "--setup-stallscope", "--label", "perf check")
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    pr, com = _load(pr_file), _load(comment_file)
    assert pr["on"]["pull_request"]["types"] == ["labeled"]
    assert pr["jobs"]["measure"]["if"] == ("(github.event.action == 'labeled' && "
                                          "github.event.label.name == 'perf check')")
    checkouts = [s["with"] for s in com["jobs"]["comment"]["steps"] if s.get("uses") == actions.CHECKOUT]
    assert checkouts == [{"repository": "octo-org/stallscope", "ref": STALLSCOPE_SHA, "path": "stallscope",
                          "persist-credentials": False}]               # stallscope's code, never the PR's
    measure = pr["jobs"]["measure"]["steps"]
    assert any("make -C stallscope setup" in s.get("run", "") for s in measure)
    assert {"repository": "octo-org/stallscope", "ref": STALLSCOPE_SHA, "path": "stallscope",
            "persist-credentials": False} in [s["with"] for s in measure if s.get("uses") == actions.CHECKOUT]


# ------------------------------------------------------------- 1. the trusted jobs' runner
def test_the_trusted_jobs_run_on_a_github_hosted_runner_with_a_pinned_stallscope(tmp_path, capsys):
    """Never where the PR's code ran: not the measuring runner's labels, no `stallscope` from a
    PATH, no `make setup`; stallscope's own repository at the pinned commit."""
    _, comment_file = _write(tmp_path)
    com = _load(comment_file)
    assert set(com["jobs"]) == {"comment", "unlabel"}
    for name, job in com["jobs"].items():
        assert job["runs-on"] == workflow.HOSTED_RUNNER, name
        assert not set([job["runs-on"]] if isinstance(job["runs-on"], str) else job["runs-on"]) & set(LABELS)
        assert job["steps"][0] == {"name": "Check out stallscope at the pinned commit", "uses": actions.CHECKOUT,
                                   "with": {"repository": "octo-org/stallscope", "ref": STALLSCOPE_SHA,
                                            "path": "stallscope", "persist-credentials": False}}
        # then the pinned commit checked to be on stallscope's default branch (git only:
        # tests/test_pr_isolation.py runs it), then stallscope with the standard library only
        assert "git -C stallscope merge-base --is-ancestor" in job["steps"][1]["run"]
        scripts = [s["run"] for s in job["steps"][2:] if "run" in s]
        assert scripts and all(s.startswith('cd "$GITHUB_WORKSPACE/stallscope"\npython3 -S -m commands.pr_post ')
                               for s in scripts)
        assert not any(re.search(r"(^|\s)(stallscope|make)\s", s) for s in scripts)
    for bad, said in ((["--comment-runner", "self-hosted"], "GitHub-hosted runner"),
                      (["--comment-runner", "bare-metal"], "never the measuring runner's"),
                      (["--comment-runner", "x64"], "a label of a GitHub-hosted image"),      # a self-hosted label
                      (["--comment-runner", "gpu-box"], "a label of a GitHub-hosted image"),
                      (["--comment-runner", "ubuntu"], "a label of a GitHub-hosted image"),
                      (["--comment-runner", "windows-2022"], "bash"),
                      (["--stallscope-ref", "main"], "full commit SHA")):
        assert cli.main(["github", "--runner-labels", ",".join(LABELS), "--out", str(tmp_path / "x"),
                         *PIN, *bad]) == 2
        assert said in capsys.readouterr().err
    for hosted in ("ubuntu-22.04", "ubuntu-latest", "ubuntu-24.04-arm", "macos-14", "macos-latest"):
        _, comment_file = _write(tmp_path / hosted, "--comment-runner", hosted)
        assert {j["runs-on"] for j in _load(comment_file)["jobs"].values()} == {hosted}
    with pytest.raises(SystemExit):       # the pin is required
        cli.main(["github", "--out", str(tmp_path / "x")])


def _run_step(step: dict, ctx: dict, tmp_path, extra_env: dict) -> subprocess.CompletedProcess:
    """A rendered `run:` step as the runner runs it: bash -e -o pipefail, its env evaluated
    from the event, the event's payload in $GITHUB_EVENT_PATH, from the workspace; `python3`
    is this interpreter, told -S by the step."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    if not (bindir / "python3").exists():
        (bindir / "python3").symlink_to(sys.executable)
    event = tmp_path / "event.json"
    event.write_text(json.dumps((ctx.get("github") or {}).get("event") or {}))
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path), "RUNNER_TEMP": str(tmp_path / "temp"),
           "GITHUB_EVENT_PATH": str(event),
           **extra_env, **{k: interpolate(str(v), ctx) for k, v in (step.get("env") or {}).items()}}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=env.get("GITHUB_WORKSPACE", tmp_path), env=env, capture_output=True, text=True,
                          timeout=120)


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "stallscope").symlink_to(REPO)      # where the pinned checkout would be
    return ws


def test_the_comment_step_posts_with_the_standard_library_only(tmp_path):
    """The comment job's post step, run as rendered: python3 -S (no site-packages: no numpy,
    no PyYAML) from the stallscope checkout, the artifact's report directories only: the lead
    rendered from the recorded demo's results.json (its stall table too), report.md unread."""
    from commands import compare
    _, comment_file = _write(tmp_path)
    job = _load(comment_file)["jobs"]["comment"]
    ws = _workspace(tmp_path)
    ctx = _ctx("workflow_run", _run_event(), workspace=str(ws))
    ctx["runner"]["temp"] = str(tmp_path / "temp")
    art = tmp_path / "temp" / "stallscope-pr"
    assert compare.main([str(REPO / "tests" / "data" / "runs" / "mset-demo-stalls-xeon480"),
                         "--out", str(art / "reports" / "mset-50keys")]) == 0
    (art / "reports" / "mset-50keys" / "report.md").write_text("**Summary:** throughput −3.1% ❌ regression\n")
    (art / "pr.json").write_text(json.dumps({"pr": 42, "head_sha": SHA2, "merge_base": SHA1}))
    gen = github_like.serve()
    url, state = next(gen)
    try:
        state.heads[("octo-org/redis", 42)] = SHA2
        state.labels[("octo-org/redis", 42)] = ["stallscope"]
        state.forks[("octo-org/redis", 42)] = "mallory/redis"      # the run's head_repository, branch topic
        r = _run_step(job["steps"][-1], ctx, tmp_path, {"GITHUB_WORKSPACE": str(ws), "GITHUB_API_URL": url})
        assert r.returncode == 0, r.stderr
        (c,) = state.comments[("octo-org/redis", 42)]
        assert c["user"] == {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
        assert c["body"].split("\n")[1].startswith("**Paired throughput +54.1% \\[+50.9, +57.5\\]%**")
        assert "| Out-of-cache CPU per MSET |" in c["body"] and "**Summary:**" not in c["body"] and SHA2 in c["body"]
        assert "actions/runs/77" in c["body"]
    finally:
        gen.close()
    # what that interpreter loaded: the standard library and stallscope's own modules
    probe = ("import sys, commands.pr_post; print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'numpy', 'scipy', 'yaml', 'jinja2', 'matplotlib', 'sqlalchemy'}))")
    r = subprocess.run([sys.executable, "-S", "-c", probe], cwd=ws / "stallscope", capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert (r.returncode, r.stdout) == (0, "[]\n"), r.stderr


def test_the_comment_step_posts_only_on_the_pr_the_trusted_event_measured(tmp_path):
    """pr.json is written by the PR's code. Mallory's fork PR 9 (mallory/redis, branch
    topic) has the head commit of the maintainer's PR 7 (octo-org/redis, branch perf-fix)
    and her artifact names PR 7: the comment step, run as rendered, compares PR 7's head
    repository and branch with the workflow_run event's (through env:) and posts nothing."""
    _, comment_file = _write(tmp_path)
    job = _load(comment_file)["jobs"]["comment"]
    for s in job["steps"]:
        assert "${{" not in s.get("run", "")
    post = job["steps"][-1]
    assert post["env"]["HEAD_REPO"] == "${{ github.event.workflow_run.head_repository.full_name }}"
    assert post["env"]["HEAD_BRANCH"] == "${{ github.event.workflow_run.head_branch }}"
    ws = _workspace(tmp_path)
    ctx = _ctx("workflow_run", _run_event(head_repo="mallory/redis", branch="topic"), workspace=str(ws))
    ctx["runner"]["temp"] = str(tmp_path / "temp")
    art = tmp_path / "temp" / "stallscope-pr"
    (art / "reports" / "c").mkdir(parents=True)
    (art / "reports" / "c" / "report.md").write_text("**cand is 40% slower; do not merge**\n")
    (art / "reports" / "c" / "results.json").write_text(json.dumps({"base": "base", "cand": "cand is 40% slower"}))
    gen = github_like.serve()
    url, state = next(gen)
    try:
        for n, repo, branch in ((7, "octo-org/redis", "perf-fix"), (9, "mallory/redis", "topic")):
            state.heads[("octo-org/redis", n)] = SHA2
            state.labels[("octo-org/redis", n)] = ["stallscope"]
            state.refs[("octo-org/redis", n)] = branch
            state.forks[("octo-org/redis", n)] = repo
        ours = state.add("octo-org/redis", 7, "<!-- stallscope-pr-report -->\nreal numbers",
                         "github-actions[bot]", "Bot")
        env = {"GITHUB_WORKSPACE": str(ws), "GITHUB_API_URL": url, "GITHUB_ACTIONS": "true"}
        (art / "pr.json").write_text(json.dumps({"pr": 7, "head_sha": SHA2}))      # forged
        r = _run_step(post, ctx, tmp_path, env)
        assert r.returncode == 2, r.stdout + r.stderr
        assert ours["body"].endswith("real numbers") and len(state.comments[("octo-org/redis", 7)]) == 1
        assert not [x for x in state.requests if x[0] != "GET"]
        (art / "pr.json").write_text(json.dumps({"pr": 9, "head_sha": SHA2}))      # her own PR
        r = _run_step(post, ctx, tmp_path, env)
        assert r.returncode == 0, r.stderr
        (c,) = state.comments[("octo-org/redis", 9)]
        assert "40% slower" in c["body"] and ours["body"].endswith("real numbers")
    finally:
        gen.close()

# ------------------------------------------------------------- 2. labelled only; a push drops the label
def test_measured_when_labelled_and_a_push_removes_the_label(tmp_path):
    pr_file, comment_file = _write(tmp_path)
    pr, com = _load(pr_file), _load(comment_file)
    assert pr["on"] == {"pull_request": {"types": ["labeled"]}}
    measure, unlabel, comment = pr["jobs"]["measure"], com["jobs"]["unlabel"], com["jobs"]["comment"]
    runs = lambda job, name, ev: condition(job["if"], _ctx(name, ev))     # noqa: E731
    assert runs(measure, "pull_request", _pr_event("labeled", "stallscope", ["stallscope"], fork=True))
    assert not runs(measure, "pull_request", _pr_event("labeled", "docs", ["stallscope", "docs"]))
    assert com["on"]["pull_request_target"] == {"types": ["synchronize"]}
    for fork in (True, False):           # any push to a labelled PR drops the label
        push = _pr_event("synchronize", labels=["stallscope"], fork=fork)
        assert runs(unlabel, "pull_request_target", push) and not runs(comment, "pull_request_target", push)
    assert not runs(unlabel, "pull_request_target", _pr_event("synchronize", labels=["docs"], fork=True))
    assert unlabel["permissions"] == {"contents": "read", "pull-requests": "write"}

    pr_file, comment_file = _write(tmp_path / "pushes", "--measure-pushes")
    measure, unlabel = _load(pr_file)["jobs"]["measure"], _load(comment_file)["jobs"]["unlabel"]
    assert _load(pr_file)["on"] == {"pull_request": {"types": ["labeled", "synchronize"]}}
    own, fork = (_pr_event("synchronize", labels=["stallscope"], fork=f) for f in (False, True))
    assert runs(measure, "pull_request", own) and not runs(unlabel, "pull_request_target", own)
    assert not runs(measure, "pull_request", fork) and runs(unlabel, "pull_request_target", fork)

    # the unlabel step, run as rendered, against the local server
    ws = _workspace(tmp_path)
    gen = github_like.serve()
    url, state = next(gen)
    try:
        state.heads[("octo-org/redis", 42)] = SHA2
        state.labels[("octo-org/redis", 42)] = ["perf", "stallscope"]
        r = _run_step(unlabel["steps"][-1], _ctx("pull_request_target", fork), tmp_path,
                      {"GITHUB_WORKSPACE": str(ws), "GITHUB_API_URL": url, "GITHUB_ACTIONS": "true"})
        assert r.returncode == 0, r.stderr
        assert state.labels[("octo-org/redis", 42)] == ["perf"]
        assert ("DELETE", "/repos/octo-org/redis/issues/42/labels/stallscope") in state.requests
        assert r.stdout.startswith("::notice title=stallscope pr::removed the label 'stallscope' from octo-org/redis#42")
    finally:
        gen.close()


def test_docs_state_the_repository_settings_that_are_required():
    """The label is not the gate; these settings are, and docs/pr.md says so (it used to ask
    to "keep" an approval setting that is not GitHub's default)."""
    doc = (REPO / "docs" / "pr.md").read_text()
    section = doc[doc.index("## Required repository settings"):]
    section = " ".join(section[:section.index("\n## ", 4)].split())
    for needed in ("Require approval for all outside collaborators", "runner group",
                   "this repository only", "ephemeral", "JIT", "fork's copy of the workflow",
                   "scheduled", "GitHub-hosted"):
        assert needed in section, needed
    assert "keep the repository setting" not in doc.lower()


def test_docs_say_what_the_trusted_jobs_rely_on():
    """docs/pr.md once per section; where pull_request_target's workflow file comes from
    (the default branch on github.com; GitHub Enterprise Server may differ); that the
    report, from a fork or not, is the PR's own claim."""
    doc = (REPO / "docs" / "pr.md").read_text()
    headings = re.findall(r"^#{2,3} .*$", doc, re.M)
    assert len(headings) == len(set(headings)), headings
    flat = " ".join(doc.split())
    for needed in ("runs the default branch's workflow file", "GitHub Enterprise Server versions may still",
                   "the report (its numbers, its verdicts, the commits in its table) is the PR's own claim",
                   "from a fork just as from a branch of this repository", "`--head-repo`", "`--run-event",
                   "DIR/OWNER/REPO/pr-N", "`ubuntu-*` or `macos-*`"):
        assert needed in flat, needed


# ------------------------------------------------------------- 3. a cache of PR jobs' own
def test_pr_jobs_build_with_a_cache_no_trusted_job_reads(tmp_path, capsys):
    pr_file, _ = _write(tmp_path)
    steps = _load(pr_file)["jobs"]["measure"]["steps"]
    first_run = next(i for i, s in enumerate(steps) if "stallscope run" in s.get("run", ""))
    (cache,) = [s for s in steps[:first_run] if "STALLSCOPE_CACHE" in s.get("run", "")]
    genv = tmp_path / "github_env"
    r = _run_step(cache, _ctx("pull_request", _pr_event("labeled", "stallscope")), tmp_path,
                  {"GITHUB_ENV": str(genv)})
    assert r.returncode == 0, r.stderr
    assert genv.read_text() == f"STALLSCOPE_CACHE={tmp_path / 'temp'}/stallscope-cache\n"   # emptied per job

    # --pr-cache: kept between jobs, one directory per head repository and PR, so no PR's
    # job builds with what another PR's job left (a build under the next merge base's key)
    pr_file, _ = _write(tmp_path / "kept", "--pr-cache", "/srv/stallscope-pr-cache")
    steps = _load(pr_file)["jobs"]["measure"]["steps"]
    (cache,) = [s for s in steps if "STALLSCOPE_CACHE" in s.get("run", "")]
    assert "${{" not in cache["run"]

    def cache_of(event: dict) -> str | None:
        genv.unlink(missing_ok=True)
        r = _run_step(cache, _ctx("pull_request", event), tmp_path, {"GITHUB_ENV": str(genv)})
        return genv.read_text() if r.returncode == 0 else None

    fork_a = cache_of(_pr_event("labeled", "stallscope", fork=True, number=42))
    fork_b = cache_of(_pr_event("labeled", "stallscope", fork=True, number=43))
    own = cache_of(_pr_event("labeled", "stallscope", number=44))
    assert fork_a == "STALLSCOPE_CACHE=/srv/stallscope-pr-cache/mallory/redis/pr-42\n"
    assert fork_b == "STALLSCOPE_CACHE=/srv/stallscope-pr-cache/mallory/redis/pr-43\n"
    assert own == "STALLSCOPE_CACHE=/srv/stallscope-pr-cache/octo-org/redis/pr-44\n"
    assert cache_of(_pr_event("synchronize", fork=True, number=42)) == fork_a      # the same PR: its own again
    for head_repo in ("../redis", "mallory/..", "mallory/redis/x", "", "mallory/re dis"):
        ev = _pr_event("labeled", "stallscope", fork=True)
        ev["pull_request"]["head"]["repo"] = {"full_name": head_repo}
        assert cache_of(ev) is None, head_repo
    for bad in ("~/.cache/stallscope", "relative/dir"):
        assert cli.main(["github", "--out", str(tmp_path / "x"), *PIN, "--pr-cache", bad]) == 2
        assert "only PR jobs use" in capsys.readouterr().err
    sched = (REPO / "docs" / "schedule.md").read_text()
    assert "never on the runners that measure pull requests" in sched


# ------------------------------------------------------------- 4. which run's artifact is trusted
def test_the_comment_job_takes_only_runs_of_the_pr_workflow_file(tmp_path):
    _, comment_file = _write(tmp_path)
    job = _load(comment_file)["jobs"]["comment"]
    ok = lambda **kw: condition(job["if"], _ctx("workflow_run", _run_event(**kw)))   # noqa: E731
    assert ok() and ok(path=".github/workflows/stallscope-pr.yml@refs/pull/42/merge")
    assert not ok(path=".github/workflows/evil.yml")          # a fork's workflow named "stallscope PR"
    assert not ok(path=".github/workflows/stallscope-pr.yml.evil.yml")
    assert not ok(conclusion="failure") and not ok(event="push")
    step = job["steps"][-1]
    assert '--require-label "$LABEL"' in step["run"] and step["env"]["LABEL"] == "stallscope"
    assert "--reports-only" in step["run"]


# ------------------------------------------------------------- 6. concurrency
def test_concurrency_is_per_pr_and_label_on_the_measuring_job_and_per_branch_on_the_comment_job(tmp_path):
    pr_file, comment_file = _write(tmp_path, "--measure-pushes", "--pr-cache", "/srv/pr-cache")
    r = lint([pr_file, comment_file], LABELS[1:])
    assert r.returncode == 0, r.stdout + r.stderr
    pr, com = _load(pr_file), _load(comment_file)
    assert "concurrency" not in pr                      # every `labeled` event starts the workflow
    group = lambda ev: interpolate(pr["jobs"]["measure"]["concurrency"]["group"], _ctx("pull_request", ev))  # noqa
    ours = group(_pr_event("labeled", "stallscope", ["stallscope"]))
    assert ours == "stallscope-pr-42-stallscope" and pr["jobs"]["measure"]["concurrency"]["cancel-in-progress"]
    assert group(_pr_event("labeled", "docs", ["stallscope", "docs"])) != ours     # cancels nothing
    assert group(_pr_event("synchronize", labels=["stallscope"])) == ours           # a measured push replaces it
    assert group(_pr_event("labeled", "stallscope", number=43)) != ours

    conc = com["jobs"]["comment"]["concurrency"]
    assert conc["cancel-in-progress"] is False and "concurrency" not in com
    cgroup = lambda **kw: interpolate(conc["group"], _ctx("workflow_run", _run_event(**kw)))   # noqa: E731
    groups = [cgroup(), cgroup(branch="other"), cgroup(head_repo="octo-org/redis")]
    assert cgroup() == groups[0] and len(set(groups)) == 3          # each pair differs


# ------------------------------------------------------------- 7. pinned actions, no persisted credentials
def _uses_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if re.match(r"^\s*(- )?uses: ", line)]


def _generated(tmp_path) -> dict[str, str]:
    """Every workflow stallscope writes: the PR pair, the schedule's, an experiment's."""
    from commands import schedule as schedule_cli
    from collectors.sweep.experiment import workflow as experiment_workflow
    pr_file, comment_file = _write(tmp_path, "--setup-stallscope")
    sched = tmp_path / "schedule.yml"
    assert schedule_cli.main(["github", str(REPO / "tests" / "data" / "schedule" / "two-jobs.yaml"),
                              "--out", str(sched)]) == 0
    return {"pr": pr_file.read_text(), "comment": comment_file.read_text(), "schedule": sched.read_text(),
            "experiment": experiment_workflow.render("mset-15043", ["--size", "small"],
                                                      RunsOn("bench-trusted", ("self-hosted",)), 2, 60)}


def test_every_third_party_action_is_pinned_by_commit_with_its_tag(tmp_path):
    for name, text in _generated(tmp_path).items():
        lines = _uses_lines(text)
        assert lines, name
        for line in lines:
            m = re.fullmatch(r"(?:- )?uses: (\S+) # (v\d+\.\d+\.\d+)", line)
            assert m and actions.PINNED.fullmatch(m.group(1)), (name, line)
            assert actions.TAGS[m.group(1)] == m.group(2), (name, line)
    assert set(actions.TAGS) == {actions.CHECKOUT, actions.UPLOAD, actions.DOWNLOAD}


def test_schedule_and_experiment_checkouts_do_not_persist_credentials(tmp_path):
    for name, text in _generated(tmp_path).items():
        doc = yaml.safe_load(text)
        checkouts = [s for j in doc["jobs"].values() for s in j["steps"]
                     if str(s.get("uses", "")).startswith("actions/checkout@")]
        assert checkouts, name
        assert all((s.get("with") or {}).get("persist-credentials") is False for s in checkouts), name


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
    assert post.read_pr_json(str(out / "pr.json")) == (42, shas[2], shas[0])


@pytest.mark.parametrize("text, message", [
    ("cases: [mset-50keys]\nbudgit: 20m\n", ":2: unknown key 'budgit'"),
    ("cases: [no-such-case]\n", "case 'no-such-case' at size default: no case named 'no-such-case'"),
    ("cases: [mset-50keys]\nprecision: 80%\n", ":2: precision '80%': must be between 0% and 50%"),
    ("cases: [mset-50keys]\nprecision:\nbudget: 1h\n", ":3: budget goes with precision"),
    ("size: small\n", ":1: no 'cases:' list"),
    ("cases: ['mset; rm -rf ~']\n", ":1: case 'mset; rm -rf ~': letters, digits"),
])
def test_config_errors_name_the_line(tmp_path, capsys, text, message):
    cfg = tmp_path / "pr.yaml"
    cfg.write_text(text)
    assert cli.main(["github", "--config", str(cfg), "--out", str(tmp_path / "wf"), *PIN]) == 2
    err = capsys.readouterr().err
    assert (f"{cfg}{message}" if message.startswith(":") else message) in err, err
    assert not (tmp_path / "wf").exists()
