"""Moving refs: `git:PATH@unstable` names a branch that moves; each run resolves it to the
commit it measures, builds that commit (so the build cache keys on the commit, not on the
branch name) and stores it in the history with the run."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from collectors.variants.spec import parse_variant
from collectors.schedule.model import ScheduleError

_MODIFIERS = re.compile(r"\+(?=(?:patch|make|config)=)")
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Resolved:
    spec: str                 # the spec to build: a git ref replaced by its commit
    commit: str | None        # the commit (git sources), None for debsrc:/bin:
    ref: str | None           # what the schedule file named (branch, tag, HEAD)


def resolve(spec: str) -> Resolved:
    vs = parse_variant(f"x={spec}")
    if vs.kind != "git":
        return Resolved(spec, None, vs.ref)
    ref = vs.ref or "HEAD"
    sha = commit_of(vs.source, ref)
    return Resolved(pin(spec, sha), sha, ref)


def commit_of(repo: str, ref: str) -> str:
    try:
        out = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                             capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ScheduleError("git is not installed: apt-get install git (make setup does)") from None
    sha = out.stdout.strip()
    if out.returncode != 0 or not _SHA.match(sha):
        why = out.stderr.strip() or f"no commit named {ref!r}"
        raise ScheduleError(f"git:{repo}@{ref}: cannot resolve the ref to a commit ({why}); "
                            "is the path a git checkout and the branch fetched?")
    return sha


def pin(spec: str, sha: str) -> str:
    """The same git spec at a given commit, modifiers kept."""
    parts = _MODIFIERS.split(spec)
    head = parts[0]
    path = head[len("git:"):]
    path = path.rpartition("@")[0] if "@" in path else path
    return "+".join([f"git:{path}@{sha}", *parts[1:]])
