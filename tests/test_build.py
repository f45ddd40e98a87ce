"""Real builds of Debian-source Redis (plain and with the demo MSET prefetch patch).

The builds go to the user's build cache (STALLSCOPE_CACHE or ~/.cache/stallscope), so
they happen once per machine: later runs, and the demo, reuse them.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collectors.variants.binary import DEPS_FP_PROBE_FUNCTIONS, has_frame_pointers
from collectors.variants.builder import BuildError, apply_patch, build_variant, cache_dir
from collectors.variants.spec import parse_variant

REPO = Path(__file__).resolve().parents[1]
PATCH = "cases/patches/mset-bucket-prefetch.patch"


def _build(text: str, logs: list[str]):
    cwd = os.getcwd()
    os.chdir(REPO)  # patch paths in specs are relative to the repository
    try:
        return build_variant(parse_variant(text), cache_dir(), log=logs.append)
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def base():
    logs: list[str] = []
    return _build("base=debsrc:redis", logs), logs


@pytest.fixture(scope="module")
def cand():
    logs: list[str] = []
    return _build(f"cand=debsrc:redis+patch={PATCH}+config=save=", logs), logs


@pytest.mark.slow
def test_debsrc_redis_builds_with_symbols_and_frame_pointers(base):
    bv, logs = base
    for b in (bv.server_bin, bv.benchmark_bin, bv.cli_bin):
        assert Path(b).is_absolute() and os.access(b, os.X_OK), b
    assert bv.version.startswith("8.")
    out = subprocess.run([bv.server_bin, "--version"], capture_output=True, text=True).stdout
    assert f"v={bv.version}" in out
    assert bv.symbols is True and bv.frame_pointers is True and bv.callgraph == "fp"
    assert bv.kind == "debsrc" and "Debian source 5:8." in bv.source and "suite forky" in bv.source
    assert "OPTIMIZATION=-O2" in bv.make_flags
    assert "CFLAGS=-g -fno-omit-frame-pointer" in bv.make_flags
    # ... and the bundled jemalloc got them too (its samples keep their callers)
    assert bv.deps_frame_pointers is True
    m = bv.to_json()
    assert m["patches"] == [] and len(m["binary_sha256"]) == 64
    json.dumps(m)  # the manifest object is plain JSON


@pytest.mark.slow
def test_patched_build_records_patch_and_differs(base, cand):
    bv, _ = cand
    assert bv.patches[0]["file"] == PATCH
    assert len(bv.patches[0]["sha256"]) == 64
    assert bv.config == {"save": ""}
    assert bv.binary_sha256 != base[0].binary_sha256
    assert Path(bv.server_bin).parent != Path(base[0].server_bin).parent
    syms = subprocess.run(["nm", bv.server_bin], capture_output=True, text=True).stdout
    # msetPrefetchBatch is static and inlined into msetGenericCommand; the helpers are not
    assert " T dictPrefetchBucket\n" in syms and " T kvstoreDictPrefetchBucketEntry\n" in syms


@pytest.mark.slow
def test_second_build_is_a_cache_hit(base):
    logs: list[str] = []
    t0 = time.monotonic()
    again = _build("base=debsrc:redis", logs)
    assert time.monotonic() - t0 < 30          # seconds; no make
    assert any("cache hit" in ln for ln in logs), logs
    assert not any("building" in ln for ln in logs), logs
    assert again.server_bin == base[0].server_bin
    assert again.binary_sha256 == base[0].binary_sha256


# ------------------------------------------------------- the patched server, for real

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _resp(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for a in args:
        b = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class _Conn:
    def __init__(self, port: int):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buf = b""

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-"):
            return rest.decode() if t == b"+" else RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if t == b"*":
            return [self._read() for _ in range(int(rest))]
        raise ValueError(f"unexpected reply {line!r}")

    def cmd(self, *args: str):
        self.s.sendall(_resp(*args))
        return self._read()


@pytest.fixture
def patched_server(cand, tmp_path):
    bv, _ = cand
    port = _free_port()
    proc = subprocess.Popen([bv.server_bin, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(tmp_path),
                             "--logfile", str(tmp_path / "server.log")])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                c = _Conn(port)
                if c.cmd("PING") == "PONG":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"server did not start: {(tmp_path / 'server.log').read_text()}")
            time.sleep(0.1)
        yield c
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_patched_server_mset_mget_roundtrip(patched_server):
    c = patched_server
    # 40 MSETs of 250 keys grow the main dict through several rehashes while MSET runs,
    # including batches whose keys straddle the rehash; odd counts leave a partial batch.
    n_cmds, per = 40, 250
    for i in range(n_cmds):
        args = []
        for j in range(per):
            k = i * per + j
            args += [f"key:{k}", f"val-{k}-{'x' * (k % 37)}"]
        assert c.cmd("MSET", *args) == "OK"
    assert c.cmd("DBSIZE") == n_cmds * per
    for i in range(0, n_cmds * per, 1000):
        keys = [f"key:{k}" for k in range(i, i + 1000)]
        got = c.cmd("MGET", *keys)
        assert got == [f"val-{k}-{'x' * (k % 37)}" for k in range(i, i + 1000)]
    # overwrite existing keys and add new ones in one MSET (17 pairs: one full batch + 1)
    args = []
    for k in list(range(0, 9)) + list(range(10_000, 10_008)):
        args += [f"key:{k}", f"new-{k}"]
    assert c.cmd("MSET", *args) == "OK"
    assert c.cmd("MGET", "key:0", "key:8", "key:10000", "key:10007", "key:9") == \
        ["new-0", "new-8", "new-10000", "new-10007", "val-9-" + "x" * 9]
    assert c.cmd("DBSIZE") == n_cmds * per + 8
    # MSETNX keeps its all-or-nothing semantics
    assert c.cmd("MSETNX", "key:1", "nope", "fresh:1", "yes") == 0
    assert c.cmd("EXISTS", "fresh:1") == 0
    assert c.cmd("MSETNX", "fresh:1", "a", "fresh:2", "b") == 1
    assert c.cmd("MGET", "fresh:1", "fresh:2") == ["a", "b"]
    # MSET with an odd argument count is still an arity error
    assert isinstance(c.cmd("MSET", "a", "b", "c"), RuntimeError)


# ------------------------------------------------------- binaries and patches, failures

@pytest.mark.slow
def test_stripped_binary_variant_uses_dwarf(base, tmp_path):
    stripped = tmp_path / "redis-server"
    shutil.copy(base[0].server_bin, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    logs: list[str] = []
    bv = build_variant(parse_variant(f"s=bin:{stripped}+config=io-threads=2"), log=logs.append)
    assert bv.kind == "binary" and bv.symbols is False and bv.callgraph == "dwarf"
    assert bv.version == base[0].version
    assert bv.config == {"io-threads": "2"}
    assert any("no symbol table" in ln for ln in logs)


@pytest.mark.slow
def test_unstripped_binary_variant_finds_its_tools(base):
    bv = build_variant(parse_variant(f"b=bin:{base[0].server_bin}"), log=lambda m: None)
    assert bv.callgraph == "fp" and bv.symbols and bv.frame_pointers
    assert bv.benchmark_bin == base[0].benchmark_bin and bv.cli_bin == base[0].cli_bin
    assert bv.binary_sha256 == base[0].binary_sha256


@pytest.mark.slow
def test_patch_that_does_not_apply_names_patch_and_file(base, tmp_path):
    tree = tmp_path / "src-tree"
    (tree / "src").mkdir(parents=True)
    real = Path(base[0].server_bin).parent
    for f in ("dict.c", "dict.h", "kvstore.c", "kvstore.h", "t_string.c"):
        shutil.copy(real / f, tree / "src" / f)
    t = tree / "src" / "t_string.c"
    t.write_text(t.read_text().replace("void msetGenericCommand(client *c, int nx) {",
                                       "void msetGenericCommand(client *c, int notx) {"))
    before = (tree / "src" / "dict.c").read_text()
    with pytest.raises(BuildError) as e:
        apply_patch(REPO / PATCH, tree, PATCH)
    msg = str(e.value)
    assert PATCH in msg and "t_string.c" in msg and "FAILED" in msg
    # the dry run failed first, so no file was half patched
    assert (tree / "src" / "dict.c").read_text() == before


def test_cli_bad_spec_exits_2_without_traceback():
    p = subprocess.run([sys.executable, "-m", "collectors", "build", "x=debsrc:nginx"],
                       cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 2
    assert "not supported" in p.stderr and "Traceback" not in p.stderr


def test_cli_missing_binary_exits_2_with_clear_message(tmp_path):
    """A bin: path that is not there is bad input (2), in `build` as in `run` (the error's
    own status, docs/errors.md); before, `build` said 1 and `run` said 2."""
    p = subprocess.run([sys.executable, "-m", "collectors", "build",
                        f"x=bin:{tmp_path}/nope/redis-server"],
                       cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 2
    assert f"{tmp_path}/nope/redis-server does not exist" in p.stderr
    assert "Traceback" not in p.stderr


def test_cli_help_has_grammar_and_examples():
    p = subprocess.run([sys.executable, "-m", "collectors", "build", "--help"], cwd=REPO,
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0
    assert "debsrc:PACKAGE[/SUITE][@VERSION]" in p.stdout and "Examples:" in p.stdout


@pytest.mark.slow
def test_cli_prints_manifest_json_from_cache(base):
    p = subprocess.run([sys.executable, "-m", "collectors", "build", "base=debsrc:redis"],
                       cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["server_bin"] == base[0].server_bin and d["callgraph"] == "fp"
    assert "cache hit" in p.stderr


@pytest.mark.slow
def test_deps_frame_pointer_probe_tells_a_jemalloc_built_without_them(base, tmp_path):
    """The probe can fail: the same jemalloc objects built the old way (no CFLAGS reaching
    deps/: jemalloc's own -O3 omits the frame pointer) are reported as such."""
    bv, _ = base
    assert has_frame_pointers(bv.server_bin, DEPS_FP_PROBE_FUNCTIONS) is True
    src = tmp_path / "je.c"
    # One allocator-shaped function, compiled as jemalloc's configure does without our flags.
    src.write_text("#include <stddef.h>\nextern size_t g(void *);\n"
                   "size_t je_malloc_usable_size(void *p) { return p ? g(p) * 2 + 1 : 0; }\n")
    obj = tmp_path / "je.o"
    subprocess.run(["gcc", "-O3", "-funroll-loops", "-c", str(src), "-o", str(obj)], check=True)
    assert has_frame_pointers(str(obj), DEPS_FP_PROBE_FUNCTIONS) is False
    subprocess.run(["gcc", "-O3", "-fno-omit-frame-pointer", "-c", str(src), "-o", str(obj)], check=True)
    assert has_frame_pointers(str(obj), DEPS_FP_PROBE_FUNCTIONS) is True

