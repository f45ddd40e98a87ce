"""Who was busy during a rep: CPU time of every server thread (/proc/<pid>/task/*/stat)
and of the load generator (the rusage of reaped children), over the measured window.

The answer to "could a change in the server show here at all?": a server main thread
that was busy 60% of the window while the load generator used its CPU to the full was
waiting for the client, and its throughput says nothing about the server.
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from analysis.inputs.repfacts import Saturation, ThreadUse

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def thread_times(pid: int, proc: Path = Path("/proc")) -> dict[int, tuple[str, float, float]]:
    """tid -> (comm, utime + stime, run-queue wait) in seconds for every thread of `pid`
    (gone: {}). The wait is schedstat's run_delay: runnable, but another task had the CPU."""
    out: dict[int, tuple[str, float, float]] = {}
    for task in (proc / str(pid) / "task").glob("[0-9]*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue            # the thread ended between listing and reading
        # "tid (comm) state ...": comm may hold spaces and parentheses; cut at the last ')'.
        comm = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(task.name)] = (comm, (int(fields[11]) + int(fields[12])) * TICK_S,
                               _run_delay_s(task))
    return out


def _run_delay_s(task: Path) -> float:
    """Second field of /proc/PID/task/TID/schedstat (ns); 0 without schedstats."""
    try:
        return int((task / "schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def exec_runtime_s(pid: int, tid: int | None = None, proc: Path = Path("/proc")) -> float | None:
    """CPU time a thread has run, in seconds with ns resolution: the first field of
    /proc/PID/task/TID/schedstat (the main thread when tid is None). Unlike stat's
    utime + stime (10 ms ticks, too coarse for a 0.25 s window) it is exact, and with
    paravirtual steal accounting it leaves out the time the hypervisor gave to other
    guests. None when the thread is gone."""
    try:
        return int((proc / str(pid) / "task" / str(tid or pid) / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def host_ticks(proc: Path = Path("/proc")) -> tuple[int, int, int]:
    """(busy, steal, total) jiffies of all CPUs from /proc/stat's "cpu" line. Idle and
    iowait are not busy; steal is time the hypervisor gave to other guests."""
    try:
        first = (proc / "stat").read_text().split("\n", 1)[0].split()
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    except (OSError, ValueError):
        return (0, 0, 0)
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return (user + nice + system + irq + softirq, steal, total)


def children_cpu_s() -> float:
    """CPU seconds of every child this process has reaped so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass
class CpuWatch:
    """Snapshot at the start of the load, `finish()` right after the load generator was
    reaped: the server's threads over that wall time, and the load generator's CPU (the
    children reaped in between: only the load generator is reaped inside the window).
    With `client_pid`, the load generator keeps running after the window (paired servers):
    its CPU is then read from its threads' /proc times instead."""
    server_pid: int
    client_capacity: float
    client_pid: int | None = None
    t0: float = 0.0
    server0: dict[int, tuple[str, float, float]] | None = None
    children0: float = 0.0
    host0: tuple[int, int, int] = (0, 0, 0)

    def start(self) -> "CpuWatch":
        self.t0 = time.monotonic()
        self.server0 = thread_times(self.server_pid)
        self.children0 = self._client_cpu_s()
        self.host0 = host_ticks()
        return self

    def finish(self) -> Saturation:
        wall = max(time.monotonic() - self.t0, 1e-6)
        now = thread_times(self.server_pid)
        threads = []
        for tid, (comm, cpu, delay) in sorted(now.items()):
            _, cpu0, delay0 = (self.server0 or {}).get(tid, (comm, 0.0, 0.0))
            used = max(0.0, cpu - cpu0)
            waited = max(0.0, delay - delay0)
            threads.append(ThreadUse(tid, comm, round(used, 3), round(used / wall, 4),
                                     round(waited / wall, 4)))
        client = max(0.0, self._client_cpu_s() - self.children0)
        busy, steal, total = (b - a for a, b in zip(self.host0, host_ticks()))
        return Saturation(window_s=round(wall, 3), main_tid=self.server_pid, server_threads=threads,
                          client_cpu_s=round(client, 3), client_busy=round(client / wall, 4),
                          client_capacity=self.client_capacity,
                          host_busy=round(busy / total, 4) if total > 0 else None,
                          host_steal=round(steal / total, 4) if total > 0 else None)


    def _client_cpu_s(self) -> float:
        if self.client_pid is None:
            return children_cpu_s()
        return sum(cpu for _, cpu, _ in thread_times(self.client_pid).values())


def merge_windows(sats: list[Saturation]) -> Saturation | None:
    """One Saturation over several windows of the same server: CPU seconds summed per
    thread, shares weighted by each window's length."""
    if not sats:
        return None
    wall = sum(s.window_s for s in sats) or 1e-6
    threads: dict[int, ThreadUse] = {}
    for s in sats:
        for t in s.server_threads:
            acc = threads.setdefault(t.tid, ThreadUse(t.tid, t.name, 0.0, 0.0, 0.0))
            acc.cpu_s += t.cpu_s
            acc.waiting = (acc.waiting or 0.0) + (t.waiting or 0.0) * s.window_s
    out = []
    for t in sorted(threads.values(), key=lambda t: t.tid):
        out.append(ThreadUse(t.tid, t.name, round(t.cpu_s, 3), round(t.cpu_s / wall, 4),
                             round((t.waiting or 0.0) / wall, 4)))
    client = sum(s.client_cpu_s or 0.0 for s in sats)

    def weighted(attr: str) -> float | None:
        vals = [(getattr(s, attr), s.window_s) for s in sats if getattr(s, attr) is not None]
        return round(sum(v * w for v, w in vals) / sum(w for _, w in vals), 4) if vals else None
    return Saturation(window_s=round(wall, 3), main_tid=sats[0].main_tid, server_threads=out,
                      client_cpu_s=round(client, 3), client_busy=round(client / wall, 4),
                      client_capacity=sats[0].client_capacity,
                      host_busy=weighted("host_busy"), host_steal=weighted("host_steal"))


def client_capacity(load_threads: int, client_cpus: list[int] | None) -> float:
    """CPUs the load generator can keep busy: its threads, capped by the CPUs it may use."""
    cpus = len(client_cpus) if client_cpus else (os.cpu_count() or 1)
    return float(max(1, min(load_threads, cpus)))
