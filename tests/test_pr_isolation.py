"""What keeps the PR workflow's untrusted job away from what trusted jobs use (issue 39,
item 4): the PR and schedule workflows in runner groups, a pair that could share a runner
refused by either command; --pr-cache normalised and refused when it is, holds or lies inside the runner's
own build cache (when the workflow is written, and again on the runner, the generated step
run for real); the pinned stallscope commit checked to be on its default branch (the
generated step run on a real git repository)."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from collectors.pr import pr_cache, workflow
from collectors.pr.config import PrConfig
from commands import pr as cli
from commands import schedule as schedule_cli
from tests.conftest import REPO

SHA = "5e0c3a1f2b4d6e8f00112233445566778899aabb"
PIN = ["--stallscope-repo", "octo-org/stallscope", "--stallscope-ref", SHA, "--runner-group", "pr-bench"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """This machine's home, for the guard's view of it: its own cache at ~/.cache/stallscope."""
    h = tmp_path / "home"
    (h / ".cache" / "stallscope").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("STALLSCOPE_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return h


def _generate(tmp_path, cache: str) -> tuple[int, str]:
    out = tmp_path / "wf"
    rc = cli.main(["github", "--out", str(out), *PIN, "--pr-cache", cache])
    return rc, (out / workflow.PR_FILE).read_text() if rc == 0 else ""


def test_pr_cache_spelled_any_way_is_refused_when_it_reaches_the_own_cache(tmp_path, home, capsys):
    """Each of these was accepted by the string compare it replaces."""
    link = tmp_path / "link"
    link.symlink_to(home / ".cache")
    for bad in (f"{home}/.cache/stallscope",          # absolute
                f"{home}/.cache/stallscope/.",        # a trailing /.
                f"{home}//.cache/stallscope",         # a doubled slash
                f"{home}/.cache",                     # its parent folder
                f"{home}/.cache/stallscope/pr",       # inside it
                f"{link}/stallscope",                 # through a symbolic link
                "~/.cache/stallscope/", "$HOME/.cache/stallscope", "${HOME}/.cache", "~",
                "/home/runner/.cache/stallscope",     # another home's, written absolute
                "/", "relative/dir", "~/../x"):
        rc, _ = _generate(tmp_path, bad)
        err = capsys.readouterr().err
        assert rc == 2 and f"--pr-cache {bad!r}" in err and "only PR jobs use" in err, (bad, err)
    rc, text = _generate(tmp_path, "/srv//stallscope-pr/./cache/")
    assert rc == 0
    step = next(s for s in yaml.safe_load(text)["jobs"]["measure"]["steps"] if "PR_CACHE" in (s.get("env") or {}))
    assert step["env"]["PR_CACHE"] == "/srv/stallscope-pr/cache"       # written normalised
    assert pr_cache.normalise("$HOME//x/./y/") == "~/x/y" and pr_cache.normalise("~") == "~"


def _cache_step(cache: str) -> dict:
    """The cache step as rendered for `cache`, unchecked (the runner's own guard is tested
    with what the generator would refuse)."""
    text = workflow.render_pr(PrConfig(), workflow.Setup("octo-org/stallscope", SHA, runner_group="pr-bench", pr_cache=cache), None)
    return next(s for s in yaml.safe_load(text)["jobs"]["measure"]["steps"]
                if "STALLSCOPE_CACHE" in s.get("run", ""))


def _run_cache_step(step: dict, runner_home, tmp_path, extra: dict | None = None):
    genv = tmp_path / "github_env"
    genv.unlink(missing_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(runner_home), "GITHUB_ENV": str(genv), "PR": "42",
           "HEAD_REPO": "Mallory/Redis", "PR_CACHE": step["env"]["PR_CACHE"], **(extra or {})}
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env,
                       capture_output=True, text=True, timeout=60)
    return r, (genv.read_text() if genv.exists() else None)


def test_the_runner_refuses_a_pr_cache_that_reaches_its_own_cache(tmp_path):
    """On the runner its home, links and $STALLSCOPE_CACHE / $XDG_CACHE_HOME decide: the
    step resolves both and fails the job before anything is built."""
    rhome = tmp_path / "runner-home"
    (rhome / ".cache" / "stallscope").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "to-cache").symlink_to(rhome / ".cache")
    for bad in (f"{rhome}/.cache/stallscope/.", f"{rhome}//.cache/stallscope", f"{rhome}/.cache",
                f"{tmp_path}/to-cache/stallscope/pr", "~/.cache/stallscope", "~", "/"):
        r, genv = _run_cache_step(_cache_step(bad), rhome, tmp_path)
        assert r.returncode == 1 and genv is None, (bad, r.stdout, r.stderr)
        assert "is, holds or lies inside this runner's own build cache" in r.stdout, bad
    r, genv = _run_cache_step(_cache_step(str(tmp_path / "elsewhere")), rhome, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert genv == f"STALLSCOPE_CACHE={tmp_path}/elsewhere/mallory/redis/pr-42\n"
    r, genv = _run_cache_step(_cache_step("~/pr-cache"), rhome, tmp_path)      # ~ is the runner's home
    assert r.returncode == 0 and genv == f"STALLSCOPE_CACHE={rhome}/pr-cache/mallory/redis/pr-42\n"
    # the runner's own cache moved by its environment: the guard follows it
    moved = {"XDG_CACHE_HOME": str(tmp_path / "elsewhere")}
    r, _ = _run_cache_step(_cache_step(str(tmp_path / "elsewhere")), rhome, tmp_path, moved)
    assert r.returncode == 1, r.stdout
    r, _ = _run_cache_step(_cache_step(str(tmp_path / "x")), rhome, tmp_path,
                           {"STALLSCOPE_CACHE": str(tmp_path / "x" / "inner")})
    assert r.returncode == 1, r.stdout
    assert os.listdir(rhome / ".cache" / "stallscope") == []


def _git(*args, cwd=None) -> str:
    r = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=x",
                        *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True)
    return r.stdout.strip()


def _origin(tmp_path) -> tuple[str, dict[str, str]]:
    """stallscope's repository as GitHub serves it: `main` (the default branch), and a commit
    that only a fork's pull request holds (refs/pull/9/head), which GitHub serves by its SHA
    through the main repository all the same."""
    work = tmp_path / "work"
    _git("init", "-q", "-b", "main", str(work))
    shas = {}
    for name in ("old", "pinned", "newer"):
        _git("commit", "-q", "--allow-empty", "-m", name, cwd=work)
        shas[name] = _git("rev-parse", "HEAD", cwd=work)
    _git("checkout", "-q", "-b", "fork", shas["pinned"], cwd=work)
    _git("commit", "-q", "--allow-empty", "-m", "only in a fork", cwd=work)
    shas["fork"] = _git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "origin.git"
    _git("clone", "-q", "--bare", str(work), str(bare))
    _git("update-ref", "refs/pull/9/head", shas["fork"], cwd=bare)
    _git("branch", "-q", "-D", "fork", cwd=bare)
    _git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=bare)
    return f"file://{bare}", shas


def _checked_out(tmp_path, url: str, sha: str):
    """What actions/checkout leaves for `ref: SHA` (fetch-depth 1, persist-credentials false):
    that one commit, shallow, detached, the remote `origin`."""
    ws = tmp_path / f"ws-{sha[:7]}"
    repo = ws / "stallscope"
    _git("init", "-q", str(repo))
    _git("remote", "add", "origin", url, cwd=repo)
    _git("fetch", "-q", "--no-tags", "--depth=1", "origin", sha, cwd=repo)
    _git("checkout", "-q", "--detach", sha, cwd=repo)
    return ws


def _ref_check_step(workflow_text: str, job: str) -> dict:
    steps = yaml.safe_load(workflow_text)["jobs"][job]["steps"]
    return next(s for s in steps if "merge-base --is-ancestor" in s.get("run", ""))


def test_the_pinned_stallscope_commit_must_be_on_its_default_branch(tmp_path):
    """The check step as rendered, run on a real repository: a commit of main passes, one that
    only a fork's pull request holds is refused (the job fails before anything of the
    checkout runs), and a branch that is not there is said."""
    from collectors.pr import trusted_workflow
    url, shas = _origin(tmp_path)
    for sha, ok in ((shas["pinned"], True), (shas["newer"], True), (shas["fork"], False)):
        setup = workflow.Setup("octo-org/stallscope", sha, runner_group="pr-bench", setup_on_runner=True)
        comment = trusted_workflow.render_comment(setup)
        measure = workflow.render_pr(PrConfig(), setup, None)
        for text, job in ((comment, "comment"), (comment, "unlabel"), (measure, "measure")):
            steps = yaml.safe_load(text)["jobs"][job]["steps"]
            check = _ref_check_step(text, job)
            first_run = next(i for i, s in enumerate(steps) if "run" in s)
            assert steps[first_run]["name"] == check["name"], job       # before anything runs
            assert check["env"] == {"STALLSCOPE_REPO": "octo-org/stallscope", "REF": sha, "BRANCH": "main"}
        ws = _checked_out(tmp_path, url, sha)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **check["env"]}
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", check["run"]], cwd=ws, env=env,
                           capture_output=True, text=True, timeout=60)
        assert (r.returncode == 0) == ok, (sha, r.stdout, r.stderr)
        if not ok:
            assert f"::error::the pinned stallscope commit {sha} is not on main of octo-org/stallscope" in r.stdout
    env["BRANCH"] = "master"
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", check["run"]], cwd=ws, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot fetch the branch master of octo-org/stallscope" in r.stdout


def test_the_default_branch_is_given_and_checked(tmp_path, capsys):
    out = tmp_path / "wf"
    assert cli.main(["github", "--out", str(out), *PIN, "--stallscope-branch", "unstable"]) == 0
    check = _ref_check_step((out / workflow.COMMENT_FILE).read_text(), "comment")
    assert check["env"]["BRANCH"] == "unstable"
    for bad in ("-x", "a..b", "a b", ""):
        assert cli.main(["github", "--out", str(out), *PIN, f"--stallscope-branch={bad}"]) == 2
        assert "--stallscope-branch" in capsys.readouterr().err


def _schedule(tmp_path, group: str | None = "nightly-bench") -> Path:
    text = (REPO / "tests" / "data" / "schedule" / "two-jobs.yaml").read_text()
    text = text.replace("runner-group: nightly-bench", f"runner-group: {group}" if group else "")
    f = tmp_path / f"nightly-{group}.yaml"
    f.write_text(text)
    return f


def test_the_pr_and_schedule_workflows_never_share_a_runner(tmp_path, capsys):
    """Either command reads the other's file in the directory it writes to, and refuses a
    pair that could meet: the same runner group, or labels of which one holds the other's
    (the schedule's jobs: mset [self-hosted, linux, bare-metal], mget-vs-release
    [self-hosted, x86-64], both in the group nightly-bench)."""
    wf = tmp_path / ".github" / "workflows"
    sched_out = wf / "stallscope-schedule.yml"
    assert schedule_cli.main(["github", str(_schedule(tmp_path)), "--out", str(sched_out)]) == 0
    capsys.readouterr()

    def pr(group: str, labels: str) -> tuple[int, str]:
        rc = cli.main(["github", "--out", str(wf), *PIN[:4], "--runner-group", group, "--runner-labels", labels])
        return rc, capsys.readouterr().err

    for group, labels, why in (
            ("nightly-bench", "self-hosted,pr-box", "both target the runner group 'nightly-bench'"),
            ("Nightly-Bench", "self-hosted,pr-box", "both target the runner group"),          # names ignore case
            ("pr-bench", "self-hosted,linux", "fits both"),                          # a schedule runner fits the PR's
            ("pr-bench", "self-hosted,x86-64,bare-metal", "fits both"),              # a PR runner fits mget's
            ("pr-bench", "Self-Hosted,X86-64", "fits both")):
        rc, err = pr(group, labels)
        assert rc == 2 and why in err and "could run on the same runners" in err, (group, labels, err)
        assert f"{sched_out}, job profile" in err and not (wf / workflow.PR_FILE).exists()
    rc, err = pr("Default", "self-hosted,pr-box")
    assert rc == 2 and "--runner-group 'Default': the Default group" in err
    assert pr("pr-bench", "self-hosted,pr-box") == (0, "")
    pr_text = (wf / workflow.PR_FILE).read_text()
    assert yaml.safe_load(pr_text)["jobs"]["measure"]["runs-on"] == {"group": "pr-bench",
                                                                     "labels": ["self-hosted", "pr-box"]}

    # the other way round: the schedule, written after, reads the PR workflow
    before = sched_out.read_text()
    assert schedule_cli.main(["github", str(_schedule(tmp_path, "pr-bench")), "--out", str(sched_out)]) == 2
    err = capsys.readouterr().err
    assert "both target the runner group 'pr-bench'" in err and f"{wf / workflow.PR_FILE}, job measure" in err
    assert sched_out.read_text() == before                                   # nothing written
    # a job without a group: refused with its line; a PR file written before groups: refused
    assert schedule_cli.main(["github", str(_schedule(tmp_path, None)), "--out", str(sched_out)]) == 2
    assert re.search(r"nightly-None\.yaml:\d+: job 'mset' has no runner-group", capsys.readouterr().err)
    legacy = yaml.safe_load(pr_text)
    legacy["jobs"]["measure"]["runs-on"] = ["self-hosted", "pr-box"]
    (wf / workflow.PR_FILE).write_text(yaml.safe_dump(legacy))
    assert schedule_cli.main(["github", str(_schedule(tmp_path)), "--out", str(sched_out)]) == 2
    assert "names no runner group" in capsys.readouterr().err


def test_an_experiments_runners_are_kept_from_the_pr_workflow_not_from_the_schedule(tmp_path, capsys):
    """An experiment's workflow builds the maintainers' variants with the runner's own cache: it
    is trusted like the schedule's. `experiment github` needs a runner group and refuses one a
    PR workflow in the same directory could share; `pr github` refuses the experiment's the same
    way; the schedule and an experiment may share a group (both trusted)."""
    from commands import experiment_github
    wf = tmp_path / ".github" / "workflows"
    exp = wf / "mset-15043.yml"

    def experiment(*args: str) -> tuple[int, str]:
        rc = experiment_github.main(["mset-15043", "--size", "tiny", "--out", str(exp), *args])
        return rc, capsys.readouterr().err

    with pytest.raises(SystemExit):                    # the group is required
        experiment("--runner-labels", "self-hosted,bare-metal")
    capsys.readouterr()
    rc, err = experiment("--runner-group", "Default")
    assert rc == 2 and "the Default group" in err and not exp.exists()
    assert cli.main(["github", "--out", str(wf), *PIN[:4], "--runner-group", "pr-bench",
                     "--runner-labels", "self-hosted,pr-box"]) == 0
    capsys.readouterr()
    for group, labels, why in (("pr-bench", "self-hosted,bare-metal", "both target the runner group 'pr-bench'"),
                               ("bench-trusted", "self-hosted", "fits both")):
        rc, err = experiment("--runner-group", group, "--runner-labels", labels)
        assert rc == 2 and why in err and f"{exp}, job point" in err and not exp.exists(), err
    assert experiment("--runner-group", "nightly-bench", "--runner-labels", "self-hosted,bare-metal")[0] == 0
    assert yaml.safe_load(exp.read_text())["jobs"]["merge"]["runs-on"] == {
        "group": "nightly-bench", "labels": ["self-hosted", "bare-metal"]}
    # the schedule in the experiment's group: both trusted, written
    assert schedule_cli.main(["github", str(_schedule(tmp_path)), "--out", str(wf / "stallscope-schedule.yml")]) == 0
    # the PR workflow written again, now into the experiment's group: refused, naming it
    (wf / workflow.PR_FILE).unlink()
    capsys.readouterr()
    assert cli.main(["github", "--out", str(wf), *PIN[:4], "--runner-group", "Nightly-bench",
                     "--runner-labels", "self-hosted,pr-box"]) == 2
    err = capsys.readouterr().err
    assert f"{exp}, job plan" in err and "a trusted workflow" in err and not (wf / workflow.PR_FILE).exists()


def test_the_commit_measured_is_the_one_the_label_event_names(tmp_path):
    """The label is not tied to the commit a maintainer reviewed (docs/pr.md says so where
    they approve): what is measured, written to pr.json and said in the comment is the head
    SHA of the labelling event's payload, never a head read later (github.sha of a
    pull_request run is a merge commit GitHub made, github.head_ref a branch that moves)."""
    from tests.gh_expr import interpolate
    out = tmp_path / "wf"
    assert cli.main(["github", "--out", str(out), *PIN]) == 0
    text = (out / workflow.PR_FILE).read_text()
    assert "github.sha" not in text and "head_ref" not in text
    labelled_at = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"
    ctx = {"github": {"event_name": "pull_request", "workspace": "/ws",
                      "event": {"action": "labeled", "label": {"name": "stallscope"},
                                "pull_request": {"number": 42, "head": {"sha": labelled_at},
                                                 "base": {"sha": "3f5d2c1b0a99887766554433221100ffeeddccbb"}}}},
           "steps": {"commits": {"outputs": {"merge_base": "m"}}}}
    steps = yaml.safe_load(text)["jobs"]["measure"]["steps"]
    assert interpolate(steps[0]["with"]["ref"], ctx) == labelled_at           # the checkout
    heads = [interpolate(s["env"]["HEAD_SHA"], ctx) for s in steps if "HEAD_SHA" in (s.get("env") or {})]
    assert len(heads) == 2 and set(heads) == {labelled_at}                   # pr.json, and the case's run
    comment = yaml.safe_load((out / workflow.COMMENT_FILE).read_text())["jobs"]["comment"]["steps"][-1]
    assert comment["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"   # the run's: the same SHA
    assert '--commit "$HEAD_SHA" --require-head' in comment["run"]


def test_a_malformed_workflow_of_ours_is_refused_not_skipped(tmp_path):
    """A stallscope workflow the checker cannot read (here a key given twice, which PyYAML
    would take silently) could hide a shared runner: writing the other one is refused, with
    the file and line; a file that is not ours is skipped."""
    from collectors.pr import runners
    (tmp_path / "sched.yml").write_text("name: stallscope scheduled profiling\non: push\non: push\njobs: {}\n")
    with pytest.raises(runners.RunnersShared, match=r"sched.yml:3.*fix or remove that workflow"):
        runners.targets_in(tmp_path)
    (tmp_path / "sched.yml").write_text("name: other\non: push\non: push\n")
    assert runners.targets_in(tmp_path) == []


def test_the_check_reads_the_repositorys_workflows_wherever_one_is_written(tmp_path, monkeypatch, capsys):
    """The check is no lint of one directory (issue 46): whether the workflow goes to stdout,
    to a file outside the repository or to one elsewhere in it, the `.github/workflows` of
    the git work tree it is written into and of the one the command runs in are read too,
    and a clash is refused with the group and the file, nothing written or printed."""
    from commands import experiment_github
    repo, elsewhere = tmp_path / "server", tmp_path / "elsewhere"
    wf = repo / ".github" / "workflows"
    _git("init", "-q", str(repo))
    monkeypatch.chdir(repo)
    assert cli.main(["github", "--out", str(wf), *PIN[:4], "--runner-group", "pr-bench",
                     "--runner-labels", "self-hosted,pr-box"]) == 0
    capsys.readouterr()

    def experiment(*args: str) -> tuple[int, str, str]:
        rc = experiment_github.main(["mset-15043", "--size", "tiny", *args])
        out, err = capsys.readouterr()
        return rc, out, err

    clash = ("--runner-group", "pr-bench")
    for where in ([], ["--out", str(elsewhere / "mset.yml")], ["--out", str(repo / "ci" / "mset.yml")]):
        for cwd in (repo, tmp_path):
            if not where and cwd == tmp_path:
                continue                       # stdout from outside the repository: nothing to read
            monkeypatch.chdir(cwd)
            rc, out, err = experiment(*clash, *where)
            if where and where[1].startswith(str(elsewhere)) and cwd == tmp_path:
                assert rc == 0, err            # outside the repository, run from outside it
                (elsewhere / "mset.yml").unlink()
                continue
            assert rc == 2 and out == "", (where, cwd, err)
            assert "both target the runner group 'pr-bench'" in err and f"{wf / workflow.PR_FILE}, job measure" in err
            assert err.startswith("stallscope experiment github: error: ") and len(err.splitlines()) == 1
    assert not (elsewhere / "mset.yml").exists() and not (repo / "ci").exists()
    monkeypatch.chdir(repo)
    rc, out, err = experiment("--runner-group", "bench-trusted")           # a group of its own: printed
    assert rc == 0 and "group: bench-trusted" in out and err == ""
    # the schedule written elsewhere from the repository, into the PR workflow's group: refused
    assert schedule_cli.main(["github", str(_schedule(tmp_path, "pr-bench")), "--out", str(elsewhere / "s.yml")]) == 2
    assert f"{wf / workflow.PR_FILE}, job measure" in capsys.readouterr().err and not (elsewhere / "s.yml").exists()
    # and the PR workflow written elsewhere while the repository holds the schedule's
    (wf / workflow.PR_FILE).unlink()
    assert schedule_cli.main(["github", str(_schedule(tmp_path)), "--out", str(wf / "stallscope-schedule.yml")]) == 0
    capsys.readouterr()
    assert cli.main(["github", "--out", str(elsewhere), *PIN[:4], "--runner-group", "nightly-bench"]) == 2
    err = capsys.readouterr().err
    assert "both target the runner group 'nightly-bench'" in err and f"{wf / 'stallscope-schedule.yml'}, job profile" in err
    assert not (elsewhere / workflow.PR_FILE).exists()
