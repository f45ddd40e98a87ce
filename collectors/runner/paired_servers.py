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
from analysis.inputs.option_specs import PAIRED_WINDOW_S, PAIRED_WINDOWS
from analysis.inputs.case import Case
from analysis.inputs.manifest import Calibration, Variant
from analysis.inputs.paired import PairedServer, PairedWindow, PairedWindows
from analysis.inputs.rundir import write_json
from collectors.host import procs
from collectors.host.cputime import CpuWatch, client_capacity, exec_runtime_s, merge_windows
from collectors.load.redis_benchmark import BenchProcess, redis_benchmark_argv, start_redis_benchmark
from collectors.load.server import Server
from collectors.abba import block_schedule
from collectors.collector import WindowProfiler
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
                       client_cpus: list[int] | None, rep_dir: Path,
                       window_s: float = PAIRED_WINDOW_S, windows: int = PAIRED_WINDOWS,
                       warmup_s: float = 2.0, clock: PhaseClock | None = None,
                       profiler: WindowProfiler | None = None, perf_share: float = 0.5) -> dict[str, Any]:
    """Warm each server for warmup_s, then `windows` ABBA windows; writes paired.json.
    With `clock`, the warm-up and the windows are booked as phases of the rep; with
    `profiler` (a run plugin's WindowProfiler: perf in the paired windows), both servers are
    sampled in `perf_share` of the ABBA blocks of windows (collectors/abba.py) and each
    variant's profile folded after."""
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
            t = time.monotonic()
            if profiler is not None:     # the unwinding probe needs a server under its load
                profiler.probe(n, servers[n].pid)
            time.sleep(max(0.0, max(0.5, warmup_s) - (time.monotonic() - t)))
            _signal(loads[n], signal.SIGSTOP)
        if clock:
            clock.mark("warmup")
        if profiler is not None:
            profiler.start({n: servers[n].pid for n in names})
        _windows(servers, loads, variants, order, command, window_s, capacity, rows, busy,
                 block_schedule(len(order), perf_share) if profiler is not None else None, profiler)
        if order:
            _signal(loads[order[-1]], signal.SIGSTOP)
        if clock:
            clock.mark("windows")
    finally:
        if profiler is not None:
            profiler.stop()
        for n, bp in loads.items():
            try:
                os.killpg(bp.proc.pid, signal.SIGCONT)   # a stopped group would hold SIGTERM
            except ProcessLookupError:
                pass
            procs.kill_group(bp.proc, 2.0)
            _, err = bp.proc.communicate()
            (rep_dir / f"bench-{n}.txt").write_bytes(err or b"")
    doc = _document(servers, variants, window_s, warmup_s, order, command, rows)
    write_json(rep_dir / PAIRED_JSON, doc.to_json())
    perf = profiler.fold(rows) if profiler is not None else {}
    if clock and profiler is not None:
        clock.mark("fold")
    return {"order": order, "setting": [], "counter": doc.counter,
            "bench_commands": {n: bp.argv for n, bp in loads.items()},
            "saturation": {n: merge_windows(s) for n, s in busy.items()}, "perf": perf}


def _document(servers: dict[str, Server], variants: dict[str, Variant], window_s: float,
              warmup_s: float, order: list[str], command: str, rows: list[PairedWindow]
              ) -> PairedWindows:
    """paired.json of a rep of two servers."""
    return PairedWindows(
        mode="servers", setting=[], values={n: dict(variants[n].config or {}) for n in servers},
        servers={n: PairedServer(servers[n].port, servers[n].pid, variants[n].binary_sha256)
                 for n in servers},
        window_s=window_s, settle_s=SETTLE_S, warmup_s=warmup_s, order=order, command=command,
        counter="INFO stats total_commands_processed; calls = INFO commandstats calls "
                "(each window: the active server's own counters)",
        windows=rows)


def _windows(servers: dict[str, Server], loads: dict[str, BenchProcess], variants: dict[str, Variant],
             order: list[str], command: str, window_s: float, capacity: float,
             rows: list[PairedWindow], busy: dict[str, list], perf_on: list[bool] | None = None,
             profiler: WindowProfiler | None = None) -> None:
    """The ABBA windows: at a switch the other load generator is stopped and this one woken;
    each window counted by the active server itself, with its main thread's CPU time. With
    `perf_on`, perf is switched before a block's first count, so an "on" window's samples
    and its operations cover the same span."""
    a: dict[str, Any] = {}
    for i, n in enumerate(order):
        on = perf_on[i] if perf_on else None
        toggle = profiler is not None and (i == 0 or on != perf_on[i - 1])
        if i == 0 or order[i - 1] != n:      # a switch of server: stop one, wake the other
            if i > 0:
                _signal(loads[order[i - 1]], signal.SIGSTOP)
            if toggle:
                profiler.set(bool(on))
            _signal(loads[n], signal.SIGCONT)
            time.sleep(SETTLE_S)
            a = _count(servers[n], command)
        elif toggle:                         # a new block on the same server: count afresh
            profiler.set(bool(on))
            a = _count(servers[n], command)
        watch = CpuWatch(servers[n].pid, capacity, client_pid=loads[n].proc.pid).start()
        time.sleep(window_s)
        b = _count(servers[n], command)
        busy.setdefault(n, []).append(watch.finish())
        rows.append(_window_row(i, n, variants[n], a, b, on))
        a = b       # the same server's next window starts where this one ended


def _count(srv: Server, command: str) -> dict[str, Any]:
    c = counters(srv, command)
    c["cpu_s"] = exec_runtime_s(srv.pid)
    return c


def _window_row(i: int, name: str, variant: Variant, a: dict[str, Any], b: dict[str, Any],
                perf: bool | None = None) -> PairedWindow:
    secs = b["t"] - a["t"]
    cpu = (b["cpu_s"] - a["cpu_s"]) if a.get("cpu_s") is not None and b.get("cpu_s") is not None else None
    d_total = b["total_commands_processed"] - a["total_commands_processed"]
    d_calls = (b["calls"] - a["calls"]) if a["calls"] is not None and b["calls"] is not None else None
    return PairedWindow(i + 1, name, dict(variant.config or {}), round(a["epoch"], 3),
                        round(b["epoch"], 3), round(secs, 6), d_total, d_calls,
                        ops_per_s=d_total / secs if secs > 0 else None,
                        calls_per_s=d_calls / secs if d_calls is not None and secs > 0 else None,
                        # the main thread's CPU time in the window (schedstat, ns resolution)
                        server_cpu_s=round(cpu, 6) if cpu is not None else None,
                        perf=perf, mono0=round(a["t"], 6), mono1=round(b["t"], 6))
