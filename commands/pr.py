"""`stallscope pr github|comment|unlabel|check`: the pull-request workflow (docs/pr.md).
`github` writes the two workflow files; `comment` and `unlabel` are commands/pr_post.py (what
the trusted jobs run, standard library only); `check` reads the organization's runner-group
settings and says whether a pull request's code can reach a trusted runner."""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from collectors.command import run_command
from collectors.http_client import read_token
from collectors.pr import config, group_check, pr_cache, runners, trusted_workflow, workflow
from collectors.pr.github_api import DEFAULT_API, GitHub, GitHubError
from collectors.pr.post import LABEL, REPO, PrError
from commands import pr_post

EPILOG = """\
Examples:
  # write .github/workflows/stallscope-pr.yml and stallscope-pr-comment.yml for a Redis fork:
  stallscope pr github --config .github/stallscope-pr.yaml --runner-group pr-bench \\
      --runner-labels self-hosted,linux,bare-metal --stallscope-repo octo-org/stallscope --stallscope-ref 3f5d2c1b0a99887766554433221100ffeeddccbb

  # post (or update) the one comment on PR 42 from a run or report directory, by hand:
  GITHUB_TOKEN=... stallscope pr comment reports/20261123-035105-mset-50keys --repo octo-org/redis --pr 42

  # see the comment without posting it:
  stallscope pr comment runs/20261123-035105-mset-50keys --repo octo-org/redis --pr 42 --dry-run

  # can a pull request's code reach the schedule's runners? (the organization's runner-group settings)
  GITHUB_TOKEN=... stallscope pr check --repo octo-org/redis

A maintainer adds the label (default 'stallscope') to a pull request: the self-hosted runner
builds its merge base and head, runs each case of the config paired (precision and budget from
the config), compares, and uploads the reports; a second workflow, on a GitHub-hosted runner,
posts them as one comment, updated in place when the PR is measured again. A push removes the
label: new code is measured when a maintainer adds it again. The repository settings this
relies on are in docs/pr.md. Exit status: 0 done, 2 bad input or a GitHub call that failed.
"""

FULL_SHA = re.compile(r"[0-9a-f]{40}")
BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")
HOSTED = re.compile(r"(?:ubuntu|macos)-[0-9a-z][0-9a-z.-]*")      # GitHub-hosted images' labels

GITHUB_EPILOG = """\
Examples:
  stallscope pr github --runner-group pr-bench --runner-labels self-hosted,linux,bare-metal \\
      --stallscope-repo octo-org/stallscope --stallscope-ref 3f5d2c1b0a99887766554433221100ffeeddccbb
  stallscope pr github --config .github/stallscope-pr.yaml --runner-group pr-bench --label perf --measure-pushes \\
      --stallscope-repo octo-org/stallscope --stallscope-ref 3f5d2c1b0a99887766554433221100ffeeddccbb

The config file (YAML; docs/pr.md), e.g. .github/stallscope-pr.yaml:
  cases: [mset-50keys, mget-100keys]   # case names or case files
  size: small                          # small | default | large
  precision: 2%                        # each run: --precision 2% --budget 30m
  budget: 30m
Commit it with the two workflows; the comment workflow acts once it is on the default branch.
The workflows are safe only with the repository settings docs/pr.md lists as required.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stallscope pr", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Pull-request workflow: measure a labelled PR's head against its "
                                            "merge base on a self-hosted runner and keep one comment with the report.")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    g = sub.add_parser("github", help="write the two GitHub Actions workflows (measure; comment)",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=GITHUB_EPILOG,
                       description="Write stallscope-pr.yml (on: pull_request, read-only, runs the PR's code on "
                                   "the self-hosted runner) and stallscope-pr-comment.yml (GitHub-hosted, posts the "
                                   "comment and removes the label after a push, never runs PR code) into --out.")
    _github_arguments(g)
    pr_post.add_comment_arguments(sub.add_parser(
        "comment", help="post or update the one stallscope comment on a PR",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=pr_post.COMMENT_EPILOG,
        description="Build the PR comment from a run or report directory and post it, or update the one "
                    "posted before."))
    pr_post.add_unlabel_arguments(sub.add_parser(
        "unlabel", help="remove the label from a PR (the comment workflow's job after a push)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=pr_post.UNLABEL_EPILOG,
        description="Remove the measuring label from a pull request, if it carries it."))
    _check_arguments(sub.add_parser(
        "check", help="read the runner-group settings: can a pull request's code reach a trusted runner?",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=CHECK_EPILOG,
        description="Read the organization's self-hosted runner groups through GitHub's REST API and say "
                    "whether a pull request's code (a fork's too) can reach the runners of the schedule's or "
                    "an experiment's workflow."))
    return p


CHECK_EPILOG = """\
Examples:
  # from the repository's work tree (its .github/workflows name the groups):
  GITHUB_TOKEN=... stallscope pr check --repo octo-org/redis
  # the schedule's workflow lives elsewhere: name its group
  stallscope pr check --repo octo-org/redis --trusted-group schedule-bench --token-file ~/.config/gh-owner

The token reads runner groups: an organization owner's (or a member's with the 'Manage
organization runners and runner groups' permission), a classic token with admin:org or a
fine-grained one with the organization permission 'Self-hosted runners' (read); for a
personal account's repository, admin on it. Exit status: 0 no path from a pull request's code
to a trusted runner was found, 1 one was (or a group could not be checked), 2 bad input or a
GitHub call that failed. What it reads and decides: docs/pr.md, "Checking the runner groups".
"""


def _check_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("--repo", required=True, metavar="OWNER/REPO", help="the repository that takes the pull requests")
    c.add_argument("--workflows", action="append", metavar="DIR", help="a directory of the workflows stallscope "
                   "wrote (repeatable; default: the .github/workflows of the work tree this runs in)")
    c.add_argument("--pr-group", action="append", default=[], metavar="NAME", help="a runner group that runs "
                   "pull requests' code, beside those the workflows name (repeatable)")
    c.add_argument("--trusted-group", action="append", default=[], metavar="NAME", help="a trusted runner group "
                   "(the schedule's, an experiment's), beside those the workflows name (repeatable)")
    c.add_argument("--token-file", metavar="FILE", help="file holding the GitHub token (default $GITHUB_TOKEN, "
                   "then $GH_TOKEN)")
    c.add_argument("--api-url", metavar="URL", help=f"GitHub API base (default $GITHUB_API_URL, else {DEFAULT_API})")


def _github_arguments(g: argparse.ArgumentParser) -> None:
    _d = config.PrConfig()     # the defaults, as the config file's reader has them
    g.add_argument("--config", metavar="FILE", help="PR config (YAML: cases, size, precision, budget, reps, "
                   f"pairing; docs/pr.md); default: cases {', '.join(_d.cases)}, size {_d.size}, "
                   f"precision {str(_d.precision).replace('%', '%%')}, budget {_d.budget} per case, "
                   f"pairing {_d.pairing}")
    g.add_argument("--label", default="stallscope", help="the PR label that asks for a measurement "
                   "(default stallscope)")
    g.add_argument("--runner-labels", default="self-hosted", metavar="L1,L2",
                   help="labels of the self-hosted benchmark runner (default self-hosted)")
    g.add_argument("--runner-group", required=True, metavar="NAME", help="runner group of the benchmark runners "
                   "that measure PRs (organization settings: this repository only; never the schedule's group: "
                   "docs/pr.md, \"Runner isolation\")")
    g.add_argument("--out", default=".github/workflows", metavar="DIR",
                   help="where the two files go (default .github/workflows)")
    g.add_argument("--stallscope-repo", required=True, metavar="OWNER/NAME", help="stallscope's repository: the "
                   "comment workflow checks it out at --stallscope-ref and runs it on a GitHub-hosted runner")
    g.add_argument("--stallscope-ref", required=True, metavar="SHA", help="the commit of it to run (40 hex "
                   "digits: a branch or tag could be moved to other code)")
    g.add_argument("--stallscope-branch", default="main", metavar="BRANCH", help="the default branch of "
                   "--stallscope-repo: each job checks that --stallscope-ref is on it before running it (a fork's "
                   "commit can be fetched through the main repository; default main)")
    g.add_argument("--setup-stallscope", action="store_true", help="measuring job: check out that commit and "
                   "`make setup` it on the runner (default: stallscope is on the runner's PATH)")
    g.add_argument("--measure-pushes", action="store_true", help="also measure pushes to a labelled PR whose "
                   "branch is in this repository (never a fork's: its label is removed on push)")
    g.add_argument("--labeled-only", action="store_true", help=argparse.SUPPRESS)   # the default now
    g.add_argument("--comment-runner", default=workflow.HOSTED_RUNNER, metavar="LABEL",
                   help=f"GitHub-hosted runner of the comment workflow: an ubuntu-* or macos-* image label "
                   f"(default {workflow.HOSTED_RUNNER})")
    g.add_argument("--pr-cache", metavar="DIR", help="build cache kept between PR jobs on the runner, one "
                   "DIR/OWNER/REPO/pr-N per head repository and PR, never read by trusted jobs (default: a fresh "
                   "one per job under $RUNNER_TEMP)")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.action == "check":
        return run_command("stallscope pr check", lambda: check(args))
    if args.action != "github":
        return pr_post.run(args)
    return run_command("stallscope pr github", lambda: github(args))


def check(args: argparse.Namespace) -> int:
    if not REPO.fullmatch(args.repo):
        raise PrError(f"--repo {args.repo!r}: give OWNER/REPO, e.g. octo-org/redis")
    for name in args.pr_group + args.trusted_group:
        if runners.group_problem(name) and name.casefold() != "default":
            raise PrError(f"runner group {name!r}: {runners.group_problem(name)}")
    dirs = [Path(d) for d in args.workflows] if args.workflows else runners.workflow_dirs(None)
    roles = group_check.Roles.of([t for d in dirs for t in runners.targets_in(d)], args.pr_group, args.trusted_group)
    if not roles.pr and not roles.trusted:
        print(f"stallscope pr check: no stallscope workflow in {', '.join(map(str, dirs))} and no --pr-group or "
              "--trusted-group: every group a pull request can use is listed", file=sys.stderr)
    token = read_token(args.token_file, ("GITHUB_TOKEN", "GH_TOKEN"), "GitHub", GitHubError)
    if not token:
        raise PrError("no GitHub token: give --token-file FILE or set $GITHUB_TOKEN (or $GH_TOKEN) to a token that "
                      "reads runner groups (admin:org, or 'Self-hosted runners: read')")
    gh = GitHub(token, args.api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API)
    repo, groups, runner_count = group_check.read(gh, args.repo)
    findings = group_check.judge(repo, groups, roles, runner_count)
    kind = f"organization {repo.owner}, {len(groups)} runner groups" if repo.org else f"personal account {repo.owner}"
    print(f"{repo.full_name} ({'public' if repo.public else 'private'}; {kind})")
    for f in findings:
        print(f"  {f}")
    bad = [f for f in findings if f.level in group_check.FAILING]
    if bad:
        print(f"A pull request's code can reach a trusted runner, or a group could not be checked: "
              f"{', '.join(sorted({repr(f.group) for f in bad}))} (docs/pr.md, \"Runner isolation\").")
        return 1
    print("No path from a pull request's code to a trusted runner in these settings (what the check cannot see: "
          "docs/pr.md, \"Checking the runner groups\").")
    return 0


def _check_case(name: str, size: str) -> None:
    from collectors.workload.cases import load_case
    from collectors.workload.casefile import CaseError
    try:
        load_case(name, size)
    except CaseError as e:
        raise config.PrConfigError(f"case {name!r} at size {size}: {e}") from None


def _setup(args: argparse.Namespace) -> workflow.Setup:
    labels = tuple(x.strip() for x in args.runner_labels.split(",") if x.strip())
    if not labels or not all(LABEL.fullmatch(x) for x in labels):
        raise PrError(f"--runner-labels {args.runner_labels!r}: give comma-separated runner labels")
    group_problem = runners.group_problem(args.runner_group)
    if group_problem:
        raise PrError(f"--runner-group {args.runner_group!r}: {group_problem}")
    if not LABEL.fullmatch(args.label) or args.label != args.label.strip():
        raise PrError(f"--label {args.label!r}: letters, digits, spaces and _ . : / + - only")
    if not REPO.fullmatch(args.stallscope_repo):
        raise PrError(f"--stallscope-repo {args.stallscope_repo!r}: give OWNER/NAME")
    if not FULL_SHA.fullmatch(args.stallscope_ref):
        raise PrError(f"--stallscope-ref {args.stallscope_ref!r}: give the full commit SHA (40 hex digits) the "
                      "comment workflow runs; a branch or tag can be moved to other code")
    if not BRANCH.fullmatch(args.stallscope_branch) or ".." in args.stallscope_branch:
        raise PrError(f"--stallscope-branch {args.stallscope_branch!r}: give the name of stallscope's default branch "
                      "(e.g. main)")
    hosted = args.comment_runner
    if not LABEL.fullmatch(hosted) or hosted == "self-hosted" or hosted in labels:
        raise PrError(f"--comment-runner {hosted!r}: give a GitHub-hosted runner label (e.g. "
                      f"{workflow.HOSTED_RUNNER}), never the measuring runner's")
    if hosted.startswith("windows-"):
        raise PrError(f"--comment-runner {hosted!r}: the trusted jobs' steps are bash scripts that run "
                      "python3 (Windows images run pwsh and have no python3); give ubuntu-* or macos-*")
    if not HOSTED.fullmatch(hosted):
        raise PrError(f"--comment-runner {hosted!r}: give a label of a GitHub-hosted image, ubuntu-* or macos-* "
                      f"(e.g. {workflow.HOSTED_RUNNER}, ubuntu-latest, macos-14): the trusted jobs hold a write "
                      "token and must get a fresh GitHub-hosted VM; another label names a self-hosted runner")
    cache = None if args.pr_cache is None else pr_cache.check(args.pr_cache)
    return workflow.Setup(stallscope_repo=args.stallscope_repo, stallscope_ref=args.stallscope_ref,
                          stallscope_branch=args.stallscope_branch,
                          label=args.label, runner_labels=labels, runner_group=args.runner_group,
                          setup_on_runner=args.setup_stallscope,
                          measure_pushes=args.measure_pushes, comment_runner=hosted, pr_cache=cache)


def github(args: argparse.Namespace) -> int:
    setup = _setup(args)
    cfg = config.load(args.config, _check_case)
    out = Path(args.out)
    measuring = out / workflow.PR_FILE
    runners.check_apart([runners.Target(f"{measuring}, job measure", runners.PR_ROLE, workflow.measuring_runner(setup))],
                        runners.peers(measuring))
    out.mkdir(parents=True, exist_ok=True)
    for name, text in ((workflow.PR_FILE, workflow.render_pr(cfg, setup, args.config)),
                       (workflow.COMMENT_FILE, trusted_workflow.render_comment(setup))):
        (out / name).write_text(text)
        print(out / name)
    return 0
