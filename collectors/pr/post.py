"""What the PR workflow's trusted jobs do (docs/pr.md): post or update the one comment on a
pull request, remove its label. The command is commands/pr_post.py (`stallscope pr comment`,
`stallscope pr unlabel`, and `python3 -S -m commands.pr_post` in the comment workflow); the
`args` below are its parsed arguments. Those jobs run on a GitHub-hosted runner, never the
measuring one, from a checkout of stallscope at a pinned commit, so this module and what it
imports need the standard library only (-S: not even the runner image's site-packages).
Nothing of the pull request is executed: the artifact is data (collectors/pr/untrusted.py)."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from analysis.errors import UserError
from collectors.pr import comment, sources
from collectors.http_client import read_token
from collectors.pr.github_api import DEFAULT_API, Author, GitHub, GitHubError, pull_labels, upsert_comment
from collectors.pr.untrusted import KIB, Unreadable, read_capped

REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
LABEL = re.compile(r"[A-Za-z0-9 _.:/+-]+")
SHA = re.compile(r"[0-9a-f]{7,40}")
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\[bot\])?")
PR_JSON_CAP = 4 * KIB

class PrError(UserError):
    """Bad input to `stallscope pr`; exit status 2."""


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


def _target(args: Any) -> tuple[int | None, comment.Measured]:
    # --dry-run posts nothing, so it needs no repository or pull request (the comment's text
    # names neither); when they are given they are checked all the same
    if args.repo is None and not args.dry_run:
        raise PrError("which repository? give --repo OWNER/REPO (only --dry-run needs none)")
    if args.repo is not None and not REPO.fullmatch(args.repo):
        raise PrError(f"--repo {args.repo!r}: give OWNER/REPO, e.g. octo-org/redis")
    pr, head, merge_base = read_pr_json(args.pr_json) if args.pr_json else (args.pr, None, None)
    if args.pr is not None and args.pr != pr:
        raise PrError(f"--pr {args.pr} but {args.pr_json} says PR {pr}")
    if (pr is None and not args.dry_run) or (pr is not None and pr <= 0):
        raise PrError("which pull request? give --pr N (or --pr-json FILE; only --dry-run needs none)")
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
    return pr, comment.Measured(args.commit or head, merge_base, args.link, commit_trusted=bool(args.commit),
                                full=bool(getattr(args, "full", False)))


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


def check_bound(pull: dict, args: Any, pr: int) -> None:
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


def _client(args: Any) -> GitHub:
    token = read_token(args.token_file, ("GITHUB_TOKEN", "GH_TOKEN"), "GitHub", GitHubError)
    if not token:
        raise PrError("no GitHub token: give --token-file FILE or set $GITHUB_TOKEN (or $GH_TOKEN) to a "
                      "token with 'pull requests: write' on the repository")
    return GitHub(token, args.api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API)


def _why_not_now(gh: GitHub, args: Any, pr: int, measured: comment.Measured) -> str | None:
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


def post(args: Any) -> int:
    pr, measured = _target(args)
    gh = None if args.dry_run else _client(args)
    text = comment.body(sources.find(args.source, args.reports_only, measured.full), measured)
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


def unlabel(args: Any) -> int:
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

