"""`stallscope pr check` against a local server that answers as GitHub's REST API does for
self-hosted runner groups (tests/github_like.py: "List self-hosted runner groups for an
organization", "List repository access to a self-hosted runner group", "List self-hosted
runners for a repository", pages of 100 with a Link header): a trusted group that a pull
request's code can reach is found however it is opened (every workflow allowed, a wildcard
selected workflow, public repositories), the PR workflow's group sharing a trusted one, a
group the organization lacks, a personal account's runners; groups and their repositories
past the first page are read; a token without the scope is an error naming the fix."""
from __future__ import annotations

from pathlib import Path

import pytest

from collectors.pr.github_api import GitHub
from collectors.pr.group_check import Group, Repo, admits, from_prs
from commands import pr as cli
from tests import github_like

REPO = "octo-org/redis"
SCHEDULE_ENTRY = f"{REPO}/.github/workflows/stallscope-schedule.yml@refs/heads/main"
EXPERIMENT_ENTRY = f"{REPO}/.github/workflows/stallscope-experiment-mset.yml@refs/heads/main"


def _workflows(d: Path) -> Path:
    """The three workflows as stallscope writes their `runs-on` (runners.targets_in reads them)."""
    d.mkdir(parents=True, exist_ok=True)
    for file, name, job, group in (("stallscope-pr.yml", "stallscope PR", "measure", "pr-bench"),
                                   ("stallscope-schedule.yml", "stallscope scheduled profiling", "profile",
                                    "schedule-bench"),
                                   ("stallscope-experiment-mset.yml", "stallscope experiment mset over runners",
                                    "point", "exp-bench")):
        (d / file).write_text(f"name: {name}\non: workflow_dispatch\njobs:\n  {job}:\n    runs-on:\n"
                              f"      group: {group}\n      labels: [self-hosted, linux, {job}]\n"
                              "    steps:\n      - run: true\n")
    return d


@pytest.fixture
def api(monkeypatch):
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", github_like.ADMIN_TOKEN)
    gen = github_like.serve()
    url, state = next(gen)
    state.repo(REPO)                                       # public, in an organization
    for i in range(120):                                   # groups of other teams: two pages of groups
        state.group("octo-org", f"team-{i:03d}", repos=(f"octo-org/svc-{i}",), workflows=())
    others = tuple(f"octo-org/repo-{i:03d}" for i in range(130))
    state.group("octo-org", "pr-bench", repos=(REPO,), public=True)
    # the schedule's group admits 131 repositories (two pages), this one on the second
    state.group("octo-org", "schedule-bench", repos=others + (REPO,), public=True, workflows=(SCHEDULE_ENTRY,))
    state.group("octo-org", "exp-bench", repos=(REPO,), public=True, workflows=(EXPERIMENT_ENTRY,))
    state.group("octo-org", "Default", visibility="all", default=True)
    yield url, state
    gen.close()


def _check(url: str, wf: Path, *extra: str) -> int:
    return cli.main(["check", "--repo", REPO, "--workflows", str(wf), "--api-url", url, *extra])


def test_groups_restricted_to_their_workflows_keep_fork_code_out(api, tmp_path, capsys):
    url, state = api
    assert _check(url, _workflows(tmp_path / "wf")) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{REPO} (public; organization octo-org, 124 runner groups)")
    assert "ok: runner group 'schedule-bench': a trusted group, restricted to selected workflows" in out
    assert "ok: runner group 'exp-bench'" in out and "ok: runner group 'pr-bench': the PR workflow's group admits " \
        f"{REPO} only" in out
    assert "'Default'" not in out               # all repositories, but not public ones: this one cannot use it
    assert "No path from a pull request's code to a trusted runner" in out
    paths = [p for m, p in state.requests]
    assert paths[:3] == [f"/repos/{REPO}", "/orgs/octo-org/actions/runner-groups?per_page=100&page=1",
                         "/orgs/octo-org/actions/runner-groups?per_page=100&page=2"]
    sched = state.groups["octo-org"][121]["id"]
    assert f"/orgs/octo-org/actions/runner-groups/{sched}/repositories?per_page=100&page=2" in paths


@pytest.mark.parametrize("open_it, why", [
    (dict(restricted_to_workflows=False, selected_workflows=[]),
     f"it admits {REPO} (selected: octo-org/repo-000"),
    (dict(selected_workflows=[SCHEDULE_ENTRY, f"{REPO}/.github/workflows/*.yml@*"]),
     "its selected workflow 'octo-org/redis/.github/workflows/*.yml@*' matches a pull request's run"),
    (dict(selected_workflows=[f"{REPO}/.github/workflows/stallscope-schedule.yml@refs/pull/7/merge"]),
     "matches a pull request's run"),
])
def test_a_trusted_group_a_pull_request_can_use_is_reachable(api, tmp_path, capsys, open_it, why):
    url, state = api
    state.groups["octo-org"][121].update(open_it)
    assert _check(url, _workflows(tmp_path / "wf")) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "'schedule-bench'" in x)
    assert line.strip().startswith("reachable: runner group 'schedule-bench': a trusted group, and a pull request's "
                                   "code can run on it") and why in line
    assert f"restrict it to selected workflows (organization settings → Actions → Runner groups → Workflow access): " \
           f"{SCHEDULE_ENTRY}" in line
    assert "A pull request's code can reach a trusted runner, or a group could not be checked: 'schedule-bench'" in out


def test_a_trusted_group_open_to_public_repositories_is_reachable(api, tmp_path, capsys):
    """An experiment's group that does not admit this repository, but every workflow of a
    public one: a fork's pull request there runs on it."""
    url, state = api
    state.repo("octo-org/website")                           # public
    exp = state.groups["octo-org"][122]
    exp.update(restricted_to_workflows=False, selected_workflows=[])
    state.group_repos[exp["id"]] = ["octo-org/website"]
    assert _check(url, _workflows(tmp_path / "wf")) == 1
    out = capsys.readouterr().out
    assert ("reachable: runner group 'exp-bench': a trusted group open to public repositories (selected: "
            "octo-org/website, public ones too) and to every workflow of them") in out
    exp["allows_public_repositories"] = False                 # now no public repository may use it
    assert _check(url, _workflows(tmp_path / "wf")) == 0
    assert "check: runner group 'exp-bench': a trusted group not restricted to selected workflows" in capsys.readouterr().out


def test_the_pr_group_shared_or_a_group_missing_fails(api, tmp_path, capsys):
    url, state = api
    wf = _workflows(tmp_path / "wf")
    assert _check(url, wf, "--pr-group", "Schedule-Bench") == 1                # names compared ignoring case
    assert "reachable: runner group 'Schedule-Bench': the PR workflow and a trusted workflow both target it" \
        in capsys.readouterr().out
    assert _check(url, wf, "--trusted-group", "nightly") == 1
    out = capsys.readouterr().out
    assert "unknown: runner group 'nightly': named by --trusted-group, but octo-org has no runner group of that name" in out
    pr = state.groups["octo-org"][120]
    pr["visibility"] = "all"                                              # the PR runners shared with every repository
    state.groups["octo-org"][121]["selected_workflows"] = [EXPERIMENT_ENTRY]
    assert _check(url, wf) == 0
    out = capsys.readouterr().out
    assert "check: runner group 'pr-bench': the PR workflow's group admits other repositories (every repository" in out
    assert f"check: runner group 'schedule-bench': its selected workflows do not name {SCHEDULE_ENTRY}" in out


def test_other_groups_a_pull_request_can_use_are_listed(api, tmp_path, capsys):
    url, state = api
    state.groups["octo-org"][123]["allows_public_repositories"] = True      # the Default group, open to all
    assert _check(url, _workflows(tmp_path / "wf")) == 0
    assert ("note: runner group 'Default': pull requests of octo-org/redis can run here too (the Default group, "
            "where new runners go)") in capsys.readouterr().out


def test_a_token_without_the_scope_is_told_the_fix(api, tmp_path, capsys, monkeypatch):
    url, state = api
    monkeypatch.setenv("GITHUB_TOKEN", github_like.USER_TOKEN)
    assert _check(url, _workflows(tmp_path / "wf")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and github_like.USER_TOKEN not in err
    assert ("GitHub answered 403 to GET " + url + "/orgs/octo-org/actions/runner-groups?per_page=100&page=1: Must "
            "have admin rights to Repository. (the token's scopes: repo, read:org; this call takes: admin:org); "
            "reading runner groups needs an organization owner's token") in err
    assert "a classic token with the admin:org scope, or a fine-grained token with the organization permission " \
           "'Self-hosted runners' (read)" in err
    monkeypatch.delenv("GITHUB_TOKEN")
    assert _check(url, _workflows(tmp_path / "wf")) == 2
    assert "no GitHub token: give --token-file FILE" in capsys.readouterr().err


def test_a_next_page_elsewhere_is_not_followed(api, tmp_path, capsys):
    url, state = api
    state.next_origin = "http://127.0.0.1:9"
    assert _check(url, _workflows(tmp_path / "wf")) == 2
    assert ("the Link header of octo-org's runner groups points the next page to 'http://127.0.0.1:9/orgs/octo-org/"
            "actions/runner-groups?per_page=100&page=2', outside the API") in capsys.readouterr().err


def test_a_personal_accounts_runners_serve_every_workflow(api, tmp_path, capsys):
    url, state = api
    state.repo("alice/redis", org=False)
    state.runners["alice/redis"] = [{"id": i, "name": f"box-{i}", "os": "Linux", "status": "online", "busy": False,
                                     "labels": [{"name": "self-hosted"}]} for i in range(105)]
    wf = _workflows(tmp_path / "wf")
    assert cli.main(["check", "--repo", "alice/redis", "--workflows", str(wf), "--api-url", url]) == 1
    out = capsys.readouterr().out
    assert "alice/redis (public; personal account alice)" in out
    assert ("reachable: runner group '(repository runners)': alice is a personal account: its repositories have no "
            "runner groups, and every workflow of alice/redis, a pull request's own copy included, may use all 105 "
            "self-hosted runners") in out
    assert ("GET", "/repos/alice/redis/actions/runners?per_page=100&page=2") in state.requests


def test_the_rules_by_themselves():
    repo = Repo(REPO, "octo-org", True, True, "main")
    private = Repo("octo-org/internal", "octo-org", True, False, "main")
    g = Group("g", "private", False, False, (), False)
    assert not admits(g, repo) and admits(g, private) and from_prs(g, private)
    g = Group("g", "all", True, True, (f"{REPO}/.github/workflows/x.yml",), False)    # no ref: suspect
    assert "matches a pull request's run" in from_prs(g, repo)
