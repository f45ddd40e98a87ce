"""collectors/server.py and collectors/procs.py with a real Redis built from Debian source."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import redis

from collectors.host import procs
from collectors.load.server import Server, ServerError, ServerOptions, free_port
from tests.conftest_run import base_variant

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def variant():
    return base_variant()


def _opts(variant, tmp_path, name="s", **kw) -> ServerOptions:
    return ServerOptions(server_bin=variant.server_bin, workdir=tmp_path / f"{name}-dir",
                         logfile=tmp_path / f"{name}.log", **kw)


def _snapshot_of(variant, tmp_path, name, keys, key_fmt, value):
    """A server of `keys` string keys, SAVEd to tmp_path/cache/<name>.rdb."""
    src = Server(_opts(variant, tmp_path, name)).start()
    try:
        p = src.client.pipeline(transaction=False)
        for i in range(keys):
            p.set(key_fmt.format(i), value)
        p.execute()
        return src.snapshot(tmp_path / "cache" / f"{name}.rdb")
    finally:
        src.stop()


def test_start_configures_and_stops_cleanly(variant, tmp_path):
    cpus = [0] if len(os.sched_getaffinity(0)) >= 2 else None
    srv = Server(_opts(variant, tmp_path, config={"hz": "15"}, cpus=cpus)).start()
    try:
        c = srv.client
        assert c.ping() is True
        assert c.config_get("bind")["bind"] == "127.0.0.1"
        assert c.config_get("protected-mode")["protected-mode"] == "yes"
        assert c.config_get("save")["save"] == ""
        assert c.config_get("appendonly")["appendonly"] == "no"
        assert c.config_get("hz")["hz"] == "15"
        assert c.config_get("dir")["dir"] == str((tmp_path / "s-dir").resolve())
        if cpus:
            assert os.sched_getaffinity(srv.pid) == {0}
        assert srv.timing.seconds_to_ready > 0
        assert "Ready to accept connections" in (tmp_path / "s.log").read_text()
        assert srv.proc in procs.live()
        pid = srv.pid
    finally:
        how = srv.stop()
    assert how == "shutdown"
    assert srv.proc.returncode == 0
    assert not os.path.exists(f"/proc/{pid}")
    assert srv.proc not in procs.live()


def test_snapshot_restore_measures_rdb_load(variant, tmp_path):
    rdb = _snapshot_of(variant, tmp_path, "a", 5000, "key:{:012d}", "x" * 10)
    assert rdb.stat().st_size > 5000 * 10
    srv = Server(_opts(variant, tmp_path, "b", rdb=rdb)).start()
    try:
        assert srv.client.dbsize() == 5000
        assert srv.client.get("key:000000004999") == b"x" * 10
        assert srv.timing.keys_loaded == 5000
        assert srv.timing.log_load_seconds is not None and srv.timing.log_load_seconds >= 0
        assert srv.timing.seconds_to_ready >= srv.timing.log_load_seconds
        assert "redis_version:" in srv.info_all()
        assert (tmp_path / "b-dir" / "dump.rdb").is_symlink()
    finally:
        srv.stop()
    # persistence off: the snapshot is read, never written through the link
    assert rdb.stat().st_size > 5000 * 10


def test_cluster_mode_assigns_all_slots_even_after_restore(variant, tmp_path):
    src = Server(_opts(variant, tmp_path, "c1", cluster=True)).start()
    try:
        info = src.client.execute_command("CLUSTER", "INFO").decode()
        assert "cluster_state:ok" in info and "cluster_slots_assigned:16384" in info
        src.client.set("{a}k", "1")
        src.client.set("{b}k", "2")
        rdb = src.snapshot(tmp_path / "c.rdb")
    finally:
        src.stop()
    srv = Server(_opts(variant, tmp_path, "c2", cluster=True, rdb=rdb)).start()
    try:
        info = srv.client.execute_command("CLUSTER", "INFO").decode()
        assert "cluster_slots_assigned:16384" in info and "cluster_state:ok" in info
        assert srv.client.dbsize() == 2
    finally:
        srv.stop()


def test_io_threads_from_the_case(variant, tmp_path):
    srv = Server(_opts(variant, tmp_path, "io", io_threads=2)).start()
    try:
        assert srv.client.config_get("io-threads")["io-threads"] == "2"
    finally:
        srv.stop()


def test_bad_binary_and_busy_port_say_what_is_wrong(variant, tmp_path):
    with pytest.raises(procs.ToolNotFound, match=r"/nonexistent/redis-server is missing or not executable"):
        Server(ServerOptions("/nonexistent/redis-server", tmp_path / "d", tmp_path / "l.log")).start()
    first = Server(_opts(variant, tmp_path, "p1")).start()
    try:
        with pytest.raises(ServerError, match=r"(?s)exited with status 1 during start .*Address already in use"):
            Server(_opts(variant, tmp_path, "p2", port=first.port)).start(timeout_s=20)
    finally:
        first.stop()
    with pytest.raises(ServerError, match=r"(?s)exited with status 1 during start.*no-such-option"):
        Server(_opts(variant, tmp_path, "bad", config={"no-such-option": "1"})).start(timeout_s=20)


def test_a_start_that_fails_after_spawn_leaves_no_server_running(variant, tmp_path, monkeypatch):
    # Server.start() raising means the caller has nothing to stop(): start() must reap.
    def boom(self):
        raise RuntimeError("slot assignment failed")
    monkeypatch.setattr(Server, "_assign_all_slots", boom)
    srv = Server(_opts(variant, tmp_path, "half", cluster=True))
    with pytest.raises(RuntimeError, match="slot assignment failed"):
        srv.start()
    assert srv.proc is not None and srv.proc.poll() is not None
    assert srv.proc not in procs.live()


def test_kill_group_escalates_to_sigkill(tmp_path):
    # A process that ignores SIGTERM, with a child in its group: both must go.
    p = procs.spawn(["bash", "-c", "trap '' TERM; sleep 300 & wait"])
    time.sleep(0.3)
    kids = subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True, text=True).stdout.split()
    assert len(kids) >= 2
    t0 = time.monotonic()
    rc = procs.kill_group(p, timeout_s=1.0)
    assert rc == -signal.SIGKILL
    assert time.monotonic() - t0 < 5
    # SIGKILL is asynchronous and an orphaned child is reaped by init when init gets to it:
    # poll briefly, and count zombies (already dead, only not yet reaped) as gone.
    deadline = time.monotonic() + 5
    while True:
        left = [pid for pid in subprocess.run(["pgrep", "-g", str(p.pid)], capture_output=True,
                                              text=True).stdout.split() if not _zombie(pid)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == []


def _zombie(pid: str) -> bool:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_children_die_with_their_parent(tmp_path):
    """PR_SET_PDEATHSIG: a server started by a Python that is SIGKILLed dies too."""
    port = free_port()
    code = ("import sys, time; sys.path.insert(0, %r)\n"
            "from collectors.host import procs\n"
            "procs.spawn([%r, '--port', '%d', '--bind', '127.0.0.1', '--save', ''])\n"
            "print('up', flush=True); time.sleep(300)\n") % (os.getcwd(), base_variant().server_bin, port)
    py = subprocess.Popen(["python3", "-c", code], stdout=subprocess.PIPE, cwd=os.getcwd())
    assert py.stdout.readline().strip() == b"up"
    c = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 20
    while True:
        try:
            c.ping()
            break
        except redis.ConnectionError:
            assert time.monotonic() < deadline, "server never came up"
            time.sleep(0.05)
    py.kill()
    py.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            c.ping()
        except redis.ConnectionError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("server outlived its SIGKILLed parent")


def test_settle_waits_for_the_keyspace_rehash(variant, tmp_path):
    """A dict mid-rehash is what a restored RDB leaves behind; settle() must end it and
    put hz back. Growing a dict past its table size starts a rehash for real."""
    srv = Server(_opts(variant, tmp_path, "settle")).start()
    try:
        c = srv.client
        c.config_set("hz", 1)          # slow cron: the rehash would take long on its own
        c.config_set("activerehashing", "no")
        # 70,000 keys: the table grows 65,536 -> 131,072 at the 65,537th key.
        c.eval("for i=1,70000 do redis.call('SET','k'..i,'v') end", 0)
        field = "mem_overhead_db_hashtable_rehashing"
        assert int(c.info("memory")[field]) > 0, "the dict should be mid-rehash"
        c.config_set("activerehashing", "yes")
        res = srv.settle(timeout_s=60)
        assert res.rehashing_s > 0 and res.hz_during_settle == 500
        assert int(c.info("memory")[field]) == 0
        assert c.config_get("hz")["hz"] == "1"
        assert srv.settle().to_json() == {"rehashing_s": 0.0}
    finally:
        srv.stop()


def test_snapshot_waits_for_a_background_save_the_server_started(variant, tmp_path):
    # rdb-load runs with persistence on: the server's save rules can start a BGSAVE during
    # a long preload, and a plain SAVE then fails ("Background save already in progress").
    src = Server(_opts(variant, tmp_path, "p", persistence=True)).start()
    try:
        c = src.client
        p = c.pipeline(transaction=False)
        for i in range(2000):
            p.set(f"key:{i:06d}", "v")
        p.execute()
        c.config_set("rdb-key-save-delay", 500)     # 2000 keys x 0.5 ms: a 1 s BGSAVE
        c.bgsave()
        c.config_set("rdb-key-save-delay", 0)       # the forked child keeps its delay
        assert c.info("persistence")["rdb_bgsave_in_progress"] == 1
        c.set("key:late", "after the BGSAVE started")
        rdb = src.snapshot(tmp_path / "cache" / "p.rdb")
    finally:
        src.stop()
    srv = Server(_opts(variant, tmp_path, "q", rdb=rdb)).start()
    try:
        assert srv.client.dbsize() == 2001
        assert srv.client.get("key:late") == b"after the BGSAVE started"
    finally:
        srv.stop()


def test_launch_then_wait_ready_loads_side_by_side_and_pinning_moves_every_thread(variant, tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    rdb = _snapshot_of(variant, tmp_path, "src", 20000, "key:{:06d}", "v" * 100)
    a = Server(_opts(variant, tmp_path, "la", rdb=rdb, cpus=[0, 1], io_threads=2))
    b = Server(_opts(variant, tmp_path, "lb", rdb=rdb, cpus=[0, 1]))
    try:
        a.launch()
        b.launch()                  # both spawned before either is waited for
        assert a.proc.poll() is None and b.proc.poll() is None
        a.wait_ready()
        b.wait_ready()
        assert a.client.dbsize() == b.client.dbsize() == 20000
        assert a.timing.keys_loaded == 20000
        tids = os.listdir(f"/proc/{a.pid}/task")
        assert len(tids) > 1                                   # bio, jemalloc, io threads
        assert all(os.sched_getaffinity(int(t)) == {0, 1} for t in tids)
        procs.pin_threads(a.pid, [0])
        assert all(os.sched_getaffinity(int(t)) == {0} for t in os.listdir(f"/proc/{a.pid}/task"))
        assert a.client.get("key:019999") == b"v" * 100
    finally:
        a.stop()
        b.stop()
