"""Variant spec grammar, the private apt configuration, and binary checks (fast tests)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from collectors.variants import aptsource
from collectors.variants.aptsource import AptEnv, AptSourceError, derive_entries, read_sources
from analysis.inputs.manifest import Variant
from collectors.variants.binary import has_frame_pointers, has_symbols
from collectors.variants.spec import parse_variant


# ---------------------------------------------------------------- grammar

def test_parse_debsrc_plain():
    v = parse_variant("base=debsrc:redis")
    assert (v.name, v.kind, v.source, v.ref, v.suite) == ("base", "debsrc", "redis", None, None)
    assert v.patches == [] and v.make_flags == [] and v.config == {}
    assert v.spec == "debsrc:redis"


def test_parse_debsrc_version_suite_and_patch():
    v = parse_variant("old=debsrc:valkey/trixie@8.1.1+dfsg1-3+patch=a.patch+patch=b.patch")
    # '+' inside a Debian version is not a modifier separator
    assert (v.source, v.suite, v.ref) == ("valkey", "trixie", "8.1.1+dfsg1-3")
    assert v.patches == ["a.patch", "b.patch"]
    v = parse_variant("v=debsrc:valkey@9.1")
    assert (v.source, v.ref, v.suite) == ("valkey", "9.1", None)


def test_parse_git_with_ref_and_make():
    v = parse_variant("mine=git:~/src/redis@feature/prefetch+make=OPTIMIZATION=-O3")
    assert v.kind == "git"
    assert v.source == os.path.expanduser("~/src/redis")
    assert v.ref == "feature/prefetch"
    assert v.make_flags == ["OPTIMIZATION=-O3"]
    assert parse_variant("g=git:/src/valkey").ref is None


def test_parse_binary_with_config():
    v = parse_variant("nopf=bin:/opt/vk/valkey-server+config=prefetch-batch-max-size=0"
                      "+config=save=")
    assert (v.kind, v.source) == ("binary", "/opt/vk/valkey-server")
    assert v.config == {"prefetch-batch-max-size": "0", "save": ""}


def test_parse_make_value_with_spaces_and_equals():
    v = parse_variant("o=debsrc:redis+make=REDIS_CFLAGS=-g -march=native")
    assert v.make_flags == ["REDIS_CFLAGS=-g -march=native"]


@pytest.mark.parametrize("text,needle", [
    ("debsrc:redis", "expected NAME=SPEC"),
    ("=debsrc:redis", "expected NAME=SPEC"),
    ("1x=debsrc:redis", "must start with a letter"),
    ("a=redis", "must start with debsrc:, git:, dir: or bin:"),
    ("a=svn:/x", "must start with debsrc:, git:, dir: or bin:"),
    ("a=debsrc:", "needs a package"),
    ("a=debsrc:memcached", "not supported"),
    ("a=debsrc:redis@", "empty version"),
    ("a=debsrc:redis/", "empty suite"),
    ("a=git:/x@", "empty git ref"),
    ("a=debsrc:redis+make=-O3", "expected VAR=VALUE"),
    ("a=debsrc:redis+config=maxmemory", "expected NAME=VALUE"),
    ("a=debsrc:redis+patch=", "needs a value"),
    ("a=bin:/usr/bin/redis-server+patch=x.patch", "cannot take +patch="),
    ("a=bin:/usr/bin/redis-server+make=A=1", "cannot take +patch=, +make= or +layout="),
])
def test_parse_errors_are_clear(text, needle):
    with pytest.raises(ValueError) as e:
        parse_variant(text)
    msg = str(e.value)
    assert needle in msg
    assert repr(text) in msg            # names what the user typed
    assert "Variant spec grammar" in msg  # and shows the grammar


def test_manifest_record_has_exactly_the_documented_keys():
    bv = Variant(name="b", spec="debsrc:redis", kind="debsrc", source="s", patches=[],
                 make_flags=[], config={}, server_bin="/x", benchmark_bin=None,
                 cli_bin=None, binary_sha256="0", version="8.0.6", commit="c",
                 frame_pointers=True, symbols=True, callgraph="fp")
    assert list(bv.to_json()) == [
        "name", "spec", "kind", "source", "patches", "make_flags", "config", "server_bin",
        "benchmark_bin", "cli_bin", "binary_sha256", "version", "commit", "frame_pointers",
        "deps_frame_pointers",
        "symbols", "callgraph"]


# ---------------------------------------------------------------- apt configuration

def test_private_sources_from_this_machine():
    system = read_sources(Path("/etc/apt"))
    assert system, "this machine has apt sources"
    codename = aptsource.system_codename()
    out = derive_entries(system, "forky", codename)
    assert out and all(e.types == ["deb-src"] and e.suites == ["forky"] for e in out)
    # URIs and keyring are the system's own, not invented
    sys_uris = {u for e in system for u in e.uris}
    assert {u for e in out for u in e.uris} <= sys_uris
    assert all(e.signed_by is None or Path(e.signed_by).exists() for e in out)


def test_private_sources_from_one_line_sources_list(tmp_path):
    etc = tmp_path / "etc_apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text(
        "# main archive\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://mirror.example/debian bookworm main contrib\n"
        "deb http://mirror.example/debian bookworm-updates main\n"
        "deb http://security.example/debian-security bookworm-security main\n")
    (etc / "sources.list.d" / "vendor.sources").write_text(
        "Types: deb\nURIs: https://vendor.example/apt\nSuites: nodistro\nComponents: main\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: bookworm\n"
        "Components: main\n")
    (etc / "sources.list.d" / "ignored.list.disabled").write_text("this is not parsed\n")
    osr = tmp_path / "os-release"
    osr.write_text('NAME="Debian GNU/Linux"\nVERSION_CODENAME=bookworm\n')
    env = AptEnv(tmp_path / "apt", suite="sid", etc_apt=etc, os_release=osr)
    env.write()
    lines = [ln for ln in env.sources_list.read_text().splitlines() if not ln.startswith("#")]
    assert lines == ["deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                     "http://mirror.example/debian sid main contrib"]
    conf = env.apt_conf.read_text()
    assert f'Dir::State::Lists "{tmp_path}/apt/lists/";' in conf
    assert f'Dir::Cache "{tmp_path}/apt/cache/";' in conf
    assert f'Dir::Etc::parts "{tmp_path}/apt/etc/apt.conf.d/";' in conf


def test_bad_sources_line_names_file_and_line(tmp_path):
    (tmp_path / "sources.list").write_text("deb http://a.example/debian bookworm main\nbogus line\n")
    with pytest.raises(AptSourceError, match=r"sources.list:2: cannot parse"):
        read_sources(tmp_path)


def test_no_debian_archive_is_a_clear_error(tmp_path):
    (tmp_path / "sources.list").write_text("deb https://vendor.example/apt nodistro main\n")
    with pytest.raises(AptSourceError, match="release codename 'bookworm'"):
        derive_entries(read_sources(tmp_path), "forky", "bookworm")


def _snapshot(root: Path) -> dict[str, float]:
    out = {str(root): root.stat().st_mtime}
    for p in root.rglob("*"):
        try:
            out[str(p)] = p.lstat().st_mtime
        except FileNotFoundError:
            pass
    return out


@pytest.mark.slow
def test_private_apt_update_and_versions_touch_nothing_outside(tmp_path):
    """Real apt-get update against the system's archive, into a private directory."""
    watched = [Path("/var/lib/apt/lists"), Path("/var/cache/apt")]
    before = {str(w): _snapshot(w) for w in watched if w.exists()}
    env = AptEnv(tmp_path / "apt", suite="forky")
    assert env.update(force=True) is True
    assert list((tmp_path / "apt" / "lists").glob("*forky*Sources*")), "lists are private"
    redis = env.resolve("redis", None)
    valkey = env.resolve("valkey", "9.1")
    assert aptsource.upstream_version(redis).startswith("8.")
    assert aptsource.upstream_version(valkey).startswith("9.1.")
    with pytest.raises(AptSourceError, match="not in suite forky"):
        env.resolve("redis", "7.0")
    assert env.update() is False            # fresh lists are reused without the network
    after = {str(w): _snapshot(w) for w in watched if w.exists()}
    assert after == before


def test_newest_version_follows_debian_ordering():
    """dpkg's ordering: a release candidate (~rc1) sorts below its release, an epoch above
    any version without one; a plain split on punctuation got both wrong."""
    from collectors.variants.aptsource import newest_version
    assert newest_version(["8.0.0~rc1-1", "8.0.0-1"]) == "8.0.0-1"
    assert newest_version(["8.0.0-1", "8.0.0~rc1-1"], "8.0") == "8.0.0-1"
    assert newest_version(["8.0.6-1", "5:8.0.2-3"]) == "5:8.0.2-3"
    assert newest_version(["5:8.0.6-3", "5:8.0.6-3+b1", "5:8.0.6-10"]) == "5:8.0.6-10"
    assert newest_version(["9.1.2-1", "9.0.3-1", "8.1.1+dfsg1-3"], "9.1") == "9.1.2-1"
    assert newest_version(["5:8.0.6-3"], "5:8.0.6-3") == "5:8.0.6-3"       # a Debian version
    assert newest_version(["9.0.3-1"], "8.0") is None


def test_upstream_version():
    assert aptsource.upstream_version("5:8.0.6-3") == "8.0.6"
    assert aptsource.upstream_version("8.1.1+dfsg1-3+deb13u2") == "8.1.1"
    assert aptsource.upstream_version("9.1.2-1") == "9.1.2"


# ---------------------------------------------------------------- binary checks

_PROBE_C = r"""
#include <stdio.h>
#include <string.h>
struct e { const char *k; struct e *next; };
__attribute__((noinline)) struct e *dictFind(struct e **t, unsigned n, const char *k) {
    for (struct e *he = t[strlen(k) % n]; he; he = he->next)
        if (strcmp(he->k, k) == 0) return he;
    return NULL;
}
int main(int argc, char **argv) {
    struct e a = {"a", NULL}; struct e *t[1] = {&a};
    return dictFind(t, 1, argc > 1 ? argv[1] : "a") ? 0 : 1;
}
"""


@pytest.mark.parametrize("flag,expect", [("-fno-omit-frame-pointer", True),
                                         ("-fomit-frame-pointer", False)])
def test_frame_pointer_detection_on_compiled_code(tmp_path, flag, expect):
    if not shutil.which("gcc"):
        pytest.fail("gcc not found: apt-get install build-essential (make setup does)")
    src = tmp_path / "probe.c"
    src.write_text(_PROBE_C)
    exe = tmp_path / "probe"
    subprocess.run(["gcc", "-O2", "-g", flag, "-o", str(exe), str(src)], check=True)
    assert has_symbols(str(exe)) is True
    assert has_frame_pointers(str(exe)) is expect
    subprocess.run(["strip", str(exe)], check=True)
    assert has_symbols(str(exe)) is False
    assert has_frame_pointers(str(exe)) is None      # nothing left to probe


def test_git_source_is_exported_at_the_ref_without_touching_the_tree(tmp_path):
    from collectors.variants.builder import BuildError, Progress, _fetch_source, _resolve_source
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("committed\n")
    subprocess.run(git + ["add", "README"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "one"], check=True)
    subprocess.run(git + ["tag", "v1"], check=True)
    (repo / "README").write_text("work in progress\n")   # uncommitted: must not be built
    say = Progress("g", lambda m: None)
    spec = parse_variant(f"g=git:{repo}@v1")
    ident = _resolve_source(spec, tmp_path / "cache", say)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert ident == {"kind": "git", "repo": str(repo.resolve()), "ref": "v1", "commit": head}
    _fetch_source(spec, ident, tmp_path / "cache", tmp_path / "out", say)
    assert (tmp_path / "out" / "README").read_text() == "committed\n"
    assert (repo / "README").read_text() == "work in progress\n"
    with pytest.raises(BuildError, match="git ref 'nope' not found"):
        _resolve_source(parse_variant(f"g=git:{repo}@nope"), tmp_path / "cache", say)
    with pytest.raises(BuildError, match="is not a git checkout"):
        _resolve_source(parse_variant(f"g=git:{tmp_path}@v1"), tmp_path / "cache", say)


def test_failed_make_keeps_its_log_and_says_where(tmp_path):
    from collectors.variants.builder import BuildError, Progress, _run_make
    build = tmp_path / "builds" / ".tmp-abc123-42"
    tree = build / "tree"
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text("all:\n\t@echo compiling dict.c\n\t@echo 'dict.c:1: error: boom' >&2; exit 3\n")
    lines: list[str] = []
    with pytest.raises(BuildError) as e:
        _run_make(tree, ["OPTIMIZATION=-O2"], build / "build.log", Progress("x", lines.append), tmp_path)
    msg = str(e.value)
    kept = tmp_path / "builds" / "failed-abc123.log"
    assert f"full log: {kept}" in msg and "dict.c:1: error: boom" in msg
    assert "compiling dict.c" in kept.read_text()
    assert lines[0].startswith("[x] building: make -j2 OPTIMIZATION=-O2")
