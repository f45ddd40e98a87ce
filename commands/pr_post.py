"""`stallscope pr comment` and `stallscope pr unlabel` (collectors/pr/post.py does them): what
the PR workflow's trusted jobs run (docs/pr.md). Those jobs run on a GitHub-hosted runner,
never the measuring one, from a checkout of stallscope at a pinned commit, as

    python3 -S -m commands.pr_post comment ARTIFACT/reports --reports-only ...
    python3 -S -m commands.pr_post unlabel --repo OWNER/REPO --pr N --label LABEL

so this module and what it imports need the standard library only (-S: not even the
runner image's site-packages). Nothing of the pull request is executed: the artifact is
data (collectors/pr/untrusted.py)."""
from __future__ import annotations

import argparse
import sys

from collectors.command import run_command
from collectors.pr import post
from collectors.pr.github_api import DEFAULT_API

COMMENT_EPILOG = """\
Examples:
  stallscope pr comment reports/demo --dry-run        # the comment, printed: nothing is posted
  stallscope pr comment runs/20261123-035105-mset-50keys --repo octo-org/redis --pr 42 --commit 1a2b3c4d
  stallscope pr comment reports/X --repo octo-org/redis --pr 42 --token-file ~/.config/stallscope/gh-token
  stallscope pr comment artifact/reports --repo octo-org/redis --pr-json artifact/pr.json --dry-run

RUN_OR_REPORT: a run directory (compared here as `stallscope compare` does), a report directory
(report.md + results.json), or a directory of several (one section per case). The comment starts
with the hidden marker <!-- stallscope-pr-report -->. The one comment updated (PATCH) is the
oldest that starts with the marker AND was written by the identity this token posts as
(--author, else GET /user; a workflow's GITHUB_TOKEN, which GET /user refuses, posts as
github-actions[bot]: assumed only inside a workflow, GITHUB_ACTIONS=true); else one is
created (POST). It leads with the headline: each case's lead (the headline, counts and first
tables, rendered here from its results.json as report.md's lead is; several cases get a row
each and their leads folded), or with --full the whole report.md; what was measured (commits,
builds) is below them. Its text from the artifact is inert (no raw HTML, link, image, alert,
footnote, @mention, issue or commit reference, math, bidi or invisible character) and fits
GitHub's 65,536 characters (details left out first, saying so). With --require-head / --require-label, a PR that
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



def add_comment_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("source", metavar="RUN_OR_REPORT", help="run directory, report directory, or a directory of them")
    c.add_argument("--repo", metavar="OWNER/REPO", help="the repository of the pull request (not needed "
                   "with --dry-run)")
    c.add_argument("--pr", type=int, metavar="N", help="pull request number (or --pr-json; not needed with "
                   "--dry-run)")
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
    c.add_argument("--full", action="store_true", help="post each case's whole report.md (fitted to GitHub's "
                   "limit), not its lead (headline, counts and the first tables, from results.json)")
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
    body = post.post if args.action == "comment" else post.unlabel
    return run_command(f"stallscope pr {args.action}", lambda: body(args))


if __name__ == "__main__":
    sys.exit(main())
