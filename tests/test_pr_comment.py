"""`stallscope pr comment` against a local server that checks the REST calls against
GitHub's documented shapes (tests/github_like.py): the first post creates one comment, a
later one for a new commit updates the same comment (found on page 2 of the list), a bad
token exits 2 with what to do. The reports are compared from recorded run directories."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.compare import cli as compare_cli
from collectors.pr import cli
from collectors.pr.comment import LIMIT, MARKER
from collectors.pr.sources import shorten
from tests import github_like
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "runs"
RUN = RUNS / "mset-demo-paired"                  # recorded: Redis vs the MSET prefetch patch
SHA1 = "3f5d2c1b0a99887766554433221100ffeeddccbb"
SHA2 = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"
PR = ["--repo", "octo-org/redis", "--pr", "42"]


@pytest.fixture
def api(monkeypatch):
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", github_like.TOKEN)
    yield from github_like.serve()


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """The PR workflow's artifact layout: reports/<case>/ written by `stallscope compare`."""
    root = tmp_path_factory.mktemp("artifact") / "reports"
    for name in ("mset-demo-paired", "io-threads-mset", "valkey-get-p1-default"):
        assert compare_cli.main([str(RUNS / name), "--out", str(root / name), "--top", "1000"]) == 0
    return root


def _marked(state: github_like.State) -> list[dict]:
    return [c for cs in state.comments.values() for c in cs if MARKER in c["body"]]


def test_one_comment_created_then_updated_for_the_next_push(api, reports, capsys):
    url, state = api
    for i in range(100):      # a busy PR: the stallscope comment lands on page 2 of the list
        state.add("octo-org/redis", 42, f"review comment {i}", "reviewer")
    assert cli.main(["comment", str(RUN), *PR, "--commit", SHA1, "--api-url", url]) == 0
    assert state.requests == [("GET", "/repos/octo-org/redis/issues/42/comments?per_page=100&page=1"),
                              ("POST", "/repos/octo-org/redis/issues/42/comments")]
    (first,) = _marked(state)
    assert first["body"].startswith(MARKER) and SHA1 in first["body"] and len(first["body"]) <= LIMIT
    assert "**Summary:** Paired throughput" in first["body"] and "+32.0%" in first["body"]
    assert f"created comment {first['id']} on octo-org/redis#42" in capsys.readouterr().out

    state.requests.clear()    # the next push: same PR, a new head, the report directory this time
    assert cli.main(["comment", str(reports / "mset-demo-paired"), *PR, "--commit", SHA2,
                     "--api-url", url]) == 0
    assert state.requests == [("GET", "/repos/octo-org/redis/issues/42/comments?per_page=100&page=1"),
                              ("GET", "/repos/octo-org/redis/issues/42/comments?per_page=100&page=2"),
                              ("PATCH", f"/repos/octo-org/redis/issues/comments/{first['id']}")]
    (updated,) = _marked(state)
    assert updated["id"] == first["id"] and len(state.comments[("octo-org/redis", 42)]) == 101
    assert SHA2 in updated["body"] and SHA1 not in updated["body"]
    assert f"updated comment {first['id']}" in capsys.readouterr().out


def test_bad_or_missing_token_exits_2_saying_what_to_do(api, reports, tmp_path, monkeypatch, capsys):
    url, state = api
    tok = tmp_path / "token"
    tok.write_text("ghp_revoked\n")
    src = str(reports / "valkey-get-p1-default")
    assert cli.main(["comment", src, *PR, "--token-file", str(tok), "--api-url", url]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "GitHub answered 401 to GET" in err and "Bad credentials" in err and "--token-file" in err
    assert not state.comments
    monkeypatch.delenv("GITHUB_TOKEN")
    assert cli.main(["comment", src, *PR, "--api-url", url]) == 2
    assert "no GitHub token: give --token-file FILE or set $GITHUB_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("GH_TOKEN", github_like.TOKEN)      # the gh CLI's variable works too
    assert cli.main(["comment", src, *PR, "--api-url", url]) == 0
    assert cli.main(["comment", src, *PR, "--api-url", "http://127.0.0.1:9"]) == 2
    assert "cannot reach http://127.0.0.1:9/repos/octo-org/redis/issues/42/comments" in capsys.readouterr().err


def test_the_comment_workflow_call_checks_pr_json_against_the_pr_head(api, reports, tmp_path, capsys):
    """As stallscope-pr-comment.yml calls it: pr.json from the artifact (untrusted), --commit
    from the workflow_run event, --require-head asks GitHub for the PR's head."""
    url, state = api
    state.heads[("octo-org/redis", 7)] = SHA2
    art = tmp_path / "artifact"
    shutil.copytree(reports, art / "reports")
    pr_json = art / "pr.json"
    call = ["comment", str(art / "reports"), "--repo", "octo-org/redis", "--pr-json", str(pr_json),
            "--require-head", "--link", "https://github.com/octo-org/redis/actions/runs/1", "--api-url", url]
    pr_json.write_text(json.dumps({"pr": 8, "head_sha": SHA1}))    # no PR 8 in this repository
    assert cli.main(call + ["--commit", SHA1]) == 2
    assert "GitHub answered 404 to GET" in capsys.readouterr().err
    pr_json.write_text(json.dumps({"pr": 7, "head_sha": SHA1, "merge_base": SHA2[::-1]}))
    assert cli.main(call + ["--commit", SHA1]) == 2          # PR 7 has moved on to SHA2
    assert "head is 9e8d7c6b" in capsys.readouterr().err and not state.comments
    pr_json.write_text(json.dumps({"pr": "7; rm -rf /", "head_sha": SHA2}))
    assert cli.main(call + ["--commit", SHA2]) == 2
    assert "'pr' must be a pull request number" in capsys.readouterr().err
    pr_json.write_text(json.dumps({"pr": 7, "head_sha": SHA2, "merge_base": SHA1}))
    assert cli.main(call + ["--commit", SHA2]) == 0
    (c,) = _marked(state)
    body = c["body"]
    assert state.requests[-1] == ("POST", "/repos/octo-org/redis/issues/7/comments")
    assert f"**Measured commit:** {SHA2} (the head of this pull request), against its merge base {SHA1}" in body
    assert "[the workflow run](https://github.com/octo-org/redis/actions/runs/1)" in body


def test_several_cases_are_cut_to_fit_keeping_every_summary(reports, capsys):
    """Three cases' report.md files (all top movers) hold about 3 x 50,000 characters."""
    sizes = [len((d / "report.md").read_text()) for d in reports.iterdir()]
    assert sum(sizes) > 2 * LIMIT
    assert cli.main(["comment", str(reports), *PR, "--commit", SHA1, "--dry-run"]) == 0
    body = capsys.readouterr().out.rstrip("\n")
    assert len(body) <= LIMIT and body.startswith(MARKER + "\n")
    assert body.count("**Summary:**") == 3 and body.count("### Throughput") == 3
    for case in ("mset-50keys", "mset-10keys-io-threads", "get-iothreads@pipeline=1"):
        assert body.count(f"| {case} |") == 1          # the commits table: one row per case
    assert "Shortened to fit a GitHub comment: left out" in body and "artifact) have everything" in body


def test_one_oversize_report_keeps_the_summary_and_tables(reports):
    text = (reports / "io-threads-mset" / "report.md").read_text()
    cut = shorten(text, 12_000)
    assert len(cut) <= 12_000 < len(text)
    head = text[: text.index("<details>")]
    assert cut.startswith(head)            # summary and tables untouched; details went first
    assert ("left out Top movers (main thread), How the verdicts were reached, Per-rep values; "
            "report.html") in cut      # the largest folded details first
    assert "<summary>Per thread</summary>" in cut and "### Environment" in cut
    tiny = shorten(text, 3_000)
    assert len(tiny) <= 3_000 and "**Summary:**" in tiny and "the end of the report" in tiny
