"""Paired mode for variants that are different builds: both servers loaded and warm at
once, the load alternating between them in short ABBA windows.

Restarting a server and reloading millions of keys for every rep costs most of the
precision of an A/B comparison on a noisy host (the demo's unpaired interval was ±20%).
Here each server gets its own load generator, started once; the one whose window it is
runs (SIGCONT), the other is stopped (SIGSTOP), so both servers see the same machine
minutes apart by seconds, not by a restart. A window's throughput is the delta of the
active server's own counters (INFO stats / commandstats), exactly as in the one-process
config mode (collectors/runner/paired.py): the same paired.json, analysed as pairs.

Both servers share the server CPUs (only one is busy at a time); the load generators
share the client CPUs. The idle server keeps its keyspace in memory, so this mode needs
room for two datasets (runner/new_manifest.py checks it before anything runs).
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from analysis.inputs.layout import PAIRED_JSON
from analysis.inputs.case import Case
from analysis.inputs.manifest import Calibration, Variant
from analysis.inputs.paired import PairedServer, PairedWindow, PairedWindows
from analysis.inputs.rundir import write_json
from collectors.host import procs
from collectors.host.cputime import CpuWatch, client_capacity, exec_runtime_s, merge_windows
from collectors.load.redis_benchmark import BenchProcess, redis_benchmark_argv, start_redis_benchmark
from collectors.load.server import Server
from collectors.runner.paired import counters, requests_for, switches, window_order
from collectors.runner.phases import PhaseClock

# After SIGCONT the clients resume with requests in flight and the server's caches hold the
# other server's lines: let that wash out before counting. Measured on the 2-core VM (MSET
# 50 keys, 10M keys): the first 0.1 s after SIGCONT runs at ~94% of the steady rate, then
# steady. Only a switch settles: the second window of an ABBA pair follows on directly.
SETTLE_S = 0.15


def _signal(bp: BenchProcess, sig: int) -> None:
    try:
        os.killpg(bp.proc.pid, sig)       # the group: redis-benchmark --threads has threads only
    except ProcessLookupError:
        raise RuntimeError(f"load generator {bp.argv[0]} is gone (status {bp.proc.poll()}); "
                           "calibration too low for the windows?") from None


def run_server_windows(servers: dict[str, Server], variants: dict[str, Variant], case: Case,
                       calibration: dict[str, Calibration | None], bench_bins: dict[str, str],
                       client_cpus: list[int] | None, rep_dir: Path, window_s: float = 2.0,
                       windows: int = 8, warmup_s: float = 2.0, clock: PhaseClock | None = None
                       ) -> dict[str, Any]:
    """Warm each server for warmup_s, then `windows` ABBA windows; writes paired.json.
    With `clock`, the warm-up and the windows are booked as phases of the rep."""
    names = list(servers)
    order = window_order(names, windows)
    w = case.workload
    command = str(w.command[0]) if w.command else ""
    total_s = warmup_s + windows * window_s + switches(order) * SETTLE_S + 10.0
    loads: dict[str, BenchProcess] = {}
    rows: list[PairedWindow] = []
    busy: dict[str, list] = {}       # variant -> Saturation of each of its windows
    capacity = client_capacity(w.threads, client_cpus)
    try:
        for n in names:     # start each, warm it up alone, then park it
            argv = redis_benchmark_argv(bench_bins[n], servers[n].port, w,
                                        requests_for(calibration.get(n), total_s), case.server.cluster)
            loads[n] = start_redis_benchmark(argv, client_cpus)
            time.sleep(max(0.5, warmup_s))
            _signal(loads[n], signal.SIGSTOP)
        if clock:
            clock.mark("warmup")
        _windows(servers, loads, variants, order, command, window_s, capacity, rows, busy)
        if order:
            _signal(loads[order[-1]], signal.SIGSTOP)
        if clock:
            clock.mark("windows")
    finally:
        for n, bp in loads.items():
            try:
                os.killpg(bp.proc.pid, signal.SIGCONT)   # a stopped group would hold SIGTERM
            except ProcessLookupError:
                pass
            procs.kill_group(bp.proc, 2.0)
            _, err = bp.proc.communicate()
            (rep_dir / f"bench-{n}.txt").write_bytes(err or b"")
    doc = PairedWindows(
        mode="servers", setting=[], values={n: dict(variants[n].config or {}) for n in names},
        servers={n: PairedServer(servers[n].port, servers[n].pid, variants[n].binary_sha256)
                 for n in names},
        window_s=window_s, settle_s=SETTLE_S, warmup_s=warmup_s, order=order, command=command,
        counter="INFO stats total_commands_processed; calls = INFO commandstats calls "
                "(each window: the active server's own counters)",
        windows=rows)
    write_json(rep_dir / PAIRED_JSON, doc.to_json())
    return {"order": order, "setting": [], "counter": doc.counter,
            "bench_commands": {n: bp.argv for n, bp in loads.items()},
            "saturation": {n: merge_windows(s) for n, s in busy.items()}}


def _windows(servers: dict[str, Server], loads: dict[str, BenchProcess], variants: dict[str, Variant],
             order: list[str], command: str, window_s: float, capacity: float,
             rows: list[PairedWindow], busy: dict[str, list]) -> None:
    """The ABBA windows: at a switch the other load generator is stopped and this one woken;
    each window counted by the active server itself, with its main thread's CPU time."""
    a: dict[str, Any] = {}
    for i, n in enumerate(order):
        if i == 0 or order[i - 1] != n:      # a switch of server: stop one, wake the other
            if i > 0:
                _signal(loads[order[i - 1]], signal.SIGSTOP)
            _signal(loads[n], signal.SIGCONT)
            time.sleep(SETTLE_S)
            a = counters(servers[n], command)
            a["cpu_s"] = exec_runtime_s(servers[n].pid)
        watch = CpuWatch(servers[n].pid, capacity, client_pid=loads[n].proc.pid).start()
        time.sleep(window_s)
        b = counters(servers[n], command)
        b["cpu_s"] = exec_runtime_s(servers[n].pid)
        busy.setdefault(n, []).append(watch.finish())
        rows.append(_window_row(i, n, variants[n], a, b))
        a = b       # the same server's next window starts where this one ended


def _window_row(i: int, name: str, variant: Variant, a: dict[str, Any], b: dict[str, Any]
                ) -> PairedWindow:
    secs = b["t"] - a["t"]
    cpu = (b["cpu_s"] - a["cpu_s"]) if a.get("cpu_s") is not None and b.get("cpu_s") is not None else None
    d_total = b["total_commands_processed"] - a["total_commands_processed"]
    d_calls = (b["calls"] - a["calls"]) if a["calls"] is not None and b["calls"] is not None else None
    return PairedWindow(i + 1, name, dict(variant.config or {}), round(a["epoch"], 3),
                        round(b["epoch"], 3), round(secs, 6), d_total, d_calls,
                        ops_per_s=d_total / secs if secs > 0 else None,
                        calls_per_s=d_calls / secs if d_calls is not None and secs > 0 else None,
                        # the main thread's CPU time in the window (schedstat, ns resolution)
                        server_cpu_s=round(cpu, 6) if cpu is not None else None)
