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


def thread_times(pid: int, proc: Path = Path("/proc")) -> dict[int, tuple[str, float]]:
    """tid -> (comm, utime + stime in seconds) for every thread of `pid` (gone: {})."""
    out: dict[int, tuple[str, float]] = {}
    for task in (proc / str(pid) / "task").glob("[0-9]*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue            # the thread ended between listing and reading
        # "tid (comm) state ...": comm may hold spaces and parentheses; cut at the last ')'.
        comm = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(task.name)] = (comm, (int(fields[11]) + int(fields[12])) * TICK_S)
    return out


def children_cpu_s() -> float:
    """CPU seconds of every child this process has reaped so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass
class CpuWatch:
    """Snapshot at the start of the load, `finish()` right after the load generator was
    reaped: the server's threads over that wall time, and the load generator's CPU (the
    children reaped in between: only the load generator is reaped inside the window)."""
    server_pid: int
    client_capacity: float
    t0: float = 0.0
    server0: dict[int, tuple[str, float]] | None = None
    children0: float = 0.0

    def start(self) -> "CpuWatch":
        self.t0 = time.monotonic()
        self.server0 = thread_times(self.server_pid)
        self.children0 = children_cpu_s()
        return self

    def finish(self) -> Saturation:
        wall = max(time.monotonic() - self.t0, 1e-6)
        now = thread_times(self.server_pid)
        threads = []
        for tid, (comm, cpu) in sorted(now.items()):
            before = (self.server0 or {}).get(tid, (comm, 0.0))[1]
            used = max(0.0, cpu - before)
            threads.append(ThreadUse(tid, comm, round(used, 3), round(used / wall, 4)))
        client = children_cpu_s() - self.children0
        return Saturation(window_s=round(wall, 3), main_tid=self.server_pid, server_threads=threads,
                          client_cpu_s=round(client, 3), client_busy=round(client / wall, 4),
                          client_capacity=self.client_capacity)


def client_capacity(load_threads: int, client_cpus: list[int] | None) -> float:
    """CPUs the load generator can keep busy: its threads, capped by the CPUs it may use."""
    cpus = len(client_cpus) if client_cpus else (os.cpu_count() or 1)
    return float(max(1, min(load_threads, cpus)))
