"""`dir:PATH` variants (a source tree as it is, committed or not) and the warning a dirty work
tree gets as `git:PATH@REF` (issue 46): the grammar, which files count, the content key, the
copy, and real builds through the cache of a small tree whose Makefile compiles a C program
that answers `--version` like a Redis server (seconds, not the minutes of a Redis build: the
Redis tree's own dir: build is tests/test_your_change.py's)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from collectors.variants import worktree
from collectors.variants.builder import Progress, _resolve_source, build_variant, cached_build
from collectors.variants.spec import GRAMMAR, parse_variant

SERVER_C = r"""#include <stdio.h>
#include <string.h>
__attribute__((noinline)) int dictFind(int x) { return x * 3 + 1; }
__attribute__((noinline)) int lookupKey(int x) { return dictFind(x) + 2; }
__attribute__((noinline)) int call(int x) { return lookupKey(x) ^ 5; }
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("Redis server v=%s sha=00000000:0 malloc=libc bits=64 build=0\n", VERSION);
        return 0;
    }
    return call(argc) == 0;
}
"""
MAKEFILE = """all:
\t$(CC) -O2 $(CFLAGS) -o src/redis-server src/server.c
\tcp src/redis-server src/redis-benchmark
\tcp src/redis-server src/redis-cli
"""


def redis_like(where: Path, version: str = "8.0.0") -> Path:
    """A tree with Redis' shape: Makefile, src/, a version header."""
    t = where / "tree"
    (t / "src").mkdir(parents=True)
    (t / "Makefile").write_text(MAKEFILE)
    (t / "src" / "server.c").write_text(f'#define VERSION "{version}"\n' + SERVER_C)
    (t / "README.md").write_text("a Redis-like tree\n")
    return t


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- grammar

def test_dir_spec_parses_with_modifiers_and_keeps_at_signs():
    v = parse_variant("wip=dir:~/src/redis@work+make=OPTIMIZATION=-O3+config=save=")
    assert (v.kind, v.source, v.ref) == ("dir", os.path.expanduser("~/src/redis@work"), None)
    assert v.make_flags == ["OPTIMIZATION=-O3"] and v.config == {"save": ""}
    assert "dir:PATH" in GRAMMAR and "wip=dir:" in GRAMMAR
    with pytest.raises(ValueError, match="must start with debsrc:, git:, dir: or bin:"):
        parse_variant("a=tree:/x")
    with pytest.raises(ValueError, match="dir: needs a path"):
        parse_variant("a=dir:")


# ---------------------------------------------------------------- files and key

def test_walk_leaves_out_git_and_build_outputs_and_keys_by_content(tmp_path):
    t = redis_like(tmp_path)
    before = worktree.read_tree(t)
    assert before.selected_by == "walk"
    assert before.files == ["Makefile", "README.md", "src/server.c"]
    # build outputs and .git change nothing
    (t / ".git").mkdir()
    (t / ".git" / "HEAD").write_text("ref: refs/heads/x\n")
    (t / "src" / "server.o").write_bytes(b"\x7fELF junk")
    shutil.copy("/bin/true", t / "src" / "redis-server")      # an ELF binary: an output
    (t / "src" / ".make-settings").write_text("OPT=-O2\n")
    (t / "deps").mkdir()
    (t / "deps" / "libx.a").write_bytes(b"!<arch>\n")
    (t / "dump.rdb").write_bytes(b"REDIS0011")
    assert worktree.read_tree(t).digest == before.digest
    # the same files elsewhere: the same key (the path is not in it)
    other = tmp_path / "elsewhere"
    shutil.copytree(t, other, symlinks=True)
    assert worktree.read_tree(other).digest == before.digest
    # an edit, a new file, an executable bit, a symlink: each a new key
    keys = {before.digest}
    (t / "src" / "server.c").write_text((t / "src" / "server.c").read_text() + "/* edit */\n")
    keys.add(worktree.read_tree(t).digest)
    (t / "src" / "new.c").write_text("int x;\n")
    keys.add(worktree.read_tree(t).digest)
    (t / "src" / "new.c").chmod(0o755)
    keys.add(worktree.read_tree(t).digest)
    (t / "src" / "link.c").symlink_to("new.c")
    keys.add(worktree.read_tree(t).digest)
    assert len(keys) == 5
    assert "src/link.c" in worktree.read_tree(t).files


def test_git_work_tree_counts_what_git_sees(tmp_path):
    t = redis_like(tmp_path)
    (t / ".gitignore").write_text("*.o\nsrc/redis-*\nbuilt/\n")
    git(t, "init", "-q")
    git(t, "add", "-A")
    git(t, "commit", "-q", "-m", "one")
    clean = worktree.read_tree(t)
    assert clean.selected_by == "git ls-files"
    assert clean.files == [".gitignore", "Makefile", "README.md", "src/server.c"]
    # ignored files (an in-place build) change nothing; an untracked one counts; so does an edit
    (t / "src" / "server.o").write_text("x")
    (t / "built").mkdir()
    (t / "built" / "notes").write_text("x")
    assert worktree.read_tree(t).digest == clean.digest
    (t / "src" / "extra.c").write_text("int y;\n")
    assert "src/extra.c" in worktree.read_tree(t).files
    (t / "src" / "extra.c").unlink()
    (t / "README.md").unlink()               # tracked, deleted from the tree: left out
    assert "README.md" not in worktree.read_tree(t).files


def test_copy_is_exactly_the_hashed_files(tmp_path):
    t = redis_like(tmp_path)
    (t / "src" / "run.sh").write_text("#!/bin/sh\n")
    (t / "src" / "run.sh").chmod(0o755)
    (t / "src" / "alias.c").symlink_to("server.c")
    (t / "src" / "server.o").write_text("an output")
    tree = worktree.read_tree(t)
    dest = tmp_path / "copy"
    worktree.copy_tree(tree, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir()) == tree.files
    assert os.access(dest / "src" / "run.sh", os.X_OK) and os.readlink(dest / "src" / "alias.c") == "server.c"
    assert not (dest / "src" / "server.o").exists()
    assert worktree.content_digest(dest, tree.files)[0] == tree.digest


def test_not_a_source_tree_is_refused_with_what_to_give(tmp_path):
    with pytest.raises(worktree.TreeError, match="no such directory; give the top of a Redis or Valkey"):
        worktree.read_tree(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(worktree.TreeError, match="has no Makefile and src/"):
        worktree.read_tree(tmp_path / "empty", "wip")


# ---------------------------------------------------------------- builds through the cache

def test_dir_builds_through_the_cache_and_an_edit_is_a_new_build(tmp_path):
    t = redis_like(tmp_path)
    cache = tmp_path / "cache"
    logs: list[str] = []
    spec = parse_variant(f"wip=dir:{t}")
    assert cached_build(spec, cache) is None
    v = build_variant(spec, cache, log=logs.append)
    assert v.kind == "dir" and v.version == "8.0.0" and v.symbols is True
    assert v.source.startswith(f"dir {t} as it is (content ") and v.commit.startswith("dir-")
    assert any("copying" in m and "chosen by walk" in m for m in logs)
    built = Path(v.server_bin).parents[2]
    assert cached_build(spec, cache) == built
    # an in-place build in the tree itself changes nothing: a cache hit
    subprocess.run(["make", "-s", "CFLAGS=-g"], cwd=t, check=True, capture_output=True)
    assert (t / "src" / "redis-server").is_file()
    logs.clear()
    again = build_variant(spec, cache, log=logs.append)
    assert again.server_bin == v.server_bin and any("cache hit" in m for m in logs)
    # an edit: a new build, with the edit in it
    (t / "src" / "server.c").write_text((t / "src" / "server.c").read_text().replace('"8.0.0"', '"8.0.1"'))
    assert cached_build(spec, cache) is None
    edited = build_variant(spec, cache, log=logs.append)
    assert edited.version == "8.0.1" and edited.server_bin != v.server_bin
    assert len(list((cache / "builds").glob("*/build.json"))) == 2


def test_dirty_git_tree_warns_before_the_build_and_names_dir(tmp_path):
    t = redis_like(tmp_path)
    git(t, "init", "-q")
    git(t, "add", "-A")
    git(t, "commit", "-q", "-m", "one")
    said: list[str] = []
    say = Progress("base", said.append)
    _resolve_source(parse_variant(f"base=git:{t}@HEAD"), tmp_path / "cache", say)
    assert said == []                                   # clean: nothing to say
    (t / "src" / "server.c").write_text("/* work in progress */\n" + (t / "src" / "server.c").read_text())
    (t / "src" / "new.c").write_text("int z;\n")
    _resolve_source(parse_variant(f"base=git:{t}@HEAD"), tmp_path / "cache", say)
    assert len(said) == 1
    w = said[0]
    assert w.startswith(f"[base] warning: {t} has uncommitted changes (2 paths: ")
    assert "src/server.c" in w and "src/new.c" in w
    assert f"which git:{t}@HEAD does not include" in w and f"give dir:{t}" in w


def test_dirty_warning_reaches_stderr_before_make(tmp_path, capfd):
    """Through the command: `stallscope build` (progress on stderr) says it before make runs."""
    from commands.table import main
    t = redis_like(tmp_path)
    git(t, "init", "-q")
    git(t, "add", "-A")
    git(t, "commit", "-q", "-m", "one")
    (t / "README.md").write_text("edited\n")
    assert main(["build", f"base=git:{t}", "--cache", str(tmp_path / "cache")]) == 0
    err = capfd.readouterr().err
    assert "uncommitted changes (1 path: README.md)" in err and f"dir:{t}" in err
    assert err.index("uncommitted changes") < err.index("building: make")
