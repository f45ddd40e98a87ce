"""Paired mode: config-only variants measured in ONE server process.

The setting that differs between the two variants is switched with CONFIG SET between
short windows in ABBA order while one load generator runs throughout; each window's
throughput is the delta of the server's own counters (INFO stats total_commands_processed,
and INFO commandstats calls of the case's command). No restart, no dataset reload, so
the noise that those add is gone. Raw per-window counters go to paired.json.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence, TypeVar

from analysis.inputs.layout import BENCH_TXT, PAIRED_JSON
from analysis.inputs.option_specs import PAIRED_WINDOW_S, PAIRED_WINDOWS
from collectors.host import procs
from analysis.inputs.case import Case
from analysis.inputs.paired import PairedWindow, PairedWindows
from analysis.inputs.rundir import write_json
from collectors.runner.rep_order import interleave
from collectors.load.server import Server
from analysis.inputs.manifest import Calibration
from collectors.load.redis_benchmark import redis_benchmark_argv, start_redis_benchmark
from collectors.abba import block_schedule
from collectors.collector import WindowProfiler

# After a CONFIG SET, let in-flight batches finish before counting. Only a switch settles:
# the second window of an ABBA pair follows on directly, counted from where the first ended.
SETTLE_S = 0.1


def counters(srv: Server, command: str) -> dict[str, Any]:
    # One INFO for both sections (Redis 7+/Valkey): both counters from the same instant.
    st = srv.client.info("stats", "commandstats")
    calls = st.get(f"cmdstat_{command.lower()}", {}).get("calls")
    return {"t": time.monotonic(), "epoch": time.time(),
            "total_commands_processed": int(st["total_commands_processed"]),
            "calls": int(calls) if calls is not None else None}


T = TypeVar("T")


def counterbalanced(variants: dict[str, T], rep: int) -> dict[str, T]:
    """The variants in the order paired rep `rep` runs them: the baseline first in odd reps,
    the candidate first in even ones (rotated, with more variants). The first slot is not
    the second: its server is launched and loaded first, its load generator warms up first,
    its window opens every ABBA block, its perf attaches first. With the same order in every
    rep, whatever that favours is a difference between the variants no interval over reps
    can see: six A/A runs of one build on the Intel guest of 2026-11-28 (13 paired reps,
    1499 Hz) read lookupKey's own cost lower on the second server in all six (−0 to −4%,
    one a false ✅) and dictFindByHash's higher in five (one a false 🔸). Alternated, a slot's
    advantage goes into the rep-to-rep spread, where the interval over reps counts it."""
    names = list(variants)
    k = (rep - 1) % len(names) if names else 0
    return {n: variants[n] for n in names[k:] + names[:k]}


def window_order(names: Sequence[str], windows: int) -> list[str]:
    order = interleave(list(names), (windows + len(names) - 1) // len(names))
    return order[:windows]


UNCALIBRATED = 2_000_000_000   # -n without a rate: the load is stopped after the last window


def requests_for(cal: Calibration | None, seconds: float) -> int:
    """-n for a load generator that must outlast `seconds` of windows: three times what the
    calibrated rate needs, or as many as redis-benchmark takes before the run has a rate
    (a paired run calibrates from its own windows: snapshot.ensure_calibration)."""
    if cal is None or not cal.probe_requests:
        return UNCALIBRATED
    rate = cal.probe_requests / max(cal.probe_wall_s or 1.0, 1e-3)
    return int(rate * seconds * 3) + 1000


def switches(order: Sequence[str]) -> int:
    """How many times the active variant changes (the first window counts as one)."""
    return sum(1 for i, n in enumerate(order) if i == 0 or order[i - 1] != n)


def run_paired_windows(srv: Server, variants: dict[str, Any], case: Case, cal: Calibration | None,
                       bench_bin: str, client_cpus: list[int] | None, rep_dir: Path,
                       window_s: float = PAIRED_WINDOW_S, windows: int = PAIRED_WINDOWS,
                       profiler: WindowProfiler | None = None, perf_share: float = 0.5) -> dict[str, Any]:
    """CONFIG SET between ABBA windows of one server; writes paired.json. With `profiler`
    (a run plugin's WindowProfiler: perf in the paired windows), the server is sampled in
    `perf_share` of the ABBA blocks (collectors/abba.py) and each variant's windows are
    folded into its own profile."""
    names = list(variants)
    keys = sorted({k for v in variants.values() for k in (v.config or {})})
    keys = [k for k in keys if len({(variants[n].config or {}).get(k) for n in names}) > 1]
    # A variant that does not set a key runs with the server's default: read it first.
    defaults = {k: srv.client.config_get(k).get(k) for k in keys}
    values = {n: {k: (variants[n].config or {}).get(k, defaults[k]) for k in keys} for n in names}
    order = window_order(names, windows)
    total_s = windows * window_s + switches(order) * SETTLE_S + 5.0
    n = requests_for(cal, total_s)
    w = case.workload
    argv = redis_benchmark_argv(bench_bin, srv.port, w, n, case.server.cluster)
    command = str(w.command[0]) if w.command else ""
    bp = start_redis_benchmark(argv, client_cpus)
    rows: list[PairedWindow] = []
    try:
        time.sleep(0.5)  # connections up and warm before the first window
        if profiler is not None:
            profiler.probe("server", srv.pid)     # the unwinding, chosen under the load
            profiler.start({"server": srv.pid})
        _config_windows(srv, bp, order, values, command, window_s, rows, profiler, perf_share)
    finally:
        if profiler is not None:
            profiler.stop()
        # The load generator was sized to outlast the windows: stop it, keep its stderr.
        procs.kill_group(bp.proc, 2.0)
        out, err = bp.proc.communicate()
        (rep_dir / BENCH_TXT).write_bytes(err or b"")
    doc = PairedWindows(setting=keys, defaults=defaults, values=values, window_s=window_s,
                        settle_s=SETTLE_S, order=order, command=command,
                        counter="INFO stats total_commands_processed; calls = INFO commandstats calls",
                        windows=rows)
    write_json(rep_dir / PAIRED_JSON, doc.to_json())
    return {"order": order, "setting": keys, "counter": doc.counter, "bench_command": argv,
            "perf": profiler.fold(rows) if profiler is not None else {}}


def _config_windows(srv: Server, bp: Any, order: list[str], values: dict[str, dict[str, Any]],
                    command: str, window_s: float, rows: list[PairedWindow],
                    profiler: WindowProfiler | None, perf_share: float = 0.5) -> None:
    """The ABBA windows of one server: CONFIG SET at a switch; with a profiler, perf switched
    before a block's first count (an "on" window's samples and operations cover one span)."""
    on_plan = block_schedule(len(order), perf_share) if profiler is not None else None
    a = None
    for i, name in enumerate(order):
        on = on_plan[i] if on_plan else None
        toggle = profiler is not None and (i == 0 or on != on_plan[i - 1])
        if i == 0 or order[i - 1] != name:
            for k, val in values[name].items():
                srv.client.config_set(k, val)
            if toggle:
                profiler.set(bool(on))
            time.sleep(SETTLE_S)
            a = counters(srv, command)
        elif toggle:             # a new block of the same setting: count afresh
            profiler.set(bool(on))
            a = counters(srv, command)
        time.sleep(window_s)
        b = counters(srv, command)
        rows.append(_row(i, name, values[name], a, b, on))
        a = b       # the next window of the same setting starts where this one ended
        if bp.proc.poll() is not None:
            raise RuntimeError(f"load generator ended during paired window {i + 1} "
                               f"(status {bp.proc.returncode}); calibration too low?")


def _row(i: int, name: str, config: dict[str, Any], a: dict[str, Any], b: dict[str, Any],
         perf: bool | None) -> PairedWindow:
    secs = b["t"] - a["t"]
    d_total = b["total_commands_processed"] - a["total_commands_processed"]
    d_calls = (b["calls"] - a["calls"]) if a["calls"] is not None and b["calls"] is not None else None
    return PairedWindow(
        i + 1, name, config, round(a["epoch"], 3), round(b["epoch"], 3), round(secs, 6),
        d_total, d_calls, ops_per_s=d_total / secs if secs > 0 else None,
        calls_per_s=d_calls / secs if d_calls is not None and secs > 0 else None,
        perf=perf, mono0=round(a["t"], 6), mono1=round(b["t"], 6))
