"""`python -m collectors run`: run a case for two or more variants into runs/<run-id>/.

The run directory layout is docs/run-directory.md. Order of work:
  1. build (or take from cache) every variant; capture host and tool facts;
  2. preload the dataset once, verify it, snapshot it to an RDB in the cache;
  3. calibrate redis-benchmark's -n once per variant so a rep lasts the case's duration
     (memtier_benchmark, when it is the load generator, has --test-time: no calibration);
  4. run the schedule (ABBA-interleaved reps); every rep restarts the server from the
     snapshot, verifies the keyspace, warms up for workload.warmup_s, then measures.
The manifest is saved after every state change, so a killed run says which reps are
done; `--resume RUN_DIR` runs the reps that are not "ok".

Extension points for other collectors (no edit of this file needed): a module named in
PLUGIN_MODULES may define
  add_run_arguments(parser)                    extra CLI flags (e.g. --tma)
  PROFILERS = ("parca",)                       extra values for --profile
  rep_collectors(options, kind) -> list        RepCollector objects for a rep of `kind`
  manifest_sections(options, host) -> dict     top-level manifest entries (e.g. {"tma": ...})
A RepCollector has .name, start(ctx: RepContext) and stop(ctx) -> dict (facts for rep.json);
start/stop bracket the steady window of throughput and profile reps.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import re
import os
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field, asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

from analysis.inputs.manifest import (Calibration, DatasetInfo, Manifest, PairedPlan, Placement,
                                      Profiling, Rep, RunStatus)
from analysis.inputs.repfacts import RepCpus, RepFacts, Window
from analysis.inputs.rundir import RunDirError, load_run, save_manifest, write_json, write_rep_facts
from collectors.load import memtier
from collectors.host import procs
from analysis.inputs.case import Case
from collectors.profilers.perf import PerfProfiler
from collectors.load.server import Server, ServerOptions, ServerError
from collectors.load.redis_benchmark import (BenchError, calibrate, redis_benchmark_argv,
                                             run_redis_benchmark, start_redis_benchmark)

PLUGIN_MODULES = ("collectors.profilers.tma", "collectors.profilers.parca")
RUNS_DIR = "runs"


class RunError(Exception):
    """A problem with the run as a whole (bad options, unusable variants); exit status 2."""


# ---------------------------------------------------------------- seams

@dataclass
class RepContext:
    """What a RepCollector may know about the rep it brackets. The first fields match
    collectors.tma.RepContext, so the TMA and Parca collectors take this object as is."""
    rep_dir: Path
    window_s: float                # length of the steady window (s)
    pid: int | None = None         # server pid (perf -p covers all its threads)
    cpus: list[int] | None = None  # CPUs the server is pinned to
    rep: int = 1                   # 1-based rep number within the variant
    variant: str = ""
    case: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    # runner extras
    run_dir: Path | None = None
    kind: str = "throughput"       # throughput | profile | ...
    port: int = 0
    client_cpus: list[int] | None = None   # where the load generator (and profilers) run
    callgraph: str = "fp"          # fp | dwarf, from the variant's binary
    built_variant: Any = None      # collectors.variant.BuiltVariant
    case_obj: Case | None = None


class RepCollector(Protocol):
    name: str

    def start(self, ctx: RepContext) -> None: ...

    def stop(self, ctx: RepContext) -> dict[str, Any]: ...


@dataclass
class RunOptions:
    reps: int = 5                  # throughput reps per variant (paired reps with --paired)
    profile: str = "perf"          # perf | off | a plugin's profiler
    profile_reps: int = 3          # separate profiled reps per variant (3: fewest with a CI)
    freq_hz: int = 999
    keep_perf_data: bool = False
    paired: bool = False
    paired_window_s: float = 2.0   # length of one paired window (s)
    paired_windows: int = 8        # windows per paired rep (ABBA...)
    size: str = "default"
    load_generator: str = "auto"   # auto (the case's workload.tool) | redis-benchmark | memtier
    extra: dict[str, Any] = field(default_factory=dict)   # plugin options (argparse dests)


@dataclass
class DatasetOps:
    """The dataset loader (collectors.dataset by default; tests may pass their own)."""
    preload: Callable[..., dict] | None
    verify: Callable[..., dict] | None
    source_sha256: str = ""        # hash of the loader's code: part of the snapshot cache key


def default_dataset_ops() -> DatasetOps:
    try:
        from collectors.workload import dataset
    except ModuleNotFoundError as e:
        if e.name != "collectors.workload.dataset":
            raise
        return DatasetOps(None, None)
    src = Path(dataset.__file__).read_bytes()
    return DatasetOps(dataset.preload, dataset.verify, hashlib.sha256(src).hexdigest())


def _plugins() -> list[Any]:
    out = []
    for name in PLUGIN_MODULES:
        try:
            out.append(importlib.import_module(name))
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
    return out


# ---------------------------------------------------------------- schedule & placement

def interleave(variants: list[str], reps: int) -> list[str]:
    """A B B A A B ...: block i runs the variants rotated by i, so each variant takes each
    position equally often and slow drift hits all of them alike."""
    order: list[str] = []
    n = len(variants)
    for i in range(reps):
        k = i % n
        order += variants[k:] + variants[:k]
    return order


def build_schedule(variants: list[str], opts: RunOptions, workload_tool: str) -> list[Rep]:
    counters = {v: 0 for v in variants}
    sched: list[Rep] = []

    def add(v: str, kind: str) -> None:
        counters[v] += 1
        sched.append(Rep(variant=v, rep=counters[v], kind=kind))

    if opts.paired:
        for i in range(opts.reps):
            sched.append(Rep(variant="paired", rep=i + 1, kind="paired"))
    else:
        for v in interleave(variants, opts.reps):
            add(v, "throughput")
    if opts.profile != "off" and workload_tool != "rdb-load":
        for v in interleave(variants, opts.profile_reps):
            add(v, "profile")
    return sched


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


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(case_name: str, out: Path) -> str:
    base = f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{case_name.replace('/', '_').replace('@', '_')}"
    rid, i = base, 2
    while (out / rid).exists():
        rid, i = f"{base}-{i}", i + 1
    return rid


def cache_root() -> Path:
    """The same cache directory the builds use (collectors.build.cache_dir)."""
    from collectors.build.builder import cache_dir
    return cache_dir()


def snapshot_key(case: Case, ops: DatasetOps, server_version: str = "") -> str:
    """The data, the server knobs that shape it, the loader's code, and the version of the
    server that writes the RDB (an older server cannot read a newer RDB format)."""
    blob = json.dumps({"dataset": asdict(case.dataset), "cluster": case.server.cluster,
                       "config": case.server.config, "case": case.name, "size": case.size,
                       "loader": ops.source_sha256, "server": server_version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _version_tuple(version: Any) -> tuple[int, ...]:
    """'8.0.6' -> (8, 0, 6); unparsable versions sort last (they never write the snapshot
    unless every variant is unparsable)."""
    parts = re.findall(r"\d+", str(version or ""))
    return tuple(int(p) for p in parts[:3]) if parts else (10**9,)


# ---------------------------------------------------------------- the runner

class Runner:
    def __init__(self, run_dir: Path, manifest: Manifest, case: Case, variants: dict[str, Any],
                 opts: RunOptions, dataset_ops: DatasetOps | None = None,
                 collector_factories: list[Callable[[RunOptions, str], list]] | None = None,
                 progress: bool = True, memtier_bin: str | None = None):
        self.run_dir = Path(run_dir)
        self.m = manifest
        self.case = case
        self.variants = variants
        self.opts = opts
        self.ops = dataset_ops or default_dataset_ops()
        self.collector_factories = collector_factories if collector_factories is not None else \
            [p.rep_collectors for p in _plugins() if hasattr(p, "rep_collectors")]
        self.progress = progress
        self.place = manifest.placement
        self.scratch = self.run_dir / ".scratch"
        # Set when the manifest's load_generator says memtier (new_runner/resume_runner).
        self.memtier_bin = memtier_bin

    # -- manifest bookkeeping
    def save(self) -> None:
        save_manifest(self.run_dir, self.m)

    # -- server options for a variant
    def server_opts(self, variant: Any, rep_tag: str, logfile: Path, rdb: Path | None,
                    with_variant_config: bool = True) -> ServerOptions:
        cfg = dict(self.case.server.config)
        if with_variant_config:
            cfg.update(variant.config or {})
        return ServerOptions(server_bin=variant.server_bin, workdir=self.scratch / rep_tag,
                             logfile=logfile, config=cfg, io_threads=self.case.server.io_threads,
                             cluster=self.case.server.cluster, persistence=self.case.server.persistence,
                             cpus=self.place.server_cpus, rdb=rdb)

    # -- dataset
    def ensure_snapshot(self) -> Path | None:
        d = self.case.dataset
        if d.kind == "none":
            self.m.dataset = DatasetInfo(kind="none")
            return None
        if self.ops.preload is None:
            raise RunError(f"case {self.case.name} needs a {d.kind} dataset but collectors.dataset "
                           "is not available (missing module)")
        # The oldest server writes the snapshot: RDB formats load forward, not backward.
        first = min(self.variants.values(), key=lambda v: _version_tuple(v.version))
        key = snapshot_key(self.case, self.ops, str(first.version))
        rdb = cache_root() / "datasets" / f"{self.case.name.replace('/', '_')}-{self.case.size}-{key}.rdb"
        ds_dir = self.run_dir / "dataset"
        ds_dir.mkdir(parents=True, exist_ok=True)
        info = DatasetInfo(kind=d.kind, keys=d.keys, snapshot=str(rdb), key=key)
        cached_log = rdb.with_suffix(".preload.txt")
        if not rdb.is_file():
            srv = Server(self.server_opts(first, "preload", ds_dir / "preload-server.log", None))
            t0 = time.monotonic()
            srv.start()
            try:
                pre = self.ops.preload(self.case, srv.client, first, ds_dir)
                ver = self.ops.verify(self.case, srv.client)
                (ds_dir / "verify.json").write_text(json.dumps(ver, indent=2, default=str) + "\n")
                srv.snapshot(rdb)
            finally:
                srv.stop()
            info.created_by, info.preload, info.cached = first.name, pre, False
            info.preload_s = round(time.monotonic() - t0, 3)
            if (ds_dir / "preload.txt").is_file():
                shutil.copyfile(ds_dir / "preload.txt", cached_log)
        else:
            info.cached = True
            # Keep the raw preload record with every run that uses the snapshot.
            head = f"# restored from the dataset cache: {rdb}\n# original preload output follows\n"
            body = cached_log.read_text() if cached_log.is_file() else "(not recorded)\n"
            (ds_dir / "preload.txt").write_text(head + body)
        info.snapshot_bytes = rdb.stat().st_size
        from collectors.workload.dataset import l3_warning
        # A "far larger than L3" case run at a size that fits in L3 measures no DRAM stalls:
        # the report must say so next to its verdicts.
        info.l3_warning = l3_warning(self.case)
        if info.l3_warning:
            print(f"stallscope run: note: {info.l3_warning}", file=sys.stderr)
        self.m.dataset = info
        self.save()
        return rdb

    def verify_rep(self, srv: Server) -> dict[str, Any] | None:
        if self.case.dataset.kind == "none" or self.ops.verify is None:
            return None
        ver = self.ops.verify(self.case, srv.client)
        vf = self.run_dir / "dataset" / "verify.json"
        if not vf.is_file():
            vf.write_text(json.dumps(ver, indent=2, default=str) + "\n")
        return ver

    # -- calibration
    def ensure_calibration(self, rdb: Path | None) -> None:
        w = self.case.workload
        cal = self.m.calibration
        if w.tool == "rdb-load":
            self.m.calibration = {}
            return
        for name in self.variants:
            if name in cal:
                continue
            if self.memtier_bin:
                cal[name] = Calibration(tool="memtier", requests=None, target_s=w.duration_s,
                                        note="memtier_benchmark --test-time: no calibration run")
                self.save()
                continue
            v = self.variants[name]
            srv = Server(self.server_opts(v, f"calibrate-{name}",
                                          self.scratch / f"calibrate-{name}.log", rdb))
            srv.start()
            try:
                srv.settle()  # calibrate on the keyspace the reps will measure
                c = calibrate(self.bench_bin(v), srv.port, w, target_s=w.duration_s,
                              cpus=self.place.client_cpus, cluster=self.case.server.cluster)
            finally:
                srv.stop()
            cal[name] = c
            self.save()

    @staticmethod
    def bench_bin(v: Any) -> str:
        b = v.benchmark_bin or shutil.which("redis-benchmark") or shutil.which("valkey-benchmark")
        if not b:
            raise procs.ToolNotFound(f"variant {v.name}: no redis-benchmark/valkey-benchmark beside "
                                     f"{v.server_bin} nor on PATH")
        return b

    # -- the reps
    def run(self) -> int:
        procs.install_signal_handlers()
        self.m.status = RunStatus("running", None, now_iso())
        self.save()
        todo = [r for r in self.m.schedule if r.status != "ok"]
        bar = _progress(len(todo), self.case.name) if self.progress else None
        try:
            rdb = self.ensure_snapshot()
            self.ensure_calibration(rdb)
            for i, rep in enumerate(todo):
                if bar:
                    bar.set_description(f"{self.case.name}: {rep.dir} ({rep.kind}) rep {i + 1}/{len(todo)}")
                self.run_one(rep, rdb)
                if bar:
                    bar.update(1)
        except procs.Interrupted as e:
            procs.kill_all()
            for r in self.m.schedule:
                if r.status == "running":
                    r.status, r.reason, r.finished = "failed", str(e), now_iso()
            self.m.status = RunStatus("interrupted", str(e), now_iso())
            self.save()
            print(f"\nstallscope run: {e}; finished reps kept. Resume with:\n"
                  f"  python -m collectors run --resume {self.run_dir}", file=sys.stderr)
            return 130
        except BaseException as e:
            procs.kill_all()
            for r in self.m.schedule:
                if r.status == "running":
                    r.status, r.reason, r.finished = "failed", f"{type(e).__name__}: {e}", now_iso()
            self.m.status = RunStatus("failed", f"{type(e).__name__}: {e}", now_iso())
            self.save()
            raise
        finally:
            if bar:
                bar.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
        failed = [r for r in self.m.schedule if r.status != "ok"]
        self.m.status = RunStatus("complete" if not failed else "incomplete",
                                  None if not failed else f"{len(failed)} rep(s) failed", now_iso())
        self.save()
        return 0 if not failed else 1

    def run_one(self, rep: Rep, rdb: Path | None) -> None:
        rep_dir = self.run_dir / rep.dir
        if rep_dir.exists():
            shutil.rmtree(rep_dir)  # a failed/interrupted attempt: start this rep afresh
        rep_dir.mkdir(parents=True)
        rep.status, rep.reason, rep.started, rep.finished = "running", None, now_iso(), None
        self.save()
        facts = RepFacts(variant=rep.variant, rep=rep.rep, kind=rep.kind)
        try:
            if rep.kind == "paired":
                self.paired_rep(rep, rep_dir, rdb, facts)
            else:
                self.measured_rep(rep, rep_dir, rdb, facts)
        except Exception as e:   # one failed rep must not end the run: record it, go on
            rep.status, rep.reason = "failed", f"{type(e).__name__}: {e}"
            facts.error = rep.reason
            if os.environ.get("STALLSCOPE_DEBUG"):
                facts.traceback = traceback.format_exc()
            print(f"stallscope run: rep {rep.dir} failed: {rep.reason}", file=sys.stderr)
        else:
            rep.status = "ok"
        finally:
            write_rep_facts(rep_dir, facts)
        rep.finished = now_iso()
        self.save()

    def _start_server(self, variant: Any, rep: Rep, rep_dir: Path, rdb: Path | None,
                      facts: RepFacts, with_variant_config: bool = True) -> Server:
        srv = Server(self.server_opts(variant, f"{rep.variant}-{rep.rep}", rep_dir / "server.log", rdb,
                                      with_variant_config))
        try:
            srv.start()
        finally:
            facts.commands = {"server": srv.argv}
        facts.pid, facts.port = srv.pid, srv.port
        facts.cpus = RepCpus(self.place.server_cpus, self.place.client_cpus)
        facts.rdb_load = srv.timing.to_json() if srv.timing else None
        return srv

    def measured_rep(self, rep: Rep, rep_dir: Path, rdb: Path | None, facts: RepFacts) -> None:
        v = self.variants[rep.variant]
        w = self.case.workload
        srv = self._start_server(v, rep, rep_dir, rdb, facts)
        try:
            facts.dataset = self.verify_rep(srv)
            if w.tool == "rdb-load":
                self.rdb_load_rep(srv, rep_dir, facts)
                return
            # Measure a settled keyspace, not the rehash a restored RDB leaves behind.
            facts.settle = srv.settle()
            if self.memtier_bin:
                self.memtier_rep(rep, rep_dir, srv, facts)
                return
            cal = self.m.calibration[rep.variant]
            cpus = self.place.client_cpus
            bench = self.bench_bin(v)
            cluster = self.case.server.cluster
            if w.warmup_s > 0:
                n_warm = max(w.clients, int(cal.requests * w.warmup_s / max(cal.target_s, 1e-3)))
                argv = redis_benchmark_argv(bench, srv.port, w, n_warm, cluster)
                facts.commands["warmup"] = argv
                facts.warmup = run_redis_benchmark(argv, rep_dir, cpus, timeout_s=60 + 20 * w.warmup_s,
                                                   stem="warmup")
            argv = redis_benchmark_argv(bench, srv.port, w, cal.requests, cluster)
            facts.commands["bench"] = argv
            facts.requests = cal.requests
            collectors = self.rep_collectors(rep.kind)
            window = max(0.5, 0.8 * cal.target_s)
            bp = start_redis_benchmark(argv, cpus)
            result = self._steady(bp, rep, rep_dir, srv, collectors, window, cal.target_s, facts)
            facts.bench = result
            facts.calibration = cal
            (rep_dir / "info.txt").write_text(srv.info_all())
        finally:
            facts.server_stop = srv.stop()

    def _steady(self, bp: Any, rep: Rep, rep_dir: Path, srv: Server, collectors: list,
                window: float, target_s: float, facts: RepFacts) -> Any:
        """Bracket the running load generator `bp` with the rep's collectors; its result."""
        v = self.variants[rep.variant]
        ctx = RepContext(rep_dir=rep_dir, window_s=window, pid=srv.pid,
                         cpus=self.place.server_cpus, rep=rep.rep, variant=rep.variant,
                         case=self.case.name,
                         labels={"variant": rep.variant, "rep": str(rep.rep),
                                 "run": self.m.run_id, "kind": rep.kind},
                         run_dir=self.run_dir, kind=rep.kind, port=srv.port,
                         client_cpus=self.place.client_cpus,
                         callgraph=getattr(v, "callgraph", "fp") or "fp", built_variant=v,
                         case_obj=self.case)
        started = []
        try:
            # Let the clients connect before the steady window opens.
            time.sleep(min(0.2, 0.05 * target_s))
            for c in collectors:
                c.start(ctx)
                started.append(c)
            result = bp.finish(rep_dir, timeout_s=120 + 10 * target_s)
        finally:
            for c in started:
                facts.collectors[getattr(c, "name", type(c).__name__)] = c.stop(ctx)
        facts.window = Window(round(bp.t0_epoch, 3), round(bp.t1_epoch, 3),
                              window if collectors else None)
        return result

    def memtier_rep(self, rep: Rep, rep_dir: Path, srv: Server, facts: RepFacts) -> None:
        """Warm-up and measured run with memtier_benchmark (--test-time, no calibration)."""
        w = self.case.workload
        p = memtier.plan(self.case)
        cpus = self.place.client_cpus
        cluster = self.case.server.cluster
        if w.warmup_s > 0:
            argv = memtier.memtier_argv(self.memtier_bin, srv.port, p, w.pipeline, w.warmup_s,
                                        rep_dir / "warmup.json", cluster)
            facts.commands["warmup"] = argv
            facts.warmup = memtier.start(argv, cpus).finish(
                rep_dir, timeout_s=60 + 20 * w.warmup_s, stem="warmup")
        argv = memtier.memtier_argv(self.memtier_bin, srv.port, p, w.pipeline, w.duration_s,
                                    rep_dir / "bench.json", cluster)
        facts.commands["bench"] = argv
        collectors = self.rep_collectors(rep.kind)
        window = max(0.5, 0.8 * w.duration_s)
        result = self._steady(memtier.start(argv, cpus), rep, rep_dir, srv, collectors, window,
                              w.duration_s, facts)
        facts.bench = result
        facts.calibration = self.m.calibration.get(rep.variant)
        (rep_dir / "info.txt").write_text(srv.info_all())

    def rdb_load_rep(self, srv: Server, rep_dir: Path, facts: RepFacts) -> None:
        keys = int(srv.client.dbsize())
        t = srv.timing
        secs = t.log_load_seconds if t.log_load_seconds else t.seconds_to_ready
        out = {"keys": keys, "seconds_to_ready_s": t.seconds_to_ready,
               "log_load_seconds_s": t.log_load_seconds, "load_seconds_s": secs,
               "keys_per_s": keys / secs if secs > 0 else None,
               "keys_loaded_info": t.keys_loaded,
               "rdb_bytes": Path(srv.opts.rdb).stat().st_size if srv.opts.rdb else None}
        write_json(rep_dir / "rdb_load.json", out)
        facts.rdb_load_result = out
        (rep_dir / "info.txt").write_text(srv.info_all())

    def rep_collectors(self, kind: str) -> list:
        cs: list = []
        if kind == "profile" and self.opts.profile == "perf":
            cs.append(PerfProfiler(freq_hz=self.opts.freq_hz, keep_data=self.opts.keep_perf_data))
        for f in self.collector_factories:
            cs += list(f(self.opts, kind) or [])
        return cs

    # -- paired mode
    def paired_rep(self, rep: Rep, rep_dir: Path, rdb: Path | None, facts: RepFacts) -> None:
        from collectors.runner.paired import run_paired_windows
        names = list(self.variants)
        first = self.variants[names[0]]
        srv = self._start_server(first, rep, rep_dir, rdb, facts, with_variant_config=False)
        try:
            facts.dataset = self.verify_rep(srv)
            facts.settle = srv.settle()
            cal = self.m.calibration[names[0]]
            res = run_paired_windows(srv, self.variants, self.case, cal, self.bench_bin(first),
                                     self.place.client_cpus, rep_dir,
                                     window_s=self.opts.paired_window_s,
                                     windows=self.opts.paired_windows)
            facts.commands["bench"] = res["bench_command"]
            facts.paired = {k: res[k] for k in ("order", "setting", "counter")}
            (rep_dir / "info.txt").write_text(srv.info_all())
        finally:
            facts.server_stop = srv.stop()


def _progress(total: int, what: str):
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:
        return None
    # tqdm's ETA is per rep; reps of one run take about the same time.
    return tqdm(total=total, file=sys.stderr, unit="rep", desc=what, dynamic_ncols=True,
                disable=None)


# ---------------------------------------------------------------- building a run

def make_manifest(run_id: str, case: Case, variants: dict[str, Any], opts: RunOptions,
                  command: list[str], host: dict, tools: dict) -> Manifest:
    w = case.workload
    if opts.profile == "off":
        profiling = Profiling("off", "off", note="no CPU profile collected")
    elif w.tool == "rdb-load":
        profiling = Profiling(opts.profile, "off",
                              note="rdb-load case: the measured phase is the server start; not profiled")
    else:
        profiling = Profiling(opts.profile, "separate",
                              event="cpu-clock" if opts.profile == "perf" else None,
                              frequency_hz=opts.freq_hz, reps_per_variant=opts.profile_reps,
                              note="throughput reps are unprofiled; profile reps run the same load "
                                   "with perf attached (their bench.csv shows the profiled throughput)")
    m = Manifest(run_id=run_id, created=now_iso(), command=command, case=case.to_json(),
                 size=case.size, variants=dict(variants),
                 host=host, tools=tools, placement=placement(case.server.io_threads),
                 profiling=profiling,
                 schedule=build_schedule(list(variants), opts, w.tool))
    m.warmup = {"mode": "per-rep" if w.warmup_s > 0 and w.tool != "rdb-load" else "none",
                "seconds": w.warmup_s,
                "note": "each rep first runs the load for warmup_s (raw output warmup.csv), then "
                        "the measured run (bench.csv)"}
    m.options = asdict(opts)
    m.calibration = {}
    m.load_generator = {}
    if opts.paired:
        m.paired = paired_manifest(variants, opts)
    return m


def paired_manifest(variants: dict[str, Any], opts: RunOptions) -> PairedPlan:
    names = list(variants)
    if len(names) != 2:
        raise RunError(f"--paired needs exactly two variants (got {len(names)})")
    a, b = (variants[n] for n in names)
    if a.binary_sha256 != b.binary_sha256:
        raise RunError(f"--paired needs config-only variants: {names[0]} and {names[1]} have "
                       f"different binaries (sha256 {a.binary_sha256[:12]} vs {b.binary_sha256[:12]}); "
                       "give both the same build and differ only in +config=NAME=VALUE")
    keys = sorted(set(a.config or {}) | set(b.config or {}))
    keys = [k for k in keys if (a.config or {}).get(k) != (b.config or {}).get(k)]
    if not keys:
        raise RunError(f"--paired: {names[0]} and {names[1]} have the same config; nothing to switch")
    return PairedPlan(setting=keys, values={n: {k: (variants[n].config or {}).get(k) for k in keys}
                                            for n in names},
                      window_s=opts.paired_window_s, windows=opts.paired_windows,
                      variants=names, counter="INFO stats total_commands_processed")


def load_variants(specs: list[str], log: Callable[[str], None]) -> dict[str, Any]:
    try:
        from collectors.build.spec import parse_variant, build_variant
    except ModuleNotFoundError as e:
        raise RunError(f"cannot build variants: {e}") from None
    out: dict[str, Any] = {}
    for s in specs:
        try:
            vs = parse_variant(s)
        except ValueError as e:
            raise RunError(str(e)) from None
        if vs.name in out:
            raise RunError(f"variant name {vs.name!r} given twice")
        out[vs.name] = build_variant(vs, log=log)
    return out


HELP_EPILOG = """\
Examples:
  # Redis from Debian source vs the same with the MSET prefetch patch, 5 reps each:
  python -m collectors run mset-50keys --variant base=debsrc:redis \\
      --variant cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch --reps 5

  # small size, no profile, then render the report:
  python -m collectors run mset-10keys --size small --profile off --report \\
      --variant base=debsrc:redis --variant cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch

  # config-only variants of one binary, measured in one server process (CONFIG SET windows):
  python -m collectors run mget-100keys --paired \\
      --variant pf0=bin:/path/valkey-server+config=prefetch-batch-max-size=0 \\
      --variant pf16=bin:/path/valkey-server+config=prefetch-batch-max-size=16

  # finish a run that was interrupted (Ctrl-C, a crash, a reboot):
  python -m collectors run --resume runs/20261121-234500-mset-50keys

What happens: every rep restarts the server (127.0.0.1, free port, CPU 0) from a cached RDB
snapshot of the case's dataset, verifies the keyspace, warms up for the case's warmup_s,
then runs redis-benchmark (-n calibrated per variant so a rep lasts about duration_s) on
the other CPU. A case with workload.tool memtier (suite imports), or --load-generator memtier,
runs memtier_benchmark for duration_s instead when it is installed (PATH or MEMTIER=/path);
otherwise redis-benchmark, and stderr and the manifest's load_generator say why.
Reps are interleaved A B B A ...; profile reps (perf record -e cpu-clock
-g on the server) are separate from throughput reps. Output: runs/<run-id>/, layout in
docs/run-directory.md. Exit status: 0 all reps ok, 1 some rep failed, 2 bad input,
130 interrupted (resume with --resume).
"""


def _grammar() -> str:
    try:
        from collectors.build.spec import GRAMMAR
        return GRAMMAR
    except (ModuleNotFoundError, ImportError):
        return ""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m collectors run",
        description="Run a case for two or more variants into runs/<run-id>/ (see docs/run-directory.md).",
        epilog=_grammar() + "\n" + HELP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", nargs="?", help="case name (cases/*.yaml, e.g. mset-50keys) or path to a case file")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                   help="a variant (repeat; at least two unless --resume); grammar below")
    p.add_argument("--reps", type=int, default=5, help="measured reps per variant (default 5)")
    p.add_argument("--size", default="default", help="case size knob: small | default | large (default: default)")
    plugins = _plugins()
    profilers = ["perf", "off"] + [x for pl in plugins for x in getattr(pl, "PROFILERS", ())]
    p.add_argument("--profile", choices=profilers, default="perf",
                   help="CPU profiler for the separate profile reps (default perf)")
    p.add_argument("--profile-reps", type=int, default=3, metavar="N",
                   help="profiled reps per variant, separate from throughput reps (default 3: "
                        "the fewest that give function costs a confidence interval)")
    p.add_argument("--frequency", type=int, default=999, metavar="HZ",
                   help="perf sampling frequency in Hz (default 999)")
    p.add_argument("--keep-perf-data", action="store_true", help="keep perf.data beside perf.folded")
    p.add_argument("--paired", action="store_true",
                   help="config-only variants: one server, CONFIG SET switched between short windows")
    p.add_argument("--paired-window", type=float, default=2.0, metavar="SECONDS",
                   help="length of one paired window in s (default 2)")
    p.add_argument("--paired-windows", type=int, default=8, metavar="N",
                   help="windows per paired rep, ABBA order (default 8)")
    p.add_argument("--load-generator", choices=memtier.CHOICES, default="auto",
                   help="auto (default): the case's workload.tool; memtier runs memtier_benchmark "
                        "(PATH or MEMTIER=/path) and falls back to redis-benchmark, saying why")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish the reps of RUN_DIR that are not ok")
    p.add_argument("--out", default=RUNS_DIR, help="where run directories go (default runs/)")
    p.add_argument("--report", action="store_true", help="render the report at the end (analysis.compare)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    for pl in plugins:
        if hasattr(pl, "add_run_arguments"):
            pl.add_run_arguments(p)
    return p


KNOWN_DESTS = {"case", "variant", "reps", "size", "profile", "profile_reps", "frequency",
               "keep_perf_data", "paired", "paired_window", "paired_windows", "resume", "out",
               "report", "no_progress", "load_generator"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    log = (lambda msg: print(msg, file=sys.stderr))
    # Now, not in Runner.run(): Ctrl-C during a build or apt-get source must end in the
    # one-line message below, not a KeyboardInterrupt traceback.
    procs.install_signal_handlers()
    try:
        if args.resume:
            runner = resume_runner(Path(args.resume), log, progress=not args.no_progress)
        else:
            runner = new_runner(args, argv, log)
        rc = runner.run()
    except (RunError, RunDirError, procs.ToolNotFound, ServerError, BenchError, ValueError,
            memtier.MemtierError) as e:
        print(f"stallscope run: error: {e}", file=sys.stderr)
        return 2
    except procs.Interrupted as e:
        procs.kill_all()
        print(f"stallscope run: {e} before the first rep (builds finished so far are cached)",
              file=sys.stderr)
        return 130
    except Exception as e:
        # Plugin/loader errors (CaseError, DatasetError, BuildError) carry their own
        # file:line messages; a traceback adds nothing for the user.
        if os.environ.get("STALLSCOPE_DEBUG"):
            raise
        print(f"stallscope run: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    print(str(runner.run_dir))
    if (args.report or getattr(runner.m, "options", {}).get("report")) and rc in (0, 1):
        if importlib.util.find_spec("analysis.compare.cli") is None:
            print("stallscope run: --report: analysis.compare is not available", file=sys.stderr)
        else:
            from analysis.compare import cli as compare_cli
            compare_cli.main([str(runner.run_dir)])
    return rc


def new_runner(args: argparse.Namespace, argv: list[str], log) -> Runner:
    if not args.case:
        raise RunError("name a case (e.g. mset-50keys) or give --resume RUN_DIR")
    if len(args.variant) < 1:
        raise RunError("give at least one --variant NAME=SPEC (two to compare)")
    if args.reps < 1:
        raise RunError("--reps must be at least 1")
    from collectors.workload.cases import load_case
    case = load_case(args.case, args.size)
    extra = {k: v for k, v in vars(args).items() if k not in KNOWN_DESTS}
    opts = RunOptions(reps=args.reps, profile=args.profile, profile_reps=args.profile_reps,
                      freq_hz=args.frequency, keep_perf_data=args.keep_perf_data, paired=args.paired,
                      paired_window_s=args.paired_window, paired_windows=args.paired_windows,
                      size=args.size, load_generator=args.load_generator, extra=extra)
    if opts.load_generator == "memtier" or (opts.load_generator == "auto" and case.workload.tool == "memtier"):
        memtier.find_memtier()  # a MEMTIER= that points nowhere stops the run before any build
    if opts.profile == "perf":
        from collectors.profilers.perf import require_tools
        require_tools()
    variants = load_variants(args.variant, log)
    if opts.paired:
        paired_manifest(variants, opts)  # validate before anything runs
    from collectors.host import machine as environment
    host = environment.host_facts()
    tools = environment.tool_versions({n: v.benchmark_bin for n, v in variants.items()})
    out = Path(args.out)
    run_id = new_run_id(case.name, out)
    command = [Path(sys.executable).name, "-m", "collectors", "run", *argv]
    m = make_manifest(run_id, case, variants, opts, command, host, tools)
    m.options["report"] = bool(args.report)
    m.load_generator, memtier_bin = choose_load_generator(case, opts, variants, log)
    for pl in _plugins():
        if hasattr(pl, "manifest_sections"):
            for k, v in (pl.manifest_sections(opts, host) or {}).items():
                setattr(m, k, type(getattr(m, k)).from_json(v, k)
                        if hasattr(getattr(m, k, None), "from_json") else v)
    run_dir = out / run_id
    save_manifest(run_dir, m)
    log(f"stallscope run: {run_dir}")
    return Runner(run_dir, m, case, variants, opts, progress=not args.no_progress,
                  memtier_bin=memtier_bin)


def choose_load_generator(case: Case, opts: RunOptions, variants: dict[str, Any],
                          log: Callable[[str], None]) -> tuple[dict[str, Any], str | None]:
    """The manifest's load_generator entry (and memtier's path when memtier drives the load);
    a fallback from memtier to redis-benchmark is said on stderr, not only in the manifest."""
    paths = {}
    for n, v in variants.items():
        try:
            paths[n] = Runner.bench_bin(v)
        except procs.ToolNotFound:
            paths[n] = None     # the rep that needs it fails with the full message
    entry, binary = memtier.choose(case, opts.load_generator, paths, paired=opts.paired)
    line = memtier.describe(entry)
    if line:
        log(f"stallscope run: {line}")
    return entry, binary


def resume_runner(run_dir: Path, log, progress: bool = True) -> Runner:
    rd = load_run(run_dir)
    m = rd.manifest
    case = m.case_model()
    o = dict(m.options or {})
    o.pop("report", None)
    opts = RunOptions(**o)
    variants: dict[str, Any] = {}
    for name, vm in m.variants.items():
        vs = load_variants([f"{name}={vm.spec}"], log)[name]
        if vs.binary_sha256 != vm.binary_sha256:
            raise RunError(f"{run_dir}/manifest.json: variant {name} was built as sha256 "
                           f"{str(vm.binary_sha256)[:12]}, the build now gives "
                           f"{vs.binary_sha256[:12]}; cannot resume with a different binary")
        variants[name] = vs
    left = [r for r in m.schedule if r.status != "ok"]
    m.resumes = m.resumes + [{"at": now_iso(), "command": sys.argv, "reps": len(left)}]
    log(f"stallscope run: resuming {run_dir}: {len(left)} of {len(m.schedule)} reps to run")
    memtier_bin = None
    if (m.load_generator or {}).get("used") == "memtier":
        # Finished reps were measured with memtier: the rest must be too, or they don't compare.
        memtier_bin = memtier.find_memtier()
        if memtier_bin is None:
            raise RunError(f"{run_dir}/manifest.json: this run's reps were measured with "
                           f"memtier_benchmark ({m.load_generator.get('path')}), which is no longer "
                           f"on PATH; {memtier.INSTALL_HINT}")
    return Runner(run_dir, m, case, variants, opts, progress=progress, memtier_bin=memtier_bin)


if __name__ == "__main__":
    sys.exit(main())
