"""`stallscope pr github|comment`: the pull-request workflow (docs/pr.md)."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from collectors.command import run_command
from collectors.pr import comment, config, sources, workflow
from collectors.pr.github_api import DEFAULT_API, GitHub, GitHubError, read_token, upsert_comment

EPILOG = """\
Examples:
  # write .github/workflows/stallscope-pr.yml and stallscope-pr-comment.yml for a Redis fork:
  stallscope pr github --config .github/stallscope-pr.yaml --runner-labels self-hosted,linux,bare-metal

  # post (or update) the one comment on PR 42 from a run or report directory, by hand:
  GITHUB_TOKEN=... stallscope pr comment reports/20261123-035105-mset-50keys --repo octo-org/redis --pr 42

  # see the comment without posting it:
  stallscope pr comment runs/20261123-035105-mset-50keys --repo octo-org/redis --pr 42 --dry-run

A maintainer adds the label (default 'stallscope') to a pull request: the runner builds its
merge base and head, runs each case of the config paired (precision and budget from the config),
compares, and uploads the reports; a second workflow posts them as one comment, updated in
place on later pushes. Exit status: 0 done, 2 bad input or a GitHub call that failed.
"""

COMMENT_EPILOG = """\
Examples:
  stallscope pr comment runs/20261123-035105-mset-50keys --repo octo-org/redis --pr 42 --commit 1a2b3c4d
  stallscope pr comment reports/X --repo octo-org/redis --pr 42 --token-file ~/.config/stallscope/gh-token
  stallscope pr comment artifact/reports --repo octo-org/redis --pr-json artifact/pr.json --dry-run

RUN_OR_REPORT: a run directory (compared here as `stallscope compare` does), a report directory
(report.md + results.json), or a directory of several (one section per case). The comment starts
with the hidden marker <!-- stallscope-pr-report -->: the comment of the PR that holds it is
updated (PATCH), else one is created (POST); it fits GitHub's 65,536-character limit (details
left out first, saying so). Token: --token-file, else $GITHUB_TOKEN, else $GH_TOKEN (a token with
'pull requests: write'); never on the command line. API: --api-url, else $GITHUB_API_URL, else
https://api.github.com.
"""

GITHUB_EPILOG = """\
Examples:
  stallscope pr github --runner-labels self-hosted,linux,bare-metal
  stallscope pr github --config .github/stallscope-pr.yaml --label perf --labeled-only
  stallscope pr github --stallscope-repo octo-org/stallscope --stallscope-ref v1 --out /tmp/wf

The config file (YAML; docs/pr.md), e.g. .github/stallscope-pr.yaml:
  cases: [mset-50keys, mget-100keys]   # case names or case files
  size: small                          # small | default | large
  precision: 2%                        # each run: --precision 2% --budget 30m
  budget: 30m
Commit it with the two workflows; the comment workflow acts once it is on the default branch.
"""

REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
LABEL = re.compile(r"[A-Za-z0-9 _.:/+-]+")
SHA = re.compile(r"[0-9a-f]{7,40}")


class PrError(Exception):
    """Bad input to `stallscope pr`; exit status 2."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stallscope pr", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Pull-request workflow: measure a labelled PR's head against its "
                                            "merge base on a self-hosted runner and keep one comment with the report.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    g = sub.add_parser("github", help="write the two GitHub Actions workflows (measure; comment)",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=GITHUB_EPILOG,
                       description="Write stallscope-pr.yml (on: pull_request, read-only, runs the PR's code) "
                                   "and stallscope-pr-comment.yml (on: workflow_run, posts the comment, never "
                                   "runs PR code) into --out.")
    g.add_argument("--config", metavar="FILE", help="PR config (YAML: cases, size, precision, budget, reps, "
                   f"pairing; docs/pr.md); default: cases {', '.join(config.DEFAULT_CASES)}, size default, "
                   "precision 2%%, budget 30m per case")
    g.add_argument("--label", default="stallscope", help="the PR label that asks for a measurement "
                   "(default stallscope)")
    g.add_argument("--runner-labels", default="self-hosted", metavar="L1,L2",
                   help="labels of the self-hosted benchmark runner (default self-hosted)")
    g.add_argument("--out", default=".github/workflows", metavar="DIR",
                   help="where the two files go (default .github/workflows)")
    g.add_argument("--stallscope-repo", metavar="OWNER/NAME", help="check out stallscope from this "
                   "repository and `make setup` it on the runner (default: stallscope is on the runner's PATH)")
    g.add_argument("--stallscope-ref", default="main", metavar="REF", help="its branch or tag (default main)")
    g.add_argument("--labeled-only", action="store_true", help="measure only when the label is added, "
                   "not on every later push of a labelled PR (safer for PRs from forks: docs/pr.md)")
    c = sub.add_parser("comment", help="post or update the one stallscope comment on a PR",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=COMMENT_EPILOG,
                       description="Build the PR comment from a run or report directory and post it, or "
                                   "update the one posted before.")
    c.add_argument("source", metavar="RUN_OR_REPORT", help="run directory, report directory, or a directory of them")
    c.add_argument("--repo", required=True, metavar="OWNER/REPO", help="the repository of the pull request")
    c.add_argument("--pr", type=int, metavar="N", help="pull request number (or --pr-json)")
    c.add_argument("--pr-json", metavar="FILE", help="pr.json of the PR workflow's artifact: the PR number, "
                   "the head measured and its merge base")
    c.add_argument("--commit", metavar="SHA", help="the PR head commit that was measured (said in the comment)")
    c.add_argument("--require-head", action="store_true", help="post only if the PR's head is --commit "
                   "(GET /repos/OWNER/REPO/pulls/N; the comment workflow sets it)")
    c.add_argument("--link", metavar="URL", help="where the full report is (e.g. the workflow run's page)")
    c.add_argument("--token-file", metavar="FILE", help="file holding the GitHub token "
                   "(default $GITHUB_TOKEN, then $GH_TOKEN)")
    c.add_argument("--api-url", metavar="URL", help=f"GitHub API base (default $GITHUB_API_URL, else {DEFAULT_API})")
    c.add_argument("--dry-run", action="store_true", help="print the comment instead of posting it")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    return run_command(f"stallscope pr {args.action}",
                       lambda: github(args) if args.action == "github" else post(args),
                       (PrError, config.PrConfigError, sources.SourceError, GitHubError))


def _check_case(name: str, size: str) -> None:
    from collectors.workload.cases import load_case
    from collectors.workload.casefile import CaseError
    try:
        load_case(name, size)
    except CaseError as e:
        raise config.PrConfigError(f"case {name!r} at size {size}: {e}") from None


def github(args: argparse.Namespace) -> int:
    labels = tuple(x.strip() for x in args.runner_labels.split(",") if x.strip())
    if not labels or not all(LABEL.fullmatch(x) for x in labels):
        raise PrError(f"--runner-labels {args.runner_labels!r}: give comma-separated runner labels")
    if not LABEL.fullmatch(args.label) or args.label != args.label.strip():
        raise PrError(f"--label {args.label!r}: letters, digits, spaces and _ . : / + - only")
    if args.stallscope_repo and not REPO.fullmatch(args.stallscope_repo):
        raise PrError(f"--stallscope-repo {args.stallscope_repo!r}: give OWNER/NAME")
    cfg = config.load(args.config, _check_case)
    setup = workflow.Setup(label=args.label, runner_labels=labels, stallscope_repo=args.stallscope_repo,
                           stallscope_ref=args.stallscope_ref, labeled_only=args.labeled_only)
    for path in workflow.write(cfg, setup, Path(args.out), args.config):
        print(path)
    return 0


def read_pr_json(path: str) -> tuple[int, str | None, str | None]:
    """(PR number, head SHA, merge base) of the artifact's pr.json, every field checked:
    it was written by a job that ran the PR's code, so it is untrusted input."""
    try:
        d = json.loads(Path(path).read_text())
    except OSError as e:
        raise PrError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise PrError(f"{path}: not JSON ({e})") from None
    pr = d.get("pr") if isinstance(d, dict) else None
    if not isinstance(pr, int) or isinstance(pr, bool) or pr <= 0:
        raise PrError(f"{path}: 'pr' must be a pull request number, not {pr!r}")
    shas = [d.get(k) for k in ("head_sha", "merge_base")]
    for k, v in zip(("head_sha", "merge_base"), shas):
        if v is not None and not (isinstance(v, str) and SHA.fullmatch(v)):
            raise PrError(f"{path}: {k!r} must be a commit SHA (hex), not {v!r}")
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
    return pr, comment.Measured(args.commit or head, merge_base, args.link)


def post(args: argparse.Namespace) -> int:
    pr, measured = _target(args)
    token = None
    if not args.dry_run:
        token = read_token(args.token_file, ("GITHUB_TOKEN", "GH_TOKEN"))
        if not token:
            raise PrError("no GitHub token: give --token-file FILE or set $GITHUB_TOKEN (or $GH_TOKEN) to a "
                          "token with 'pull requests: write' on the repository")
    text = comment.body(sources.find(args.source), measured)
    if args.dry_run:
        print(text)
        print(f"stallscope pr comment: {len(text):,} characters (limit {comment.LIMIT:,}); not posted (--dry-run)",
              file=sys.stderr)
        return 0
    gh = GitHub(token, args.api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API)
    if args.require_head:
        head = ((gh.pull(args.repo, pr).get("head") or {}).get("sha")) or ""
        if head != measured.commit:
            raise PrError(f"{args.repo}#{pr}'s head is {head or 'unknown'}, not the measured {measured.commit}: "
                          "not posting (the artifact names another PR, or a newer push will post its own)")
    done = upsert_comment(gh, args.repo, pr, text, comment.MARKER)
    print(f"{done.action} comment {done.id} on {args.repo}#{pr} ({len(text):,} characters): {done.url}")
    return 0
