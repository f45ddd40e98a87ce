"""The plan's numbers for one point: how it will be measured (paired or interleaved), its
peak memory and whether that fits this host, and its wall time.

Rates were measured on the 2-core dev VM (AMD EPYC, 23 GiB): the preload writes about
0.6M elements/s (1M 10 B strings in 1.4 s on Redis 7; hash fields and zset members through
the same Lua loop), a SAVE and an RDB load move about 150-250 MB/s and rebuild about 1.5M
keys/s; each rep adds a server start, perf's post-processing a few seconds. Estimates are
meant to be right within a factor of about 2 (docs/sweeps.md): enough to plan a night,
not a stopwatch.
"""
from __future__ import annotations

from analysis.inputs.case import Case
from analysis.sweep.sweep_manifest import Estimate
from analysis.sweep.sweep_options import SweepOptions
from collectors.runner.pairing import room_for_two
from collectors.workload.dataset import keyspace_bytes_estimate

PRELOAD_ELEMENTS_PER_S = 600_000
SAVE_BYTES_PER_S = 200e6
LOAD_BYTES_PER_S = 250e6
LOAD_KEYS_PER_S = 1.5e6
SERVER_START_S = 1.0             # process start, ready, verify, settle on a small dataset
PERF_POST_S = 4.0                # perf script + folding after a profile rep
CALIBRATE_S = 3.0                # redis-benchmark probes before the first rep
REPORT_S = 8.0                   # compare + report (flame graphs) of the point
PAIRED_SETTLE_S = {"config": 0.1, "servers": 0.15}   # per switch of the active variant
MEMORY_FACTOR = 1.25             # allocator slack and the estimate's own error (about +-30%)
SERVER_BASE_BYTES = 16 << 20     # an empty server
HOST_SHARE = 0.85                # of MemTotal a point may plan to use (no swap on the CI VM)


def elements(case: Case) -> int:
    ds = case.dataset
    return ds.keys * max(1, ds.fields, ds.members)


def pairing(case: Case, opts: SweepOptions, config_only: bool, memory_bytes: int | None,
            variants: int = 2) -> tuple[str | None, str]:
    """(paired mode or None, how the point is measured, as a sentence). --pairing auto and
    paired pair where the point can (a paired sweep's plan refuses the points that cannot:
    collectors/sweep/plan.py); unpaired never does."""
    if case.workload.tool == "rdb-load":
        return None, "interleaved reps, one RDB load per rep"
    if opts.pairing == "unpaired":
        return None, "interleaved reps, a server start each"
    if variants > 2:        # ABBA windows switch between two
        return None, f"interleaved reps, a server start each ({variants} variants: pairing takes two)"
    if config_only:
        return "config", "paired windows, one server process (CONFIG SET between windows)"
    room = room_for_two(case, memory_bytes)
    if room:
        return None, f"interleaved reps ({room})"
    # Two builds loaded at once, ABBA windows: the demo's default since it halves the
    # interval for the same time on the machine (bench/precision.py).
    return "servers", "paired windows, two servers loaded at once"


def start_s(case: Case, dataset_bytes: int) -> float:
    return SERVER_START_S + dataset_bytes / LOAD_BYTES_PER_S + case.dataset.keys / LOAD_KEYS_PER_S


def preload_s(case: Case, dataset_bytes: int) -> float:
    if case.dataset.kind == "none":
        return 0.0
    return 2.0 + elements(case) / PRELOAD_ELEMENTS_PER_S + dataset_bytes / SAVE_BYTES_PER_S


def _reps_s(case: Case, opts: SweepOptions, mode: str | None, start: float, variants: int) -> float:
    w = case.workload
    if w.tool == "rdb-load":
        return variants * opts.reps * (start + 1.0)
    # ABBA: the active variant changes every second window (plus the first).
    window = (opts.paired_windows * opts.paired_window_s
              + (opts.paired_windows // 2 + 1) * PAIRED_SETTLE_S.get(mode or "", 0.0))
    if mode == "config":
        total = start + CALIBRATE_S + opts.reps * (start + 0.5 + window + 1.0)
    elif mode == "servers":
        # Each rep loads both servers side by side (collectors/runner/reps.py): one start's time.
        total = variants * (start + CALIBRATE_S) + opts.reps * (start + variants * w.warmup_s + window + 1.0)
    else:
        total = variants * (start + CALIBRATE_S) + variants * opts.reps * (start + w.warmup_s + w.duration_s + 1.5)
    if opts.profile != "off":
        # a paired point's windows are profiled (folding: PERF_POST_S a rep); else separate reps
        separate = opts.profile_reps if opts.profile_reps is not None else (0 if mode else 3)
        total += variants * separate * (start + w.warmup_s + w.duration_s + PERF_POST_S)
        if mode:
            total += opts.reps * PERF_POST_S
    return total


def estimate(case: Case, opts: SweepOptions, config_only: bool, memory_bytes: int | None,
             variants: int = 2, preload_shared_with: str | None = None) -> tuple[Estimate, str | None]:
    """The point's estimate, and why it does not fit this host (None when it does)."""
    ds_bytes = keyspace_bytes_estimate(case)
    mode, method = pairing(case, opts, config_only, memory_bytes, variants)
    memory = int(ds_bytes * MEMORY_FACTOR) + SERVER_BASE_BYTES
    if mode == "servers":
        memory *= 2
    fits = not memory_bytes or memory <= HOST_SHARE * memory_bytes
    start = start_s(case, ds_bytes)
    time_s = _reps_s(case, opts, mode, start, variants) + REPORT_S
    if preload_shared_with is None:
        time_s += preload_s(case, ds_bytes)
    est = Estimate(time_s=round(time_s, 1), memory_bytes=memory, dataset_bytes=ds_bytes,
                   keys=case.dataset.keys, fits=fits, method=method, paired=mode is not None,
                   preload_shared_with=preload_shared_with)
    why = None if fits else (
        f"needs about {memory / 2**30:.1f} GiB (dataset about {ds_bytes / 2**30:.1f} GiB x "
        f"{MEMORY_FACTOR:g}" + (", two servers" if mode == "servers" else "")
        + f"), more than {HOST_SHARE:.0%} of this host's {(memory_bytes or 0) / 2**30:.1f} GiB")
    return est, why
