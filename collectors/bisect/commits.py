"""The commits a bisection searches: the first-parent line from the good end to the bad end,
oldest first, with subject and author date (what the report names the culprit by)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from analysis.bisect.search import Commit
from analysis.errors import UserError


class BisectError(UserError):
    """A range that cannot be bisected: not a repository, an unknown ref, good not an
    ancestor of bad, or a bisection directory that is not one."""


def _git(repo: Path, *args: str) -> str:
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise BisectError(f"git -C {repo} {' '.join(args)}: {p.stderr.strip() or 'failed'}")
    return p.stdout.strip()


def resolve(repo: Path, ref: str) -> str:
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise BisectError(f"{repo} is not a git repository (give --repo git:PATH of a Redis/Valkey clone)")
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except BisectError:
        raise BisectError(f"ref {ref!r} not found in {repo} (git -C {repo} log --oneline lists commits)") from None


def first_parent_range(repo: Path, good: str, bad: str) -> list[Commit]:
    """[good, ..., bad] along bad's first parents; good must be one of them."""
    g, b = resolve(repo, good), resolve(repo, bad)
    if g == b:
        raise BisectError(f"--good {good} and --bad {bad} are the same commit ({g[:12]})")
    shas = _git(repo, "rev-list", "--first-parent", "--reverse", f"{g}..{b}").split()
    if not shas or _git(repo, "rev-parse", f"{shas[0]}^") != g:
        raise BisectError(f"--good {good} ({g[:12]}) is not on the first-parent line of --bad {bad} "
                          f"({b[:12]}): give a good ref that {bad} descends from by first parents")
    return [_describe(repo, s) for s in [g, *shas]]


def _describe(repo: Path, sha: str) -> Commit:
    subject, date = _git(repo, "show", "-s", "--format=%s%x00%aI", sha).split("\x00")
    return Commit(sha, subject, date)
