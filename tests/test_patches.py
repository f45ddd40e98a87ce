"""The experiment patches and the known stalls (cases/patches/, README there): each applies to
its Debian source, builds (the build cache is shared with the experiment tests; one build per
patch for the whole module), and the built server, started on 127.0.0.1, passes a smoke
check of the command or path the patch changes."""
from __future__ import annotations

import re
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.conftest_run import built
from tests.test_build import _Conn, _free_port

pytestmark = pytest.mark.slow

HGETALL = "debsrc:redis@8.0+patch=cases/patches/hgetall-batch-prefetch.patch"
RDBLOAD = "debsrc:valkey@9.1+patch=cases/patches/rdb-load-bucket-prefetch.patch"
UNEMBED = "debsrc:valkey@9.1+patch=cases/patches/zskiplist-header-unembed.patch"
STALL = "debsrc:redis@8.0+patch=cases/patches/known-stall-mset.patch"
STALL_CTL = "debsrc:redis@8.0+patch=cases/patches/known-stall-control-mset.patch"
STALL_FN = "stallscopeKnownStall"
WAIT = "debsrc:redis@8.0+patch=cases/patches/known-wait-glibc-mset.patch"


@contextmanager
def server(binary: str, d: Path, *args: str):
    port = _free_port()
    log = d / f"server-{port}.log"
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--appendonly", "no",
                             "--dir", str(d), "--logfile", str(log), *args])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = _Conn(port)
                if c.cmd("PING") == "PONG":
                    break
            except (OSError, RuntimeError):
                pass        # not listening yet, or -LOADING while the RDB loads
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"server did not start: {log.read_text() if log.exists() else ''}")
            time.sleep(0.1)
        yield c, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("spec, patch", [(HGETALL, "hgetall-batch-prefetch.patch"),
                                         (RDBLOAD, "rdb-load-bucket-prefetch.patch"),
                                         (UNEMBED, "zskiplist-header-unembed.patch"),
                                         (STALL, "known-stall-mset.patch"),
                                         (STALL_CTL, "known-stall-control-mset.patch"),
                                         (WAIT, "known-wait-glibc-mset.patch")])
def test_patch_applies_and_builds(spec, patch):
    v = built("p", spec)
    base = built("b", spec.split("+", 1)[0])
    assert [Path(p["file"]).name for p in v.patches] == [patch]
    assert v.binary_sha256 != base.binary_sha256 and v.version == base.version
    # the version the patch was written for (README), as the experiment files pin it
    want = spec.split("@", 1)[1].split("+", 1)[0]
    assert v.version.startswith(want + "."), (v.version, want)
    assert patch in (REPO / "cases" / "patches" / "README.md").read_text()


def test_hgetall_batched_reply_is_the_same_reply(tmp_path):
    v = built("p", HGETALL)
    with server(v.server_bin, tmp_path, "--save", "", "--hash-max-listpack-entries", "8") as (c, _):
        # sizes around the batch of 16: a partial batch, exactly one, one plus one, several
        for n in (1, 15, 16, 17, 33, 1000):
            key = f"h{n}"
            args = []
            for i in range(n):
                args += [f"field-{i}", f"value-{i}-" + "v" * (i % 50)]
            assert c.cmd("HSET", key, *args) == n
            want = {f"field-{i}": f"value-{i}-" + "v" * (i % 50) for i in range(n)}
            if n > 8:
                assert c.cmd("OBJECT", "ENCODING", key) == "hashtable"
            flat = c.cmd("HGETALL", key)
            assert len(flat) == 2 * n and dict(zip(flat[::2], flat[1::2])) == want
            assert sorted(c.cmd("HKEYS", key)) == sorted(want)
            assert sorted(c.cmd("HVALS", key)) == sorted(want.values())
            # the batched walk keeps the iterator's order
            assert c.cmd("HKEYS", key) == flat[::2]
        # fields whose TTL passed are skipped, as the unpatched loop does (Redis 8 field TTLs)
        assert c.cmd("HPEXPIRE", "h33", "1", "FIELDS", "3", "field-0", "field-16", "field-32") == [1, 1, 1]
        time.sleep(0.05)
        flat = c.cmd("HGETALL", "h33")
        assert len(flat) == 60 and not {"field-0", "field-16", "field-32"} & set(flat[::2])
        assert c.cmd("HGETALL", "missing") == []


def test_rdb_load_with_bucket_prefetch_restores_every_key(tmp_path):
    v = built("p", RDBLOAD)
    n = 60_000
    with server(v.server_bin, tmp_path, "--save", "", "--dbfilename", "dump.rdb") as (c, _):
        for i in range(0, n, 1000):
            args = []
            for k in range(i, i + 1000):
                args += [f"key:{k}", f"v{k}" * (1 + k % 5)]
            assert c.cmd("MSET", *args) == "OK"
        assert c.cmd("HSET", "hash", "a", "1", "b", "2") == 2
        assert c.cmd("SAVE") == "OK"
    # a fresh server loads the dump through the patched loop (the keyspace grows through
    # several rehashes while keys arrive, so the prefetch sees both tables)
    with server(v.server_bin, tmp_path, "--save", "", "--dbfilename", "dump.rdb") as (c, log):
        assert c.cmd("DBSIZE") == n + 1
        keys = [f"key:{k}" for k in range(0, n, 997)]
        assert c.cmd("MGET", *keys) == [f"v{k}" * (1 + k % 5) for k in range(0, n, 997)]
        assert c.cmd("HGETALL", "hash") == ["a", "1", "b", "2"]
        assert "DB loaded from disk" in log.read_text()


def test_unembedded_skiplist_header_serves_sorted_sets(tmp_path):
    v = built("p", UNEMBED)
    with server(v.server_bin, tmp_path, "--save", "") as (c, _):
        args = []
        for i in range(129):
            args += [str(i * 1.5), f"m{i}"]
        assert c.cmd("ZADD", "z", *args) == 129
        assert c.cmd("OBJECT", "ENCODING", "z") == "skiplist"
        assert c.cmd("ZRANGE", "z", "0", "0") == ["m0"]
        assert c.cmd("ZRANGE", "z", "0", "-1") == [f"m{i}" for i in range(129)]
        assert c.cmd("ZREVRANGE", "z", "0", "1") == ["m128", "m127"]
        assert c.cmd("ZRANK", "z", "m64") == 64 and c.cmd("ZCARD", "z") == 129
        assert c.cmd("ZREM", "z", "m0", "m128") == 2
        assert c.cmd("ZRANGE", "z", "0", "0") == ["m1"] and c.cmd("ZCARD", "z") == 127
        assert c.cmd("ZRANGEBYSCORE", "z", "3", "4.5") == ["m2", "m3"]
        assert c.cmd("MEMORY", "USAGE", "z") > 129 * 16
        assert c.cmd("ZPOPMAX", "z") == ["m127", "190.5"]
        assert c.cmd("DEL", "z") == 1 and c.cmd("EXISTS", "z") == 0   # zslFree frees the header


def test_known_wait_calls_the_c_library_straight_from_msetGenericCommand():
    """The known wait through glibc has no function of its own: msetGenericCommand (or the
    part GCC split off it) calls clock_gettime through the PLT itself, so frame-pointer
    stacks from inside glibc skip msetGenericCommand (docs/statistics.md, "Skipped callers")."""
    v = built("kw", WAIT)
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", v.server_bin], capture_output=True,
                          text=True, check=True, timeout=300).stdout
    calls, fn = {}, None
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if head:
            fn = head[1]
        elif fn and "call" in line and "<clock_gettime@plt>" in line:
            calls[fn] = calls.get(fn, 0) + 1
    assert set(calls) & {"msetGenericCommand", "msetGenericCommand.part.0"}, calls
    assert not [f for f in calls if "stallscope" in f.lower()]


@pytest.mark.parametrize("spec", [STALL, STALL_CTL], ids=["stall", "control"])
def test_known_stall_is_a_function_of_its_own_with_one_fenced_read(spec):
    """stallscopeKnownStall is a symbol of the binary (not inlined into msetGenericCommand),
    keeps a frame (it calls its hash: no leaf, so frame-pointer stacks name its caller) and
    holds the one table read between its two lfences."""
    v = built("p", spec)
    syms = subprocess.run(["nm", v.server_bin], capture_output=True, text=True, check=True).stdout
    assert re.search(rf" [tT] {STALL_FN}\n", syms), "stallscopeKnownStall is no symbol of the binary"
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={STALL_FN}",
                          v.server_bin], capture_output=True, text=True, check=True).stdout
    body = dis[dis.index(f"<{STALL_FN}>:"):].split("\n\n", 1)[0]
    insns = [ln.split("\t", 1)[1].strip() for ln in body.splitlines()[1:] if "\t" in ln]
    assert insns[:2] == ["push   %rbp", "mov    %rsp,%rbp"], insns
    assert any(i.startswith("call") and "<stallscopeKeyHash>" in i for i in insns), insns
    fences = [k for k, i in enumerate(insns) if i == "lfence"]
    assert len(fences) == 2, insns
    between = insns[fences[0] + 1:fences[1]]
    assert sum(1 for i in between if re.match(r"mov\s+\(%r\w+\),%r\w+$", i)) == 1, between


@pytest.mark.parametrize("spec", [STALL, STALL_CTL], ids=["stall", "control"])
def test_known_stall_server_keeps_mset_and_msetnx(spec, tmp_path):
    v = built("p", spec)
    with server(v.server_bin, tmp_path, "--save", "") as (c, _):
        # 80 MSETs of 250 pairs: the stall's table grows with the keyspace (4096 lines, then
        # 8192 ... 32768) while MSETs run; odd value lengths
        n_cmds, per = 80, 250
        for i in range(n_cmds):
            args = []
            for j in range(per):
                k = i * per + j
                args += [f"key:{k}", f"val-{k}-{'x' * (k % 37)}"]
            assert c.cmd("MSET", *args) == "OK"
        assert c.cmd("DBSIZE") == n_cmds * per
        for i in range(0, n_cmds * per, 1000):
            keys = [f"key:{k}" for k in range(i, i + 1000)]
            assert c.cmd("MGET", *keys) == [f"val-{k}-{'x' * (k % 37)}" for k in range(i, i + 1000)]
        # overwrites and new keys in one MSET, a key that reads as an integer among them
        assert c.cmd("MSET", "key:0", "new-0", "key:19999", "new-19999", "12345", "int", "fresh:0", "f") == "OK"
        assert c.cmd("MGET", "key:0", "key:19999", "12345", "fresh:0", "key:1") == \
            ["new-0", "new-19999", "int", "f", "val-1-x"]
        assert c.cmd("DBSIZE") == n_cmds * per + 2
        # MSETNX keeps its all-or-nothing semantics
        assert c.cmd("MSETNX", "key:1", "nope", "fresh:1", "yes") == 0
        assert c.cmd("EXISTS", "fresh:1") == 0 and c.cmd("GET", "key:1") == "val-1-x"
        assert c.cmd("MSETNX", "fresh:1", "a", "fresh:2", "b") == 1
        assert c.cmd("MGET", "fresh:1", "fresh:2") == ["a", "b"]
        assert isinstance(c.cmd("MSET", "a", "b", "c"), RuntimeError)     # still an arity error
        # the keys survive a restart through the RDB, the table is rebuilt by the next MSET
        assert c.cmd("SAVE") == "OK"
    with server(v.server_bin, tmp_path, "--save", "") as (c, _):
        assert c.cmd("DBSIZE") == n_cmds * per + 4
        assert c.cmd("MSET", "key:5", "after") == "OK" and c.cmd("MGET", "key:5", "key:6") == ["after", "val-6-xxxxxx"]


def _memory(c) -> tuple[int, int]:
    """(used_memory: what Redis' allocator holds, VmRSS of the server process) in bytes."""
    info = dict(ln.split(":", 1) for ln in c.cmd("INFO", "all").splitlines() if ":" in ln)
    pid = int(info["process_id"])
    rss = next(int(ln.split()[1]) * 1024 for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
               if ln.startswith("VmRSS:"))
    return int(info["used_memory"]), rss


def test_known_stall_table_follows_the_keyspace_outside_the_allocator(tmp_path):
    """The stall's table is a power of two of 64-byte lines, at least the key count, backed by
    real pages (written to zero: read-only untouched pages would all be the one zero page,
    in cache); the control's stays 4096 lines. Neither is in Redis' own used_memory."""
    n = 100_000                      # -> 131072 lines, 8 MiB; the control's 256 KiB
    mem = {}
    for name, spec in (("stall", STALL), ("control", STALL_CTL)):
        v = built("p", spec)
        d = tmp_path / name
        d.mkdir()
        with server(v.server_bin, d, "--save", "") as (c, _):
            for i in range(0, n, 1000):
                args = []
                for k in range(i, i + 1000):
                    args += [f"key:{k}", "v" * 10]
                assert c.cmd("MSET", *args) == "OK"
            assert c.cmd("MSET", "key:0", "w") == "OK"     # sized at the full keyspace
            assert c.cmd("DBSIZE") == n
            mem[name] = _memory(c)
    table = 131072 * 64
    (used_s, rss_s), (used_c, rss_c) = mem["stall"], mem["control"]
    assert abs(used_s - used_c) <= 0.01 * used_c, mem
    assert 0.9 * table <= rss_s - rss_c <= 1.5 * table, mem
