"""Profile windows: perf stays attached for the whole steady window but samples only in
every other short window (ABBA: off on on off ...), switched through its control FIFO
(`perf record -D -1 --control fifo:CTL,ACK`).

Each window's throughput is counted on the server itself (INFO stats
total_commands_processed), so one profile rep measures what the profiler costs: the
"on" windows against the "off" windows of the same server, same keyspace, seconds apart
(the same pairing that makes --paired precise). The "on" windows' command counts are
also the exact number of operations the profile covers (CPU time per operation).
"""
from __future__ import annotations

import os
import select
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from analysis.inputs.collector_facts import ProfileWindow, WindowPlan
from collectors.abba import schedule

HOST = "127.0.0.1"
MIN_WINDOW_S = 0.25
END_MARGIN_S = 0.3       # the last window ends this long before perf is stopped
MIN_WAIT_S = 0.05        # a window shorter than this is not started
INFO_PROBES = 3          # INFO round trips the plan takes the slowest of


class PerfControl:
    """The two FIFOs of `perf record --control fifo:CTL,ACK`: commands in, acks out."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="stallscope-perfctl-"))
        self.ctl, self.ack = self.dir / "ctl", self.dir / "ack"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)
        self._w = self._r = None

    def argv(self) -> list[str]:
        """perf record flags: start with events disabled, listen on the FIFOs."""
        return ["-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}"]

    def _open(self) -> None:
        if self._w is None:
            # O_RDWR: opening a FIFO this way never blocks (Linux), so a perf that died before
            # opening its end cannot hang us; the ack read below has a timeout instead.
            self._w = os.open(self.ctl, os.O_RDWR)
            self._r = os.open(self.ack, os.O_RDWR)

    def send(self, command: str, timeout_s: float = 10.0,
             perf: subprocess.Popen | None = None) -> None:
        """Send and wait for perf's ack; given the perf process, stop waiting once it exited."""
        self._open()
        os.write(self._w, (command + "\n").encode())
        end = time.monotonic() + timeout_s
        ready: list[int] = []
        while not ready and time.monotonic() < end and (perf is None or perf.poll() is None):
            ready, _, _ = select.select([self._r], [], [], min(0.05, max(0.0, end - time.monotonic())))
        # perf answers "ack\n" followed by a NUL byte.
        reply = os.read(self._r, 64).decode(errors="replace").replace("\0", "").strip() if ready else ""
        if reply != "ack":
            raise RuntimeError(f"perf --control: no ack for {command!r} within {timeout_s:g} s "
                               f"(got {reply!r}); see perf.stderr")

    def close(self) -> None:
        for fd in (self._w, self._r):
            if fd is not None:
                os.close(fd)
        self._w = self._r = None
        for p in (self.ctl, self.ack):
            p.unlink(missing_ok=True)
        self.dir.rmdir()


class Controls:
    """The control FIFOs of several perf processes (one per unwinding mode, plugin.py),
    switched together: each window enables or disables all of them."""

    def __init__(self, n: int) -> None:
        self.each = [PerfControl() for _ in range(n)]

    def send(self, command: str) -> None:
        for c in self.each:
            c.send(command)

    def close(self) -> None:
        for c in self.each:
            c.close()


@dataclass
class WindowRunner:
    """Runs the window schedule in a thread while the load generator runs."""
    port: int
    total_s: float
    windows: int = 8
    rows: list[ProfileWindow] = field(default_factory=list)
    error: str | None = None
    # What the plan saw: the windows asked for, the seconds perf had left (less after the
    # first rep's unwind probe), one INFO's round trip, the windows that fit (rep.json, so
    # a rep with fewer windows than asked says why: a short rep or a saturated server).
    plan_facts: WindowPlan = field(default_factory=WindowPlan)

    def __post_init__(self) -> None:
        # At most as many as fit at MIN_WINDOW_S; _run plans again once it knows how long an
        # INFO takes on this server, and shortens each wait by what windows spend around it.
        self.plan_facts = WindowPlan(asked=self.windows, left_s=round(self.total_s, 3))
        self.windows = max(2, min(self.windows, int(self.total_s / MIN_WINDOW_S)))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, control: Controls) -> None:
        self._thread = threading.Thread(target=self._run, args=(control,), daemon=True)
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self, control: Controls) -> None:
        client = redis.Redis(host=HOST, port=self.port, socket_timeout=10)
        try:
            # perf is stopped at total_s (PerfProfiler's timer): every window must end before
            # that, or the last switch finds no perf to answer. Each window waits its share of
            # the time left, less what windows have spent around their waits so far, on
            # average (INFO, the switch: a few ms on a quiet host, more on a busy one).
            deadline = time.monotonic() + self.total_s - END_MARGIN_S
            # A saturated server answers INFO only after the queued pipelines ahead of it
            # (a slow build: 100s of ms). Fewer, longer windows then, so the switching does
            # not eat the windows. An INFO waits a random part of what is queued and one can
            # land in a gap between batches, so the slowest of a few measures it.
            info_s = max(_round_trip(client) for _ in range(INFO_PROBES))
            self.windows = self.plan(deadline - time.monotonic(), info_s)
            self.plan_facts.info_ms, self.plan_facts.planned = round(info_s * 1000, 3), self.windows
            spent, extra = 0.0, []
            for i, on in enumerate(schedule(self.windows)):
                t0 = time.monotonic()
                wait = (deadline - t0) / (self.windows - i) - spent
                if self._stop.is_set() or wait < MIN_WAIT_S:
                    break       # a window that would outlive perf is not started
                # Counted from just before "enable" to just after "disable": the commands
                # of an "on" window are the ones the samples cover (CPU time per operation).
                a = _count(client)
                if on:
                    control.send("enable")
                self._stop.wait(wait)
                if on:
                    control.send("disable")
                b = _count(client)
                extra.append(time.monotonic() - t0 - wait)
                spent = sum(extra) / len(extra)
                secs = b[0] - a[0]
                cmds = b[1] - a[1] - 1          # minus our own INFO
                self.rows.append(ProfileWindow(i + 1, on, round(secs, 6), cmds,
                                               cmds / secs if secs > 0 else None))
            if not any(r.perf for r in self.rows) and not self._stop.is_set():
                self._sample_the_rest(control, max(spent, 3 * info_s))
        except Exception as e:          # recorded in rep.json; the profile itself still counts
            self.error = f"{type(e).__name__}: {e}"
        finally:
            client.close()

    def plan(self, left_s: float, info_s: float) -> int:
        """Windows that fit in left_s: each spends about three INFO round trips around its
        wait (two counts and the switch), should wait at least as long as that so that it
        measures the load more than the switching, and lasts at least MIN_WINDOW_S. At most
        the asked-for number, even (an on for every off), at least 2."""
        fit = int(left_s / max(MIN_WINDOW_S, 6 * info_s))
        return max(2, min(self.windows, fit - fit % 2))

    def _sample_the_rest(self, control: Controls, switch_s: float) -> None:
        """No "on" window fitted: without samples the rep would have no profile at all, so
        perf samples the rest of the rep whole. The windows' counts then do not match the
        samples: the error says so, and no cost is measured from this rep."""
        control.send("enable")
        self.error = (f"windows did not fit: switching took about {switch_s * 1000:.0f} ms per window "
                      "on this server (INFO waits behind the load's queued commands); perf "
                      "sampled the rest of the rep whole, so its cost was not measured")


def _round_trip(client: redis.Redis) -> float:
    t = time.monotonic()
    _count(client)
    return time.monotonic() - t


def _count(client: redis.Redis) -> tuple[float, int]:
    return time.monotonic(), int(client.info("stats")["total_commands_processed"])
