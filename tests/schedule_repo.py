"""A local git repository made from the Redis source tree the build cache unpacks (Debian's
redis source: `apt-get source` through collectors/variants), with three commits on `unstable`:
the tree as shipped, a harmless change (a comment), and a regression that slows every key
lookup (dictFind hashes the key 100 more times). Scheduled-job tests build and run it."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from collectors.variants.builder import _fetch_source, _resolve_source, cache_dir
from collectors.variants.spec import parse_variant

# dictFind (every key lookup: lookupKey -> kvstoreDictFind -> dictFind) hashes the key 100
# more times: the CPU per operation of the hash function and of dictFind rises.
SLOW_LOOKUP_ANCHOR = "    const uint64_t hash = dictHashKey(d, key, d->useStoredKeyApi);\n    return dictFindByHash(d,key,hash);\n"
SLOW_LOOKUP = ("    { volatile uint64_t sink = 0; /* injected regression: re-hash the key */\n"
               "      for (int i = 0; i < 100; i++) sink += dictHashKey(d, key, d->useStoredKeyApi); }\n"
               + SLOW_LOOKUP_ANCHOR)
LOOKUP_FUNCTIONS = {"dictFind", "dictFindByHash", "siphash", "siphash_nocase", "dictSdsHash",
                    "dictSdsCaseHash", "dictGenHashFunction", "kvstoreDictFind", "lookupKey"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def redis_repo(dest: Path) -> list[str]:
    """Make the repository at `dest`; returns the three commits, oldest first."""
    cache = cache_dir()
    vs = parse_variant("src=debsrc:redis")
    ident = _resolve_source(vs, cache, lambda _m: None)
    tree = dest / "_tree"
    _fetch_source(vs, ident, cache, tree, lambda _m: None)
    shutil.rmtree(tree / "debian", ignore_errors=True)
    tree.rename(dest / "redis")
    repo = dest / "redis"
    git(repo, "init", "-q", "-b", "unstable")
    git(repo, "config", "user.email", "ci@example.invalid")
    git(repo, "config", "user.name", "stallscope ci")
    git(repo, "add", "-A", "--force")   # the tarball ships files .gitignore names (jemalloc configure)
    git(repo, "commit", "-q", "-m", f"redis {ident['version']} as Debian ships it")
    commits = [git(repo, "rev-parse", "HEAD")]
    readme = repo / "README.md"
    readme.write_text(readme.read_text() + "\n<!-- harmless change for the scheduled-job test -->\n")
    git(repo, "commit", "-q", "-am", "docs: a harmless change")
    commits.append(git(repo, "rev-parse", "HEAD"))
    dictc = repo / "src" / "dict.c"
    text = dictc.read_text()
    assert text.count(SLOW_LOOKUP_ANCHOR) == 1, "dict.c changed: update SLOW_LOOKUP_ANCHOR"
    dictc.write_text(text.replace(SLOW_LOOKUP_ANCHOR, SLOW_LOOKUP, 1))
    git(repo, "commit", "-q", "-am", "dict: slower lookup (injected regression)")
    commits.append(git(repo, "rev-parse", "HEAD"))
    # Detached, so tests can move `unstable` (git refuses to move a checked-out branch).
    git(repo, "checkout", "-q", "--detach")
    return commits
