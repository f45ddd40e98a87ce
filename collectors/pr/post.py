"""`stallscope pr comment` and `stallscope pr unlabel`: what the PR workflow's trusted jobs
run (docs/pr.md). Those jobs run on a GitHub-hosted runner, never the measuring one, from a
checkout of stallscope at a pinned commit, as

    python3 -S -m collectors.pr.post comment ARTIFACT/reports --reports-only ...
    python3 -S -m collectors.pr.post unlabel --repo OWNER/REPO --pr N --label LABEL

so this module and what it imports need the standard library only (-S: not even the
runner image's site-packages). Nothing of the pull request is executed: the artifact is
data (collectors/pr/untrusted.py)."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from analysis.errors import UserError
from collectors.command import run_command
from collectors.pr import comment, sources
from collectors.http_client import read_token
from collectors.pr.github_api import DEFAULT_API, Author, GitHub, GitHubError, pull_labels, upsert_comment
from collectors.pr.untrusted import KIB, Unreadable, read_capped

REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
LABEL = re.compile(r"[A-Za-z0-9 _.:/+-]+")
SHA = re.compile(r"[0-9a-f]{7,40}")
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\[bot\])?")
PR_JSON_CAP = 4 * KIB

COMMENT_EPILOG = """\
Examples:
  stallscope pr comment runs/20261123-035105-mset-50keys --repo octo-org/redis --pr 42 --commit 1a2b3c4d
  stallscope pr comment reports/X --repo octo-org/redis --pr 42 --token-file ~/.config/stallscope/gh-token
  stallscope pr comment artifact/reports --repo octo-org/redis --pr-json artifact/pr.json --dry-run

RUN_OR_REPORT: a run directory (compared here as `stallscope compare` does), a report directory
(report.md + results.json), or a directory of several (one section per case). The comment starts
with the hidden marker <!-- stallscope-pr-report -->. The one comment updated (PATCH) is the
oldest that starts with the marker AND was written by the identity this token posts as
(--author, else GET /user; a workflow's GITHUB_TOKEN, which GET /user refuses, posts as
github-actions[bot]: assumed only inside a workflow, GITHUB_ACTIONS=true); else one is
created (POST). Its text is neutralised (no raw HTML, no @mention) and fits GitHub's 65,536
characters (details left out first, saying so). With --require-head / --require-label, a PR that
moved on or lost the label gets nothing and the exit status is 0 (a notice says why); with
--head-repo / --head-branch / --run-event, a PR that is not the one the measured run was of gets
nothing and the exit status is 2 (pr.json names the PR, and it is the PR's own claim). Token:
--token-file, else $GITHUB_TOKEN, else $GH_TOKEN (a token with 'pull requests: write'); never on
the command line. API: --api-url, else $GITHUB_API_URL, else https://api.github.com.
"""

UNLABEL_EPILOG = """\
Example (what the comment workflow's unlabel job runs after a push to a labelled pull request):
  stallscope pr unlabel --repo octo-org/redis --pr 42 --label stallscope
"""


class PrError(UserError):
    """Bad input to `stallscope pr`; exit status 2."""


def add_comment_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("source", metavar="RUN_OR_REPORT", help="run directory, report directory, or a directory of them")
    c.add_argument("--repo", required=True, metavar="OWNER/REPO", help="the repository of the pull request")
    c.add_argument("--pr", type=int, metavar="N", help="pull request number (or --pr-json)")
    c.add_argument("--pr-json", metavar="FILE", help="pr.json of the PR workflow's artifact: the PR number, "
                   "the head measured and its merge base")
    c.add_argument("--commit", metavar="SHA", help="the PR head commit that was measured (said in the comment)")
    c.add_argument("--require-head", action="store_true", help="post only if the PR's head is --commit "
                   "(GET /repos/OWNER/REPO/pulls/N; the comment workflow sets it)")
    c.add_argument("--require-label", metavar="LABEL", help="post only if the PR carries this label now "
                   "(the comment workflow sets it)")
    c.add_argument("--head-repo", metavar="OWNER/REPO", help="refuse (exit 2) unless the PR's head repository "
                   "is this one (the comment workflow passes workflow_run.head_repository.full_name)")
    c.add_argument("--head-branch", metavar="BRANCH", help="refuse (exit 2) unless the PR's head branch is "
                   "this one (the comment workflow passes workflow_run.head_branch)")
    c.add_argument("--run-event", metavar="FILE", help="the workflow_run event ($GITHUB_EVENT_PATH): for a run "
                   "of a branch of --repo, refuse a PR that is not one of its pull_requests (if it lists any)")
    c.add_argument("--reports-only", action="store_true", help="read report directories only, never compare "
                   "a run directory (the comment workflow sets it: the standard library suffices)")
    c.add_argument("--author", metavar="LOGIN", help="the account this token posts as, whose marked comment "
                   "is updated (default: GET /user; github-actions[bot] for a workflow's GITHUB_TOKEN)")
    c.add_argument("--link", metavar="URL", help="where the full report is (e.g. the workflow run's page)")
    _token_arguments(c)
    c.add_argument("--dry-run", action="store_true", help="print the comment instead of posting it")


def add_unlabel_arguments(u: argparse.ArgumentParser) -> None:
    u.add_argument("--repo", required=True, metavar="OWNER/REPO", help="the repository of the pull request")
    u.add_argument("--pr", required=True, type=int, metavar="N", help="pull request number")
    u.add_argument("--label", required=True, help="the label to remove, if the PR carries it")
    _token_arguments(u)


def _token_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--token-file", metavar="FILE", help="file holding the GitHub token "
                   "(default $GITHUB_TOKEN, then $GH_TOKEN)")
    p.add_argument("--api-url", metavar="URL", help=f"GitHub API base (default $GITHUB_API_URL, else {DEFAULT_API})")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stallscope pr", description="The PR workflow's trusted steps.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_comment_arguments(sub.add_parser("comment", epilog=COMMENT_EPILOG,
                                         formatter_class=argparse.RawDescriptionHelpFormatter))
    add_unlabel_arguments(sub.add_parser("unlabel", epilog=UNLABEL_EPILOG,
                                         formatter_class=argparse.RawDescriptionHelpFormatter))
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run(args)


def run(args: argparse.Namespace) -> int:
    body = post if args.action == "comment" else unlabel
    return run_command(f"stallscope pr {args.action}", lambda: body(args))


def notice(text: str) -> None:
    """A line for the workflow run's summary (a GitHub Actions notice when run there)."""
    prefix = "::notice title=stallscope pr::" if os.environ.get("GITHUB_ACTIONS") == "true" else "stallscope pr: "
    print(prefix + text.replace("\n", " "), flush=True)


def read_pr_json(path: str) -> tuple[int, str | None, str | None]:
    """(PR number, head SHA, merge base) of the artifact's pr.json, every field checked:
    it was written by a job that ran the PR's code, so it is untrusted input."""
    try:
        d = json.loads(read_capped(Path(path), PR_JSON_CAP))
    except Unreadable as e:
        raise PrError(str(e)) from None
    except (ValueError, RecursionError) as e:
        raise PrError(f"{path}: not JSON ({str(e)[:200]})") from None
    pr = d.get("pr") if isinstance(d, dict) else None
    if not isinstance(pr, int) or isinstance(pr, bool) or pr <= 0:
        raise PrError(f"{path}: 'pr' must be a pull request number, not {str(pr)[:100]!r}")
    shas = [d.get(k) for k in ("head_sha", "merge_base")]
    for k, v in zip(("head_sha", "merge_base"), shas):
        if v is not None and not (isinstance(v, str) and SHA.fullmatch(v)):
            raise PrError(f"{path}: {k!r} must be a commit SHA (hex), not {str(v)[:100]!r}")
    return pr, shas[0], shas[1]


def _target(args: argparse.Namespace) -> tuple[int, comment.Measured]:
    if not REPO.fullmatch(args.repo):
        raise PrError(f"--repo {args.repo!r}: give OWNER/REPO, e.g. octo-org/redis")
    pr, head, merge_base = read_pr_json(args.pr_json) if args.pr_json else (args.pr, None, None)
    if args.pr is not None and args.pr != pr:
        raise PrError(f"--pr {args.pr} but {args.pr_json} says PR {pr}")
    if pr is None or pr <= 0:
        raise PrError("which pull request? give --pr N (or --pr-json FILE)")
    if args.commit and not SHA.fullmatch(args.commit):
        raise PrError(f"--commit {args.commit!r}: give a commit SHA (hex)")
    if args.commit and head and head != args.commit:
        raise PrError(f"{args.pr_json} says head {head} was measured, but --commit is {args.commit}; "
                      "not posting a report of one commit as another's")
    if args.require_head and not (args.commit or head):
        raise PrError("--require-head needs --commit SHA (the head that was measured)")
    if args.author is not None and not LOGIN.fullmatch(args.author):
        raise PrError(f"--author {args.author!r}: give a GitHub login (e.g. github-actions[bot])")
    if args.head_repo is not None and not REPO.fullmatch(args.head_repo):
        raise PrError(f"--head-repo {args.head_repo!r}: give OWNER/REPO (the fork or this repository)")
    if args.head_branch is not None and not args.head_branch.strip():
        raise PrError("--head-branch is empty: give the branch the measured run was of")
    return pr, comment.Measured(args.commit or head, merge_base, args.link)


def run_pulls(path: str, repo: str) -> list[int]:
    """The pull request numbers of a workflow_run event (GitHub's own payload, written by the
    runner: trusted) that a run of a branch of `repo` was for; [] for a fork's run (GitHub
    lists none) or when it lists none. Entries whose base is another repository are skipped."""
    try:
        run = json.loads(Path(path).read_text()).get("workflow_run") or {}
    except (OSError, ValueError, AttributeError) as e:
        raise PrError(f"--run-event {path}: not a workflow_run event ({str(e)[:200]})") from None
    if str((run.get("head_repository") or {}).get("full_name") or "").casefold() != repo.casefold():
        return []
    out = []
    for p in [p for p in run.get("pull_requests") or [] if isinstance(p, dict)]:
        base = str(((p.get("base") or {}).get("repo") or {}).get("url") or "")
        if isinstance(p.get("number"), int) and (not base or base.casefold().endswith("/repos/" + repo.casefold())):
            out.append(p["number"])
    return out


def check_bound(pull: dict, args: argparse.Namespace, pr: int) -> None:
    """PrError unless PR `pr` (GET /pulls/N: `pull`) is the one the trusted event measured:
    its head repository and branch are --head-repo and --head-branch, and for a run of a
    branch of this repository, it is one of the event's pull_requests. pr.json, which names
    the PR, comes from the PR's own run: a head SHA alone can be copied to another PR."""
    head = pull.get("head") or {}
    repo, ref = str((head.get("repo") or {}).get("full_name") or ""), str(head.get("ref") or "")
    want_repo, want_ref = args.head_repo or repo, args.head_branch if args.head_branch is not None else ref
    if repo.casefold() != want_repo.casefold() or ref != want_ref:
        raise PrError(f"{args.pr_json or '--pr'} names {args.repo}#{pr}, but {args.repo}#{pr} is from "
                      f"{repo or 'a deleted repository'}:{ref}, not {want_repo}:{want_ref} (the run that was "
                      "measured): not posting one pull request's report on another")
    pulls = run_pulls(args.run_event, args.repo) if args.run_event else []
    if pulls and pr not in pulls:
        raise PrError(f"{args.pr_json or '--pr'} names {args.repo}#{pr}, but the measured run was for "
                      f"{', '.join(f'{args.repo}#{n}' for n in pulls)}, not #{pr}: not posting")


def _client(args: argparse.Namespace) -> GitHub:
    token = read_token(args.token_file, ("GITHUB_TOKEN", "GH_TOKEN"), "GitHub", GitHubError)
    if not token:
        raise PrError("no GitHub token: give --token-file FILE or set $GITHUB_TOKEN (or $GH_TOKEN) to a "
                      "token with 'pull requests: write' on the repository")
    return GitHub(token, args.api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API)


def _why_not_now(gh: GitHub, args: argparse.Namespace, pr: int, measured: comment.Measured) -> str | None:
    """Why this report is no longer wanted on the PR (None: post it); PrError if it is
    another PR than the one measured (check_bound)."""
    pull = gh.pull(args.repo, pr)
    check_bound(pull, args, pr)
    head = str((pull.get("head") or {}).get("sha") or "")
    if args.require_head and head != measured.commit:
        return (f"its head is {head or 'unknown'}, not the measured {measured.commit} (a newer push, "
                "measured when labelled again; or the artifact names another pull request)")
    if args.require_label and carried(pull, args.require_label) is None:
        return f"it does not carry the label {args.require_label!r} now (removed by hand or after a push)"
    return None


def post(args: argparse.Namespace) -> int:
    pr, measured = _target(args)
    gh = None if args.dry_run else _client(args)
    text = comment.body(sources.find(args.source, args.reports_only), measured)
    if gh is None:
        print(text)
        print(f"stallscope pr comment: {len(text):,} characters (limit {comment.LIMIT:,}); not posted (--dry-run)",
              file=sys.stderr)
        return 0
    if args.require_head or args.require_label or args.head_repo or args.head_branch is not None or args.run_event:
        why = _why_not_now(gh, args, pr, measured)
        if why:
            notice(f"not posting the report on {args.repo}#{pr}: {why}")
            return 0
    author = Author.named(args.author) if args.author else gh.me()
    done = upsert_comment(gh, args.repo, pr, text, comment.MARKER, author)
    print(f"{done.action} comment {done.id} on {args.repo}#{pr} ({len(text):,} characters): {done.url}")
    return 0


def carried(pull: dict, label: str) -> str | None:
    """The name of the pull request's label that is `label`, as GitHub names labels: ignoring
    case (a repository cannot have both 'stallscope' and 'StallScope'); None if it has none."""
    return next((x for x in pull_labels(pull) if x.casefold() == label.casefold()), None)


def unlabel(args: argparse.Namespace) -> int:
    if not REPO.fullmatch(args.repo):
        raise PrError(f"--repo {args.repo!r}: give OWNER/REPO, e.g. octo-org/redis")
    if not LABEL.fullmatch(args.label):
        raise PrError(f"--label {args.label!r}: letters, digits, spaces and _ . : / + - only")
    gh = _client(args)
    name = carried(gh.pull(args.repo, args.pr), args.label)
    if name is None:
        print(f"{args.repo}#{args.pr} does not carry the label {args.label!r}: nothing to remove")
        return 0
    gh.remove_label(args.repo, args.pr, name)
    notice(f"removed the label {args.label!r} from {args.repo}#{args.pr}: a new push is measured only "
           "when a maintainer adds the label again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
