"""Where the server and the load generator run: separate CPUs when the host has enough."""
from __future__ import annotations

import os

from analysis.inputs.manifest import Placement


def placement(io_threads: int = 1, cpus: list[int] | None = None) -> Placement:
    """Server on the first CPUs, load generator (and perf) on the rest, when there are 2+."""
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if len(cpus) < 2:
        return Placement(None, None, f"only {len(cpus)} CPU available: server and client not pinned")
    if io_threads > 1 and len(cpus) < io_threads + 1:
        # Squeezing main + io threads onto fewer CPUs than threads is pathological: idle
        # io-threads busy-poll, and once they kick in (Valkey 9, GET, io-threads 2 on one
        # CPU) throughput fell from ~50k to ~5k ops/s with 24 ms p50 on this project's CI
        # host. Sharing every CPU is contended too, but measures the server, not the pinning.
        return Placement(None, None,
                         f"io-threads {io_threads} need {io_threads} server CPUs plus 1 for the load "
                         f"generator; this host has {len(cpus)}: nothing pinned, so server threads and "
                         "load generator share all CPUs (io-threads results here are contended)")
    k = max(1, min(io_threads, len(cpus) - 1))
    return Placement(cpus[:k], cpus[k:],
                     f"server pinned to CPU {cpus[:k]}, load generator and profiler to {cpus[k:]} "
                     "(sched_setaffinity)")
