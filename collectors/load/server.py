"""One Redis/Valkey server process: start on 127.0.0.1, wait until it serves, stop cleanly.

The server always binds 127.0.0.1 with protected mode on, persistence off unless asked,
its log in the rep directory and its --dir in a scratch directory of the run. An RDB to
restore is linked in as dump.rdb, so restoring a multi-GB dataset costs no copy.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from analysis.errors import Failed
from analysis.inputs.repfacts import Settle
from collectors.host import procs
from collectors.load.settle import SettleTimeout, settle_together

HOST = "127.0.0.1"


class ServerError(Failed):
    """The server did not start or misbehaved; the message includes the log tail."""


@dataclass
class ServerOptions:
    server_bin: str
    workdir: Path                      # --dir: scratch, removed by the caller
    logfile: Path                      # server.log of the rep
    config: dict[str, str] = field(default_factory=dict)   # case config, then variant overrides
    io_threads: int = 1
    cluster: bool = False
    persistence: bool = False
    cpus: list[int] | None = None
    rdb: Path | None = None            # restore this snapshot at start
    port: int | None = None            # None: pick a free one
    env: dict[str, str] | None = None


@dataclass
class LoadTiming:
    """How long the server took to become ready (the RDB load when one was restored)."""
    seconds_to_ready: float            # process start -> PING ok and loading:0 (s)
    log_load_seconds: float | None     # "DB loaded from disk: X seconds" from the log (s)
    keys_loaded: int | None            # INFO persistence rdb_last_load_keys_loaded (keys)
    keys_expired: int | None

    def to_json(self) -> dict[str, Any]:
        return {"seconds_to_ready_s": round(self.seconds_to_ready, 6),
                "log_load_seconds_s": self.log_load_seconds,
                "keys_loaded": self.keys_loaded, "keys_expired": self.keys_expired}


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
            return True
        except OSError:
            return False


def free_port(cluster: bool = False) -> int:
    """A port free on 127.0.0.1 right now (the server start retries if it is taken).
    Cluster mode also needs port+10000 (the cluster bus), so port <= 55535."""
    if not cluster:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            return s.getsockname()[1]
    import random
    for _ in range(200):
        port = random.randint(20000, 55535)
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise ServerError("no free port pair (PORT, PORT+10000) on 127.0.0.1 for a cluster node")


def _log_tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + ln for ln in lines[-n:])


class Server:
    def __init__(self, opts: ServerOptions):
        self.opts = opts
        self.proc: subprocess.Popen | None = None
        self.port: int = 0
        self.argv: list[str] = []
        self.timing: LoadTiming | None = None
        self._client: redis.Redis | None = None

    # ---- lifecycle -------------------------------------------------------------------
    def build_argv(self, port: int) -> list[str]:
        o = self.opts
        argv = [o.server_bin, "--port", str(port), "--bind", HOST, "--protected-mode", "yes",
                "--dir", str(Path(o.workdir).resolve()), "--logfile", str(Path(o.logfile).resolve()),
                "--daemonize", "no", "--dbfilename", "dump.rdb"]
        if not o.persistence:
            argv += ["--save", "", "--appendonly", "no"]
        if o.io_threads > 1:
            argv += ["--io-threads", str(o.io_threads)]
        if o.cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
        for k, v in o.config.items():
            argv += [f"--{k}", str(v)]
        return argv

    def start(self, timeout_s: float = 300.0) -> "Server":
        self._prepare()
        for attempt in range(3):
            self._spawn()
            try:
                self._wait_ready(self._t0, timeout_s)
                break
            except BaseException as e:
                # Whatever went wrong, the caller gets no Server to stop(): reap it here.
                self._reap()
                if isinstance(e, ServerError) and "Address already in use" in str(e) \
                        and self.opts.port is None and attempt < 2:
                    continue
                raise
        return self._after_ready()

    def launch(self) -> "Server":
        """Spawn the server and return at once: two servers loading their datasets side by
        side (collectors/runner/reps.py, paired servers), then wait_ready() on each."""
        self._prepare()
        self._spawn()
        return self

    def wait_ready(self, timeout_s: float = 300.0) -> "Server":
        """After launch(): wait until it serves; a port taken meanwhile falls back to start()."""
        try:
            self._wait_ready(self._t0, timeout_s)
        except BaseException as e:
            self._reap()
            if isinstance(e, ServerError) and "Address already in use" in str(e) \
                    and self.opts.port is None:
                return self.start(timeout_s)
            raise
        return self._after_ready()

    def _prepare(self) -> None:
        o = self.opts
        if not os.access(o.server_bin, os.X_OK):
            raise procs.ToolNotFound(f"server binary {o.server_bin} is missing or not executable; "
                                     "build the variant first (stallscope build ...)")
        Path(o.workdir).mkdir(parents=True, exist_ok=True)
        Path(o.logfile).parent.mkdir(parents=True, exist_ok=True)
        dump = Path(o.workdir) / "dump.rdb"
        if dump.is_symlink() or dump.exists():
            dump.unlink()
        if o.rdb is not None:
            if not Path(o.rdb).is_file():
                raise ServerError(f"dataset snapshot {o.rdb} is missing")
            # Read-only use: persistence is off, so the server never writes through the link.
            dump.symlink_to(Path(o.rdb).resolve())

    def _spawn(self) -> None:
        o = self.opts
        self.port = o.port or free_port(o.cluster)
        self.argv = self.build_argv(self.port)
        self._t0 = time.monotonic()
        # stderr to a file, not a pipe: a chatty server must never block on a full pipe.
        with open(Path(o.workdir) / "stderr.txt", "wb") as err:
            self.proc = procs.spawn(self.argv, cpus=o.cpus, env=o.env,
                                    stdout=subprocess.DEVNULL, stderr=err)

    def _after_ready(self) -> "Server":
        if self.opts.cluster:
            try:
                self._assign_all_slots()
            except BaseException:
                self._reap()
                raise
        return self

    def _reap(self) -> None:
        if self.proc is not None:
            procs.kill_group(self.proc, 2.0)

    def _wait_ready(self, t0: float, timeout_s: float) -> None:
        c = redis.Redis(host=HOST, port=self.port, socket_timeout=5, socket_connect_timeout=1)
        try:
            self._poll_ready(c, t0, timeout_s)
        finally:
            c.close()  # its 5 s timeout suits polling, not SAVE or a big preload: see .client

    def _poll_ready(self, c: redis.Redis, t0: float, timeout_s: float) -> None:
        deadline = t0 + timeout_s
        while True:
            if self.proc.poll() is not None:
                err = _safe_read(Path(self.opts.workdir) / "stderr.txt")
                raise ServerError(
                    f"{self.opts.server_bin} exited with status {self.proc.returncode} during start "
                    f"(port {self.port}); log {self.opts.logfile}:\n{_log_tail(self.opts.logfile)}\n{err}")
            try:
                # process_id: a PING answered by another server on a reused port is not ours.
                if int(c.info("server").get("process_id", -1)) == self.proc.pid and \
                        int(c.info("persistence").get("loading", 1)) == 0:
                    break
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                pass
            except redis.ResponseError as e:
                if "LOADING" not in str(e):
                    raise
            if time.monotonic() > deadline:
                raise ServerError(f"server on port {self.port} not ready after {timeout_s:.0f} s; "
                                  f"log {self.opts.logfile}:\n{_log_tail(self.opts.logfile)}")
            time.sleep(0.005)
        ready = time.monotonic() - t0
        pers = c.info("persistence")
        log_s = None
        m = re.findall(r"DB loaded from disk: ([0-9.]+) seconds", _safe_read(self.opts.logfile))
        if m:
            log_s = float(m[-1])
        self.timing = LoadTiming(ready, log_s,
                                 _int_or_none(pers.get("rdb_last_load_keys_loaded")),
                                 _int_or_none(pers.get("rdb_last_load_keys_expired")))

    def _assign_all_slots(self) -> None:
        c = self.client
        # A restored RDB makes the node claim the slots of its keys: add only the rest.
        owned = [False] * 16384
        for rng in c.execute_command("CLUSTER", "SLOTS") or []:
            for s in range(int(rng[0]), int(rng[1]) + 1):
                owned[s] = True
        start = None
        ranges = []
        for s in range(16385):
            free = s < 16384 and not owned[s]
            if free and start is None:
                start = s
            elif not free and start is not None:
                ranges.append((start, s - 1))
                start = None
        for a, b in ranges:
            try:
                c.execute_command("CLUSTER", "ADDSLOTSRANGE", a, b)
            except redis.ResponseError as e:
                if "unknown subcommand" not in str(e).lower():
                    raise
                c.execute_command("CLUSTER", "ADDSLOTS", *range(a, b + 1))
        deadline = time.monotonic() + 30
        while c.info("cluster").get("cluster_enabled") and \
                c.execute_command("CLUSTER", "INFO").decode().find("cluster_state:ok") < 0:
            if time.monotonic() > deadline:
                raise ServerError(f"cluster on port {self.port} never reached cluster_state:ok")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def client(self) -> redis.Redis:
        if self._client is None:
            self._client = redis.Redis(host=HOST, port=self.port, socket_timeout=30)
        return self._client

    def info_all(self) -> str:
        """INFO all as the server printed it (raw text, for info.txt)."""
        # A bare connection: redis-py's INFO response callback would parse it into a dict.
        conn = redis.Connection(host=HOST, port=self.port, socket_timeout=30)
        try:
            conn.send_command("INFO", "all")
            raw = conn.read_response()
        finally:
            conn.disconnect()
        return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)

    def snapshot(self, dest: Path) -> Path:
        """SAVE and copy the RDB to dest atomically (for the dataset cache)."""
        # SAVE of 10M+ keys takes tens of seconds: no read timeout short enough to hit it.
        c = redis.Redis(host=HOST, port=self.port, socket_timeout=3600)
        try:
            # With persistence on (the rdb-load case), the server's own save rules may have
            # started a BGSAVE during a long preload; SAVE then fails with "Background save
            # already in progress". Wait for that child, then save what we loaded.
            deadline = time.monotonic() + 3600
            while True:
                self._wait_bgsave(c, deadline)
                try:
                    c.execute_command("SAVE")
                    break
                except redis.ResponseError as e:
                    if "in progress" not in str(e) or time.monotonic() > deadline:
                        raise
        finally:
            c.close()
        src = Path(self.opts.workdir) / "dump.rdb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
        src.unlink()  # the next start would otherwise load it
        return dest

    @staticmethod
    def _wait_bgsave(c: redis.Redis, deadline: float) -> None:
        while int(c.info("persistence").get("rdb_bgsave_in_progress", 0)):
            if time.monotonic() > deadline:
                raise ServerError("a background save of the server did not finish within an hour")
            time.sleep(0.2)

    def settle(self, timeout_s: float = 300.0) -> Settle:
        """Wait until the keyspace dicts finish rehashing, and say how long that took.

        A restored RDB leaves a big main dict mid-rehash (Redis 8.0 with 10M keys: an 8M
        table migrating into a 16M one). The server only advances the rehash in small
        steps (on lookups, and ~1 ms per cron tick), so a benchmark started right away
        measures rehashing (rehashEntriesInBucketAtIndex at ~10% of samples) and a
        dictionary in a state no production server sits in for long. Raising hz to its
        maximum makes the cron's active rehash ~50x faster; hz goes back afterwards.
        Servers that do not report mem_overhead_db_hashtable_rehashing (before Redis 7.4)
        are not waited for, and the result says so.
        """
        try:
            return settle_together({"": self.port}, HOST, timeout_s)[""]
        except SettleTimeout as e:
            raise ServerError(str(e)) from None

    def stop(self, timeout_s: float = 10.0) -> str:
        """SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL. Returns how it ended."""
        if self.proc is None:
            return "not started"
        how = "shutdown"
        if self.proc.poll() is None:
            try:
                self.client.execute_command("SHUTDOWN", "NOSAVE")
            except (redis.ConnectionError, redis.TimeoutError):
                pass  # the expected outcome: the server closes the connection
            except redis.ResponseError:
                how = "sigterm"
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                how = "sigterm"
        if self.proc.poll() is None:
            procs.kill_group(self.proc, timeout_s)
            how = "sigkill" if self.proc.returncode == -9 else how
        else:
            procs.kill_group(self.proc, 1.0)  # reap the group and untrack
        if self._client is not None:
            self._client.close()
            self._client = None
        return how


def _safe_read(p: Path) -> str:
    try:
        return Path(p).read_text(errors="replace")
    except OSError:
        return ""


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None

