"""`stallscope pr github --pr-cache DIR`: the build cache PR jobs keep between jobs on a
persistent runner, and the guard that keeps it apart from the runner's own cache (what
scheduled and by-hand runs build with, and trust): DIR is refused when it is that cache,
holds it, or lies inside it (docs/pr.md, "What the measuring job does").

The guard used to compare the text given with two spellings of ~/.cache/stallscope, so the
same directory written absolute, with a trailing `/.`, with a doubled slash, or its parent
got through. Now it holds twice:
- here, when the workflow is written: DIR normalised (`~`, `$HOME`, `//`, `.`; `..` is
  refused), checked by its words against any home's `.cache/stallscope`, and, resolved on
  this machine (symbolic links followed), against this machine's own cache;
- on the runner, in the job's first cache step (collectors/pr/workflow.py): both paths
  resolved there with `realpath -m` (the runner's home, its symbolic links, its
  $STALLSCOPE_CACHE or $XDG_CACHE_HOME), the job failing before anything is built. Only
  the runner knows its home and links; the check here catches the mistake earlier."""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from analysis.errors import UserError
from collectors.variants.builder import cache_dir

HOME_FORMS = ("~", "$HOME", "${HOME}")
TRUSTED = "~/.cache/stallscope"       # the runner's own cache, as the builder defaults to it


class PrCacheError(UserError):
    """A --pr-cache that could reach the runner's own build cache, or is not a directory
    path the job can use; exit status 2."""


def _refuse(given: str, why: str) -> PrCacheError:
    return PrCacheError(f"--pr-cache {given!r}: {why}; give an absolute (or ~/) directory that only PR jobs "
                        f"use, apart from the runner's own cache {TRUSTED}")


def normalise(given: str) -> str:
    """DIR as the workflow writes it: `~/...` for a directory under the runner's home (any
    of ~, $HOME, ${HOME}), else an absolute path; doubled slashes, `.` and a trailing slash
    gone. PrCacheError for a relative path, a `..` or a character a path line cannot hold."""
    if not given or any(c < " " or c == "\x7f" for c in given):
        raise _refuse(given, "an empty path or one with a control character")
    head, sep, rest = given.partition("/")
    home = head in HOME_FORMS
    if not home and not given.startswith("/"):
        raise _refuse(given, "a relative path (the job's working directory is the PR's checkout)")
    parts = [p for p in (rest if home else given).split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _refuse(given, "'..' in the path (say the directory itself)")
    return ("~/" if home else "/") + "/".join(parts) if parts else ("~" if home else "/")


def words_problem(path: str) -> str | None:
    """Why the normalised `path` could reach a runner's own cache, by its words alone: the
    home, its .cache or the cache itself (or below it); any home's .cache/stallscope written
    absolute; the root."""
    parts = PurePosixPath(path).parts
    if path in ("/", "~", "~/.cache"):
        return "it holds the runner's own cache"
    if parts[:3] == ("~", ".cache", "stallscope"):
        return "it is, or lies inside, the runner's own cache"
    for i in range(1, len(parts)):
        if parts[i] == ".cache" and parts[i + 1:i + 2] in ((), ("stallscope",)):
            return ("it is, holds or lies inside a home's .cache/stallscope (the runner's own cache, "
                    "written absolute)")
    return None


def _here(path: str) -> Path:
    """`path` as this machine reads it, symbolic links followed."""
    return Path(os.path.expanduser(path)).resolve()


def within(a: Path, b: Path) -> bool:
    return a == b or b in a.parents


def check(given: str) -> str:
    """The normalised --pr-cache, or PrCacheError if it is, holds or lies inside the
    runner's own cache, by its words or on this machine (links followed)."""
    path = normalise(given)
    problem = words_problem(path)
    if problem:
        raise _refuse(given, problem)
    mine = _here(path)
    for trusted in {_here(TRUSTED), cache_dir().resolve()}:
        if within(mine, trusted) or within(trusted, mine):
            raise _refuse(given, f"on this machine it is {mine}, which is, holds or lies inside the own cache "
                                 f"{trusted}")
    return path


# The same guard on the runner, in bash, before STALLSCOPE_CACHE is set: realpath -m
# resolves the symbolic links that exist there and normalises the rest.
RUNNER_CHECK = (
    'case "$PR_CACHE" in "~") PR_CACHE="$HOME" ;; "~/"*) PR_CACHE="$HOME/${PR_CACHE#"~/"}" ;; esac\n'
    'pr_cache=$(realpath -m -- "$PR_CACHE")\n'
    'trusted=$(realpath -m -- "${STALLSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/stallscope}")\n'
    'within() { [ "$1" = "$2" ] || [[ "$1" == "${2%/}"/* ]]; }\n'
    'if within "$pr_cache" "$trusted" || within "$trusted" "$pr_cache"; then\n'
    '  echo "::error::--pr-cache $pr_cache is, holds or lies inside this runner\'s own build cache $trusted '
    '(trusted jobs build with it): regenerate the workflow with another --pr-cache"\n'
    '  exit 1\n'
    'fi\n')
