"""Before the first rep: the dataset, preloaded once and snapshotted to an RDB in the cache
(every rep restarts the server from it), and redis-benchmark's -n, calibrated once per
variant so a rep lasts the case's duration_s."""
from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from analysis.inputs.case import Case
from analysis.inputs.layout import INCACHE_DIR, PAIRED_JSON
from analysis.inputs.paired import read_paired
from analysis.inputs.rundir import RunDirError, write_json
from analysis.inputs.manifest import Calibration, DatasetInfo, Variant
from analysis.inputs.repfacts import DatasetCheck
from collectors.variants.builder import cache_dir
from collectors.host import versions
from collectors.load.redis_benchmark import calibrate
from collectors.load.server import Server
from collectors.runner.context import RunContext, bench_bin
from collectors.workload import dataset


def loader_sha256() -> str:
    """The dataset loader's code: a changed loader must not reuse an old snapshot."""
    return hashlib.sha256(Path(dataset.__file__).read_bytes()).hexdigest()


def snapshot_key(case: Case, loader: str, server_version: str = "") -> str:
    """The data, the server knobs that shape it, the loader's code, and the version of the
    server that writes the RDB (an older server cannot read a newer RDB format)."""
    blob = json.dumps({"dataset": case.dataset.to_json(), "cluster": case.server.cluster,
                       "config": case.server.config, "case": case.name, "size": case.size,
                       "loader": loader, "server": server_version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _oldest_first(version: Any) -> tuple[int, ...]:
    """Sort key: '8.0.6' -> (8, 0, 6); unparsable versions sort last (they never write the
    snapshot unless every variant is unparsable)."""
    return versions.version_tuple(str(version or "")) or (10**9,)


def ensure_snapshot(run: RunContext) -> Path | None:
    """The RDB every rep starts from (None for a case without data), made if not cached;
    the manifest's "dataset" entry says which and whether it came from the cache."""
    case = run.case
    d = case.dataset
    if d.kind == "none":
        run.manifest.dataset = DatasetInfo(kind="none")
        return None
    # The oldest server writes the snapshot: RDB formats load forward, not backward.
    first = min(run.variants.values(), key=lambda v: _oldest_first(v.version))
    key = snapshot_key(case, loader_sha256(), str(first.version))
    rdb = cache_dir() / "datasets" / f"{case.name.replace('/', '_')}-{case.size}-{key}.rdb"
    ds_dir = run.run_dir / "dataset"
    ds_dir.mkdir(parents=True, exist_ok=True)
    info = DatasetInfo(kind=d.kind, keys=d.keys, snapshot=str(rdb), key=key)
    cached_log = rdb.with_suffix(".preload.txt")
    if not rdb.is_file():
        run.note(f"dataset: preloading {d.keys:,} {d.kind} keys with {first.name}'s server, "
                 f"then snapshot to {rdb}")
        _preload(run, first, rdb, ds_dir, info)
        if (ds_dir / "preload.txt").is_file():
            shutil.copyfile(ds_dir / "preload.txt", cached_log)
    else:
        info.cached = True
        run.note(f"dataset: from the cache ({rdb})")
        # Keep the raw preload record with every run that uses the snapshot.
        head = f"# restored from the dataset cache: {rdb}\n# original preload output follows\n"
        body = cached_log.read_text() if cached_log.is_file() else "(not recorded)\n"
        (ds_dir / "preload.txt").write_text(head + body)
    info.snapshot_bytes = rdb.stat().st_size
    # A "far larger than L3" case run at a size that fits in L3 measures no DRAM stalls:
    # the report must say so next to its verdicts. An in-cache control is in cache by design.
    control = run.run_dir.name == INCACHE_DIR
    info.l3_warning = None if control else dataset.l3_warning(case)
    if info.l3_warning:
        run.note(f"note: {info.l3_warning}", always=True)
    run.manifest.dataset = info
    run.save()
    return rdb


def _preload(run: RunContext, first: Variant, rdb: Path, ds_dir: Path, info: DatasetInfo) -> None:
    srv = Server(run.server_opts(first, "preload", ds_dir / "preload-server.log", None))
    t0 = time.monotonic()
    srv.start()
    try:
        pre = dataset.preload(run.case, srv.client, first, ds_dir)
        ver = dataset.verify(run.case, srv.client)
        write_json(ds_dir / "verify.json", ver.to_json())          # atomic: a crash leaves no half file
        srv.snapshot(rdb)
    finally:
        srv.stop()
    info.created_by, info.preload, info.cached = first.name, pre, False
    info.preload_s = round(time.monotonic() - t0, 3)


def verify_rep(run: RunContext, srv: Server) -> DatasetCheck | None:
    """The keyspace a rep is about to measure is the case's (raises DatasetError if not)."""
    if run.case.dataset.kind == "none":
        return None
    ver = dataset.verify(run.case, srv.client)
    vf = run.run_dir / "dataset" / "verify.json"
    if not vf.is_file():
        write_json(vf, ver.to_json())
    return ver


def ensure_calibration(run: RunContext, rdb: Path | None) -> None:
    """manifest.calibration[variant] for every variant that has none yet (resume keeps them).
    A paired run takes its rates from its own paired windows when it has some: the probe
    would start and settle each server once more (~40 s a variant at 10M keys) only to
    measure what the windows measured already."""
    w = run.case.workload
    cal = run.manifest.calibration
    if w.tool == "rdb-load":
        run.manifest.calibration = {}
        return
    rates = window_rates(run) if run.opts.paired else {}
    for name, v in run.variants.items():
        if name in cal:
            continue
        if run.memtier_bin:
            cal[name] = Calibration(tool="memtier", requests=None, target_s=w.duration_s,
                                    note="memtier_benchmark --test-time: no calibration run")
        elif name in rates:
            rate = rates[name]
            cal[name] = Calibration(requests=max(w.clients, int(rate * w.duration_s)),
                                    target_s=w.duration_s, probe_requests=int(rate), probe_wall_s=1.0,
                                    probe_rps=round(rate, 2),
                                    note="the median rate of this variant's paired windows")
            run.note(f"calibrated {name} from its paired windows: -n {cal[name].requests:,} for "
                     f"about {w.duration_s:g} s")
        else:
            cal[name] = _calibrate(run, v, rdb)
            run.note(f"calibrated {name}: -n {cal[name].requests:,} for about {w.duration_s:g} s")
        run.save()


def window_rates(run: RunContext) -> dict[str, float]:
    """Each variant's median window rate (the case's command per second) over the paired
    reps that finished."""
    rates: dict[str, list[float]] = {}
    for rep in run.manifest.reps(kind="paired"):
        p = run.run_dir / rep.dir / PAIRED_JSON
        try:
            windows = read_paired(p).windows
        except (OSError, RunDirError):
            continue
        for w in windows:
            r = w.calls_per_s or w.ops_per_s
            if r:
                rates.setdefault(w.variant, []).append(float(r))
    return {n: statistics.median(v) for n, v in rates.items() if v}


def _calibrate(run: RunContext, v: Variant, rdb: Path | None) -> Calibration:
    w = run.case.workload
    srv = Server(run.server_opts(v, f"calibrate-{v.name}", run.scratch / f"calibrate-{v.name}.log", rdb))
    srv.start()
    try:
        srv.settle()  # calibrate on the keyspace the reps will measure
        return calibrate(bench_bin(v), srv.port, w, target_s=w.duration_s,
                         cpus=run.place.client_cpus, cluster=run.case.server.cluster)
    finally:
        srv.stop()
