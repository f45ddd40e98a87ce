"""The experiment patches (cases/patches/, README there): each applies to its Debian source,
builds (the build cache is shared with the experiment tests), and the built server, started
on 127.0.0.1, passes a smoke check of the command or path the patch changes."""
from __future__ import annotations

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
                                         (UNEMBED, "zskiplist-header-unembed.patch")])
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
