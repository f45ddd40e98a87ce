"""Builds go through ccache (collectors/variants/builder.py compiler_env): two builds of the
same sources in two different temporary directories, as the builder makes them, compile
once; the second is served from the cache. Real make, real gcc, real ccache."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from collectors.variants.builder import CCACHE_LINKS, compiler_env

SOURCE = """#include <stdio.h>
int main(void) { printf("%d\\n", 6 * 7); return 0; }
"""
MAKEFILE = "prog: prog.o\n\tcc -o prog prog.o\nprog.o: prog.c\n\tcc -g -O2 -c prog.c\n"


def _stats(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


def _build(tmp: Path, name: str, cache: Path) -> dict[str, str]:
    tree = tmp / f".tmp-build-{name}" / "tree"       # the builder's layout: tmp dir / tree
    tree.mkdir(parents=True)
    (tree / "prog.c").write_text(SOURCE)
    (tree / "Makefile").write_text(MAKEFILE)
    env = compiler_env(tree, cache)
    subprocess.run(["make"], cwd=tree, env=env, check=True, capture_output=True)
    assert subprocess.run([str(tree / "prog")], capture_output=True, text=True).stdout == "42\n"
    return env


@pytest.mark.skipif(not (CCACHE_LINKS.is_dir() and shutil.which("ccache")),
                    reason="ccache not installed (make setup installs it)")
def test_a_second_build_elsewhere_hits_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("STALLSCOPE_NO_CCACHE", raising=False)
    cache = tmp_path / "cache"
    env = _build(tmp_path, "a", cache)
    assert env["CCACHE_DIR"] == str(cache / "ccache") and env["PATH"].startswith(str(CCACHE_LINKS))
    first = _stats(env)
    assert first.get("cache_miss", 0) >= 1
    _build(tmp_path, "b", cache)
    second = _stats(env)
    hits = second.get("direct_cache_hit", 0) + second.get("preprocessed_cache_hit", 0)
    assert hits >= 1 and second.get("cache_miss", 0) == first.get("cache_miss", 0)


def test_ccache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("STALLSCOPE_NO_CCACHE", "1")
    env = compiler_env(tmp_path / "tree", tmp_path)
    assert "CCACHE_DIR" not in env and not env["PATH"].startswith(str(CCACHE_LINKS))
