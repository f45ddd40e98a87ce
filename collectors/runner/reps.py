"""One class per kind of rep. Each starts its server from the snapshot, verifies the
keyspace, measures, and fills the rep's facts (rep.json); the runner owns the rest (the
schedule entry's status, writing rep.json, going on after a failure).

  LoadRep      throughput and profile reps: redis-benchmark (-n calibrated), warm-up first;
               the plugins' collectors bracket the steady window (a profile rep differs
               from a throughput rep only in the collectors the plugins attach to it)
  MemtierRep   the same with memtier_benchmark (--test-time, no calibration)
  RdbLoadRep   rdb-load cases: the measurement is the server start itself
  PairedRep    config-only variants in one server, CONFIG SET between windows
  PairedServersRep  two builds loaded at once, the load switched between them
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from analysis.errors import Failed
from analysis.inputs.collector_facts import CollectorFacts
from analysis.inputs.layout import BENCH_JSON, INFO_TXT, RDB_LOAD_JSON, SERVER_LOG
from analysis.inputs.manifest import Rep, Variant
from analysis.inputs.repfacts import (BenchSummary, PairedFacts, RdbLoad,
                                      RdbLoadResult, RepCpus, RepFacts, Window)
from analysis.inputs.rundir import write_json
from collectors.collector import RepCollector, RepContext
from collectors.host import procs
from collectors.host.cputime import CpuWatch, client_capacity
from collectors.load import memtier
from collectors.load.redis_benchmark import redis_benchmark_argv, run_redis_benchmark, start_redis_benchmark
from collectors.load.server import Server
from collectors.load.settle import settle_together
from collectors.runner.context import RunContext, bench_bin
from collectors.runner.paired import counterbalanced, run_paired_windows
from collectors.runner.paired_servers import run_server_windows
from collectors.runner.phases import PhaseClock
from collectors.runner.snapshot import verify_rep


class CollectorError(Failed):
    """One or more collectors failed to stop cleanly; rep.json has each one's error."""


class LoadProcess(Protocol):
    """A running load generator (redis_benchmark.BenchProcess, memtier.MemtierProcess)."""
    proc: subprocess.Popen
    t0_epoch: float
    t1_epoch: float

    def finish(self, out_dir: Path, timeout_s: float) -> BenchSummary: ...


def _name(c: RepCollector) -> str:
    return getattr(c, "name", type(c).__name__)


def _failed(error: str) -> CollectorFacts:
    """collectors.<name> of a collector that failed to start or stop."""
    return CollectorFacts(status="failed", error=error)


def _checked(facts: object) -> CollectorFacts:
    """A stop() that returns what the seam says (collectors/collector.py), or a TypeError
    that records the collector as failed."""
    if not isinstance(facts, CollectorFacts):
        raise TypeError(f"stop() returned {type(facts).__name__}, not CollectorFacts "
                        "(analysis/inputs/collector_facts.py)")
    return facts


def bracket(load: LoadProcess, collectors: list[RepCollector], ctx: RepContext, facts: RepFacts,
            target_s: float, load_threads: int = 1) -> BenchSummary:
    """Bracket the running load generator with the rep's collectors; its result.

    Every collector that started is stopped, whatever failed before it: a stop() that
    raises is recorded as collectors.<name> = {"status": "failed", "error": ...} and the
    others still stop; then the rep fails naming every collector that did."""
    started: list[RepCollector] = []
    failed: list[str] = []
    watch = CpuWatch(ctx.pid, client_capacity(load_threads, ctx.client_cpus)).start()
    try:
        # Let the clients connect before the steady window opens.
        time.sleep(min(0.2, 0.05 * target_s))
        for c in collectors:
            try:
                c.start(ctx)
            except Exception as e:
                facts.collectors[_name(c)] = _failed(f"start: {type(e).__name__}: {e}")
                raise
            started.append(c)
        result = load.finish(ctx.rep_dir, timeout_s=120 + 10 * target_s)
        facts.saturation = watch.finish()
    except BaseException:
        procs.kill_group(load.proc)   # nothing measures any more: the load goes too
        raise
    finally:
        for c in started:
            try:
                facts.collectors[_name(c)] = _checked(c.stop(ctx))
            except Exception as e:
                facts.collectors[_name(c)] = _failed(f"{type(e).__name__}: {e}")
                failed.append(f"{_name(c)}: {type(e).__name__}: {e}")
    if failed:
        raise CollectorError("collector stop failed: " + "; ".join(failed))
    facts.window = Window(round(load.t0_epoch, 3), round(load.t1_epoch, 3),
                          ctx.window_s if collectors else None)
    return result


class RepKind:
    """What every kind of rep does around its measurement."""

    def __init__(self, run: RunContext, rep: Rep, rep_dir: Path, rdb: Path | None, facts: RepFacts):
        self.run, self.rep, self.rep_dir, self.rdb, self.facts = run, rep, rep_dir, rdb, facts

    @property
    def variant(self) -> Variant:
        return self.run.variants[self.rep.variant]

    def execute(self) -> None:
        srv = self.start_server(self.variant)
        try:
            checked = verify_rep(self.run, srv)
            self.facts.dataset = checked
            self.measure(srv)
            (self.rep_dir / INFO_TXT).write_text(srv.info_all())
        finally:
            self.facts.server_stop = srv.stop()

    def measure(self, srv: Server) -> None:
        raise NotImplementedError

    def start_server(self, variant: Variant, with_variant_config: bool = True) -> Server:
        run, rep, facts = self.run, self.rep, self.facts
        srv = Server(run.server_opts(variant, f"{rep.variant}-{rep.rep}", self.rep_dir / SERVER_LOG,
                                     self.rdb, with_variant_config))
        try:
            srv.start()
        finally:
            facts.commands = {"server": srv.argv}
        facts.pid, facts.port = srv.pid, srv.port
        facts.cpus = RepCpus(run.place.server_cpus, run.place.client_cpus)
        facts.rdb_load = RdbLoad.from_json(srv.timing.to_json()) if srv.timing else None
        return srv

    def context(self, srv: Server, window_s: float) -> RepContext:
        rep, run = self.rep, self.run
        return RepContext(rep_dir=self.rep_dir, window_s=window_s, pid=srv.pid,
                          cpus=run.place.server_cpus, rep=rep.rep, variant=rep.variant,
                          case=run.case.name, kind=rep.kind,
                          labels={"variant": rep.variant, "rep": str(rep.rep),
                                  "run": run.manifest.run_id, "kind": rep.kind},
                          port=srv.port, client_cpus=run.place.client_cpus,
                          callgraph=self.variant.callgraph or "fp")


class LoadRep(RepKind):
    def measure(self, srv: Server) -> None:
        run, facts, w = self.run, self.facts, self.run.case.workload
        # Measure a settled keyspace, not the rehash a restored RDB leaves behind.
        facts.settle = srv.settle()
        cal = run.manifest.calibration[self.rep.variant]
        cpus, bench, cluster = run.place.client_cpus, bench_bin(self.variant), run.case.server.cluster
        if w.warmup_s > 0:
            n_warm = max(w.clients, int(cal.requests * w.warmup_s / max(cal.target_s, 1e-3)))
            argv = redis_benchmark_argv(bench, srv.port, w, n_warm, cluster)
            facts.commands["warmup"] = argv
            facts.warmup = run_redis_benchmark(argv, self.rep_dir, cpus, timeout_s=60 + 20 * w.warmup_s,
                                               stem="warmup")
        argv = redis_benchmark_argv(bench, srv.port, w, cal.requests, cluster)
        facts.commands["bench"] = argv
        facts.requests = cal.requests
        collectors = run.rep_collectors(self.rep.kind)
        ctx = self.context(srv, max(0.5, 0.8 * cal.target_s))
        facts.bench = bracket(start_redis_benchmark(argv, cpus), collectors, ctx, facts, cal.target_s,
                              w.threads)
        facts.calibration = cal


class MemtierRep(RepKind):
    def measure(self, srv: Server) -> None:
        run, facts, w = self.run, self.facts, self.run.case.workload
        facts.settle = srv.settle()
        p = memtier.plan(run.case)
        cpus, cluster, binary = run.place.client_cpus, run.case.server.cluster, run.memtier_bin
        if w.warmup_s > 0:
            argv = memtier.memtier_argv(binary, srv.port, p, w.pipeline, w.warmup_s,
                                        self.rep_dir / "warmup.json", cluster)
            facts.commands["warmup"] = argv
            facts.warmup = memtier.start(argv, cpus).finish(
                self.rep_dir, timeout_s=60 + 20 * w.warmup_s, stem="warmup")
        argv = memtier.memtier_argv(binary, srv.port, p, w.pipeline, w.duration_s,
                                    self.rep_dir / BENCH_JSON, cluster)
        facts.commands["bench"] = argv
        collectors = run.rep_collectors(self.rep.kind)
        ctx = self.context(srv, max(0.5, 0.8 * w.duration_s))
        facts.bench = bracket(memtier.start(argv, cpus), collectors, ctx, facts, w.duration_s,
                              p.threads)
        facts.calibration = run.manifest.calibration.get(self.rep.variant)


class RdbLoadRep(RepKind):
    def measure(self, srv: Server) -> None:
        keys = int(srv.client.dbsize())
        t = srv.timing
        secs = t.log_load_seconds if t.log_load_seconds else t.seconds_to_ready
        out = RdbLoadResult(keys=keys, seconds_to_ready_s=t.seconds_to_ready,
                            log_load_seconds_s=t.log_load_seconds, load_seconds_s=secs,
                            keys_per_s=keys / secs if secs > 0 else None,
                            keys_loaded_info=t.keys_loaded,
                            rdb_bytes=Path(srv.opts.rdb).stat().st_size if srv.opts.rdb else None)
        write_json(self.rep_dir / RDB_LOAD_JSON, out.to_json())
        self.facts.rdb_load_result = out


def _record_paired_perf(facts: RepFacts, perf: dict[str, CollectorFacts]) -> None:
    """The window collectors' facts, by their rep.json names (perf:<variant>, tma:<variant>)."""
    facts.collectors.update(perf)


class PairedRep(RepKind):
    @property
    def variant(self) -> Variant:
        # One server for both variants: the first one's binary, no variant config at start.
        return next(iter(self.run.rep_variants(self.rep).values()))

    def start_server(self, variant: Variant, with_variant_config: bool = True) -> Server:
        return super().start_server(variant, with_variant_config=False)

    def measure(self, srv: Server) -> None:
        run, first = self.run, self.variant
        self.facts.settle = srv.settle()
        # Who was busy over all windows (the load generator is reaped before it returns).
        watch = CpuWatch(srv.pid, client_capacity(run.case.workload.threads, run.place.client_cpus)).start()
        res = run_paired_windows(srv, counterbalanced(run.rep_variants(self.rep), self.rep.rep), run.case,
                                 run.manifest.calibration.get(first.name),
                                 bench_bin(first), run.place.client_cpus, self.rep_dir,
                                 window_s=run.opts.paired_window_s, windows=run.opts.paired_windows,
                                 profiler=run.window_profiler(self.rep_dir),
                                 perf_share=run.opts.perf_share or 0.5)
        _record_paired_perf(self.facts, res["perf"])
        self.facts.saturation = watch.finish()
        self.facts.commands["bench"] = res["bench_command"]
        self.facts.paired = PairedFacts(res["order"], res["setting"], res["counter"])


class PairedServersRep(RepKind):
    """Two builds, both servers loaded from the snapshot and warm; the load alternates."""

    def execute(self) -> None:
        run, facts = self.run, self.facts
        servers: dict[str, Server] = {}
        clock = PhaseClock(facts.phases)
        # Both servers load their datasets at once, on the server and client CPUs (nothing
        # else runs yet; a load is one thread each), then move onto the server CPUs: a rep
        # of the demo spent ~17 s of its ~80 s waiting for the second load.
        place = run.place
        load_cpus = sorted(set(place.server_cpus or []) | set(place.client_cpus or [])) or None
        try:
            # --layouts: this rep's layout; the first slot alternates between reps
            variants = counterbalanced(run.rep_variants(self.rep), self.rep.rep)
            for name, v in variants.items():
                opts = run.server_opts(v, f"paired-{self.rep.rep}-{name}",
                                       self.rep_dir / f"server-{name}.log", self.rdb)
                srv = Server(replace(opts, cpus=load_cpus or opts.cpus))
                servers[name] = srv
                try:
                    srv.launch()
                finally:
                    facts.commands[f"server:{name}"] = srv.argv
            for name, srv in servers.items():
                srv.wait_ready()
                if place.server_cpus:
                    procs.pin_threads(srv.pid, place.server_cpus)
            clock.mark("load")
            for srv in servers.values():
                verify_rep(run, srv)
            clock.mark("verify")
            facts.settle_by_variant = settle_together({n: s.port for n, s in servers.items()})
            clock.mark("settle")
            facts.cpus = RepCpus(run.place.server_cpus, run.place.client_cpus)
            res = run_server_windows(
                servers, variants, run.case, dict(run.manifest.calibration),
                {n: bench_bin(v) for n, v in variants.items()}, run.place.client_cpus,
                self.rep_dir, window_s=run.opts.paired_window_s, windows=run.opts.paired_windows,
                warmup_s=run.case.workload.warmup_s, clock=clock,
                profiler=run.window_profiler(self.rep_dir),
                perf_share=run.opts.perf_share or 0.5)
            _record_paired_perf(facts, res["perf"])
            for n, argv in res["bench_commands"].items():
                facts.commands[f"bench:{n}"] = argv
            facts.paired = PairedFacts(res["order"], res["setting"], res["counter"])
            facts.saturation_by_variant = {n: s for n, s in res["saturation"].items() if s}
            for n, srv in servers.items():
                (self.rep_dir / f"info-{n}.txt").write_text(srv.info_all())
        finally:
            facts.server_stop = ", ".join(f"{n}: {srv.stop()}" for n, srv in servers.items())
            clock.mark("stop")


def rep_kind(run: RunContext, rep: Rep) -> type[RepKind]:
    """The class that runs `rep` in this run."""
    if rep.kind == "paired":
        plan = run.manifest.paired
        return PairedServersRep if plan is not None and plan.mode == "servers" else PairedRep
    if run.case.workload.tool == "rdb-load":
        return RdbLoadRep
    return MemtierRep if run.memtier_bin else LoadRep
