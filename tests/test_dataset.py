"""Datasets against a real redis-server on 127.0.0.1: preload the `small` size of real
cases, verify (DBSIZE, encodings), then FLUSHALL and watch verify fail; and a real
redis-benchmark run of a case's own command must hit the preloaded keys.

The server binary: $STALLSCOPE_TEST_REDIS_SERVER (redis-benchmark beside it), else the
session's Debian-source Redis (tests/conftest_run.py: built when the cache has none)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis

from collectors.host.machine import cache_sizes
from collectors.workload.working_set import Llc
from collectors.workload.cases import load_case
from collectors.workload.dataset import (DatasetError, keyspace_bytes_estimate,
                                         l3_warning, preload, verify)
from tests.conftest_run import base_variant


@pytest.fixture(scope="module")
def redis_bins() -> SimpleNamespace:
    env = os.environ.get("STALLSCOPE_TEST_REDIS_SERVER")
    if env:
        server = Path(env)
        if not os.access(server, os.X_OK):
            pytest.fail(f"STALLSCOPE_TEST_REDIS_SERVER={env} is not an executable file")
        bench = server.with_name(server.name.replace("server", "benchmark"))
        cli = server.with_name(server.name.replace("server", "cli"))
        return SimpleNamespace(server_bin=str(server), benchmark_bin=str(bench), cli_bin=str(cli))
    # Built here when the build cache has none (the first time: minutes), never skipped.
    built = base_variant()
    return SimpleNamespace(server_bin=built.server_bin, benchmark_bin=built.benchmark_bin,
                           cli_bin=built.cli_bin)


def _free_port() -> int:
    # Below 55536: cluster mode needs port + 10000 for its bus.
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 55536:
            return port
    return 20000 + os.getpid() % 30000


class RealServer:
    def __init__(self, bins: SimpleNamespace, workdir: Path, config: dict[str, str], cluster: bool = False):
        self.port = _free_port()
        args = [bins.server_bin, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(workdir), "--logfile", str(workdir / "server.log")]
        if cluster:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", str(workdir / "nodes.conf")]
        for k, v in config.items():
            args += [f"--{k}", v]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=60)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (workdir / "server.log").read_text() if (workdir / "server.log").exists() else ""
                    self.stop()
                    pytest.fail(f"redis-server did not start: {self.proc.stderr.read().decode()} {log[-500:]}")
                time.sleep(0.05)
        if cluster:
            self.client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def server_for(redis_bins, tmp_path):
    started: list[RealServer] = []

    def start(case, cluster: bool = False) -> RealServer:
        d = tmp_path / f"srv{len(started)}"
        d.mkdir()
        srv = RealServer(redis_bins, d, case.server.config, cluster=cluster)
        started.append(srv)
        return srv

    yield start
    for s in started:
        s.stop()


def _info_stats(client) -> dict:
    return client.info("stats")


@pytest.mark.heavy
def test_mset_small_preload_verify_flush_and_benchmark_hits(server_for, redis_bins, tmp_path):
    case = load_case("mset-50keys", "tiny")
    srv = server_for(case)
    out = tmp_path / "dataset"
    res = preload(case, srv.client, redis_bins, out)
    assert res.keys == 200_000 and res.dbsize == 200_000
    assert res.first_key == "key:000000000000" and res.last_key == "key:000000199999"
    raw = (out / "preload.txt").read_text()
    assert "EVALSHA" in raw and "DBSIZE 200000" in raw
    v = verify(case, srv.client, seed=1)
    assert v.dbsize == 200_000 and v.expected_encoding == "embstr"
    assert v.encodings_seen == {"embstr": len(v.samples)}
    assert {"key": "key:000000199999", "exists": True, "encoding": "embstr", "bytes": 10} in \
        [x.to_json() for x in v.samples]
    json.dumps(v.to_json())  # the runner saves it as dataset/verify.json

    # The real load generator, with the case's own read command over the same keyspace,
    # must hit preloaded keys: redis-benchmark pads __rand_int__ to 12 digits.
    before = _info_stats(srv.client)
    subprocess.run([redis_bins.benchmark_bin, "-h", "127.0.0.1", "-p", str(srv.port), "-c", "4", "-n", "2000",
                    "-r", str(case.workload.keyspace), "MGET", "key:__rand_int__", "key:__rand_int__"],
                   check=True, capture_output=True, timeout=60)
    after = _info_stats(srv.client)
    assert after["keyspace_hits"] - before["keyspace_hits"] >= 4000
    assert after["keyspace_misses"] - before["keyspace_misses"] == 0

    srv.client.flushall()
    with pytest.raises(DatasetError) as e:
        verify(case, srv.client)
    msg = str(e.value)
    assert "expected 200000 keys, found 0" in msg and "key:000000000000" in msg and "were not preloaded" in msg


def test_hgetall_small_is_hashtable_encoded(server_for, redis_bins, tmp_path):
    case = load_case("hgetall@fields=200", "tiny")
    srv = server_for(case)
    res = preload(case, srv.client, redis_bins, tmp_path)
    assert res.keys == 2000
    v = verify(case, srv.client)
    assert v.encodings_seen == {"hashtable": len(v.samples)}
    assert all(s.fields == 200 for s in v.samples)
    assert srv.client.hget("hash:000000001999", "field:199") == b"x" * 100
    # The same hashes under the server's default listpack limit (128 entries) would be
    # listpack-encoded only below 128 fields, and the case's config is what makes 200 fields
    # hashtable regardless; a case promising listpack here must fail verify.
    wrong = load_case("hgetall@fields=200", "tiny")
    wrong.dataset.expect_encoding = "listpack"
    with pytest.raises(DatasetError, match="is hashtable-encoded, the case promises listpack"):
        verify(wrong, srv.client)


def test_zrange_small_is_skiplist_and_benchmark_hits(server_for, redis_bins, tmp_path):
    case = load_case("zrange-129members", "tiny")
    srv = server_for(case)
    preload(case, srv.client, redis_bins, tmp_path)
    v = verify(case, srv.client)
    assert v.encodings_seen == {"skiplist": len(v.samples)} and v.dbsize == 2000
    assert srv.client.zcard("zset:000000000000") == 129
    before = _info_stats(srv.client)
    subprocess.run([redis_bins.benchmark_bin, "-h", "127.0.0.1", "-p", str(srv.port), "-c", "2", "-n", "500",
                    "-r", str(case.workload.keyspace), *case.workload.command],
                   check=True, capture_output=True, timeout=60)
    after = _info_stats(srv.client)
    assert after["keyspace_hits"] - before["keyspace_hits"] >= 500
    assert after["keyspace_misses"] == before["keyspace_misses"]


@pytest.mark.heavy
def test_cluster_mode_preload_uses_single_key_writes(server_for, redis_bins, tmp_path):
    # MSET across hash slots is refused in cluster mode; the loader must still fill it.
    case = load_case("rdb-load@cluster=on", "tiny")
    case.dataset.keys = 5000
    srv = server_for(case, cluster=True)
    res = preload(case, srv.client, redis_bins, tmp_path)
    assert res.dbsize == 5000
    assert verify(case, srv.client).expected_encoding == "raw"


def test_keyspace_estimates_against_l3():
    small, default = load_case("mset-50keys", "tiny"), load_case("mset-50keys", llc=Llc(32 * 2**20))
    assert 10e6 < keyspace_bytes_estimate(small) < 30e6      # 200K keys x ~90 B
    assert 0.6e9 < keyspace_bytes_estimate(default) < 1.5e9  # 10M keys: far past L3
    warn = l3_warning(small, l3=32 * 2**20)
    assert warn and "not larger than this host's L3 (32 MiB)" in warn
    assert l3_warning(default, l3=32 * 2**20) is None


def test_l3_size_from_sysfs(tmp_path):
    """l3_warning's default L3 is the host facts' (collectors.host.machine.cache_sizes)."""
    cache = tmp_path / "cpu0" / "cache"
    for i, (level, typ, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                            (2, "Unified", "2048K"), (3, "Unified", "32768K")]):
        d = cache / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{typ}\n")
        (d / "size").write_text(f"{size}\n")
    assert cache_sizes(tmp_path / "cpu0")["l3_bytes"] == 32 * 2**20
    assert cache_sizes(tmp_path / "missing")["l3_bytes"] is None
    small = load_case("mset-50keys", "tiny")
    assert l3_warning(small) == l3_warning(small, l3=cache_sizes()["l3_bytes"])


def test_the_byte_estimate_is_close_to_what_the_server_uses(server_for, tmp_path):
    """The estimate the multiples rest on, against a real server's used_memory after the
    preload (jemalloc's own figure), within the +-30% the estimate promises."""
    case = load_case("mset-50keys", "tiny")
    srv = server_for(case)
    before = srv.client.info("memory")["used_memory"]
    preload(case, srv.client, None, tmp_path)
    used = srv.client.info("memory")["used_memory"] - before
    assert 0.7 < keyspace_bytes_estimate(case) / used < 1.3, (keyspace_bytes_estimate(case), used)
