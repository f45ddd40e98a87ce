"""A local git repository made from the Redis source tree the build cache unpacks (Debian's
redis source: `apt-get source` through collectors/variants), with nine commits on `unstable`:
the tree as shipped, then harmless changes (README lines, comments in C files that are
compiled again but cost nothing) around one regression, commit 4, that slows every key
lookup by a known amount (dictFind hashes the key REHASHES more times). Scheduled-job and
bisection tests build and run it.

The commits' dates and authors are fixed, so their hashes are the same in every test and
every session: a build of a commit is made once and found in the build cache after that."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from collectors.variants.builder import _fetch_source, _resolve_source, cache_dir
from collectors.variants.spec import parse_variant

# dictFind (every key lookup: lookupKey -> kvstoreDictFind -> dictFind) hashes the key
# REHASHES more times: the CPU per operation of the hash function and of dictFind rises.
REHASHES = 40
SLOW_LOOKUP_ANCHOR = "    const uint64_t hash = dictHashKey(d, key, d->useStoredKeyApi);\n    return dictFindByHash(d,key,hash);\n"
SLOW_LOOKUP = ("    { volatile uint64_t sink = 0; /* injected regression: re-hash the key */\n"
               f"      for (int i = 0; i < {REHASHES}; i++) sink += dictHashKey(d, key, d->useStoredKeyApi); }}\n"
               + SLOW_LOOKUP_ANCHOR)
CULPRIT = 4                  # the index of the regression among the commits
# what each commit does, oldest first after the tree as shipped: (file, kind)
CHANGES = [("README.md", "docs"), ("src/t_string.c", "comment"), ("README.md", "docs"),
           ("src/dict.c", "regression"), ("README.md", "docs"), ("src/t_hash.c", "comment"),
           ("README.md", "docs"), ("README.md", "docs")]
FIXED = {"GIT_AUTHOR_NAME": "stallscope ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
         "GIT_COMMITTER_NAME": "stallscope ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid"}
LOOKUP_FUNCTIONS = {"dictFind", "dictFindByHash", "siphash", "siphash_nocase", "dictSdsHash",
                    "dictSdsCaseHash", "dictGenHashFunction", "kvstoreDictFind", "lookupKey"}


def git(repo: Path, *args: str, when: int | None = None) -> str:
    env = None
    if when is not None:        # a fixed date: the same commit hash in every test
        date = f"{1764000000 + when * 3600} +0000"
        env = {**os.environ, **FIXED, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def redis_repo(dest: Path) -> list[str]:
    """Make the repository at `dest`; returns its nine commits, oldest first."""
    cache = cache_dir()
    vs = parse_variant("src=debsrc:redis")
    ident = _resolve_source(vs, cache, lambda _m: None)
    tree = dest / "_tree"
    _fetch_source(vs, ident, cache, tree, lambda _m: None)
    shutil.rmtree(tree / "debian", ignore_errors=True)
    tree.rename(dest / "redis")
    repo = dest / "redis"
    git(repo, "init", "-q", "-b", "unstable")
    git(repo, "add", "-A", "--force")   # the tarball ships files .gitignore names (jemalloc configure)
    git(repo, "commit", "-q", "-m", f"redis {ident['version']} as Debian ships it", when=0)
    commits = [git(repo, "rev-parse", "HEAD")]
    for k, (name, kind) in enumerate(CHANGES, 1):
        _change(repo / name, kind, k)
        subject = {"docs": f"docs: note {k}", "comment": f"{Path(name).stem}: a comment (change {k})",
                   "regression": "dict: slower lookup (injected regression)"}[kind]
        git(repo, "commit", "-q", "-am", subject, when=k)
        commits.append(git(repo, "rev-parse", "HEAD"))
    # Detached, so tests can move `unstable` (git refuses to move a checked-out branch).
    git(repo, "checkout", "-q", "--detach")
    return commits


def _change(path: Path, kind: str, k: int) -> None:
    text = path.read_text()
    if kind == "regression":
        assert text.count(SLOW_LOOKUP_ANCHOR) == 1, "dict.c changed: update SLOW_LOOKUP_ANCHOR"
        path.write_text(text.replace(SLOW_LOOKUP_ANCHOR, SLOW_LOOKUP, 1))
    elif kind == "comment":             # compiled again, costs nothing
        path.write_text(text + f"\n/* a harmless change for the scheduled-job tests ({k}) */\n")
    else:
        path.write_text(text + f"\n<!-- harmless change {k} for the scheduled-job tests -->\n")
