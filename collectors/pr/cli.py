"""`stallscope pr github|comment|unlabel`: the pull-request workflow (docs/pr.md). `github`
writes the two workflow files; `comment` and `unlabel` are collectors/pr/post.py (standard
library only)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from collectors.command import run_command
from collectors.pr import config, post, workflow
from collectors.pr.post import LABEL, REPO, PrError, read_pr_json  # noqa: F401 (read_pr_json: used from here)

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
    post.add_comment_arguments(sub.add_parser(
        "comment", help="post or update the one stallscope comment on a PR",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=post.COMMENT_EPILOG,
        description="Build the PR comment from a run or report directory and post it, or update the one "
                    "posted before."))
    post.add_unlabel_arguments(sub.add_parser(
        "unlabel", help="remove the label from a PR",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=post.UNLABEL_EPILOG,
        description="Remove the measuring label from a pull request, if it carries it."))
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.action != "github":
        return post.run(args)
    return run_command("stallscope pr github", lambda: github(args), (PrError, config.PrConfigError))


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
