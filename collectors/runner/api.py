"""The run API: one way to start a run, used by `stallscope run`, the sweep, the scheduler,
the demo and the benchmarks (each of them a thin shell over it).

    plan = plan_run(RunRequest("mset-50keys", ["base=debsrc:redis", "cand=..."]), log)
    outcome = execute(plan)          # RunOutcome(run_dir, status 0 | 1 | 130)

plan_run checks the inputs (case, variant specs, plugins: perf, TMA preflight, Parca token)
before anything is built, builds (or takes from the cache) every variant and writes the
manifest: from then on the run exists on disk, and `resume_run` can finish it. execute
takes the dataset snapshot, calibrates and runs the reps (collectors.runner.runner).
"""
from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from analysis.inputs.option_specs import (DEFAULT_TARGET_BUDGET_S, TARGET_WINDOWS, argv_for, precision_problem,
                                          taken_by)
from analysis.errors import StallscopeError
from analysis.inputs.case import Case
from analysis.inputs.host import HostFacts
from analysis.inputs.manifest import LoadGenerator, Manifest, Variant
from analysis.inputs.run_options import DEFAULT_FREQ_HZ, SEPARATE_PROFILE_REPS
from analysis.inputs.rundir import save_manifest
from analysis import run_spread
from analysis.inputs.run_spread import RunSpread
from analysis.inputs.stall_plan import StallPlan
from collectors.abba import as_share
from collectors.variants.spec import VariantSpec, parse_variant
from collectors.host import machine, noise, procs, sample_cost, versions
from collectors.load import memtier
from collectors.runner import layouts, noise_log, pairing, rep_plan, stall_control, targets
from collectors.runner.context import RunContext, bench_bin
from collectors.runner.new_manifest import apply_sections, make_manifest, new_run_id
from collectors.runner.options import RUNS_DIR, RunError, RunOptions
from collectors.runner.plugins import plugins, window_profilers
from collectors.runner.preflight_run import check as preflight
from collectors.runner.runner import Runner
from collectors.workload.cases import load_case
from collectors.workload.overrides import parse_sets

Log = Callable[[str], None]


@dataclass
class RunRequest:
    """A run to make: what `stallscope run CASE --variant ... [options]` asks, typed."""
    case: str                              # case name (cases/*.yaml), name@axis=value, or a file
    variants: list[str]                    # NAME=SPEC, in order (the first is the baseline)
    options: RunOptions = field(default_factory=RunOptions)
    sets: list[str] = field(default_factory=list)     # FIELD=VALUE case overrides
    out: Path = Path(RUNS_DIR)             # where the run directory is made
    report: bool = False                   # render the report at the end (kept for --resume)
    progress: bool = True
    # The manifest's `command` (how to reproduce the run); None: argv() of this request.
    command: list[str] | None = None
    # the run directory's name under `out`; None: a new id (an in-cache control: "incache")
    run_id: str | None = None

    def argv(self) -> list[str]:
        """The `stallscope run` arguments that make this request: the declared options
        (analysis/inputs/option_specs.py) as declared, then run's own flags and the plugins'
        (those in options.extra that differ from the flag's default)."""
        o = self.options
        values = {opt.name: getattr(o, opt.name) for opt in taken_by("run")}
        if o.targets:       # a run that decides plans its own reps; its defaults go unsaid
            values["reps"] = None
            values["paired_windows"] = None if o.paired_windows == TARGET_WINDOWS else o.paired_windows
            values["budget_s"] = None if o.budget_s == DEFAULT_TARGET_BUDGET_S else o.budget_s
        a = [self.case, *[x for v in self.variants for x in ("--variant", v)], *argv_for("run", values),
             *["--quick"] * o.quick, "--load-generator", o.load_generator, "--out", str(self.out)]
        if o.stalls is not None and o.stalls != o.targets:
            a += ["--stalls" if o.stalls else "--no-stalls"]
        if o.precision is not None and o.precision_on:
            a += ["--on", o.precision_on]
        if o.perf_share is not None:
            a += ["--perf-share", str(as_share(o.perf_share))]
        for s in self.sets:
            a += ["--set", s]
        a += ["--keep-perf-data"] * o.keep_perf_data + ["--report"] * self.report
        return a + _plugin_argv(o.extra) + ["--no-progress"] * (not self.progress)


def _plugin_argv(extra: dict) -> list[str]:
    """The plugins' flags (collectors/collector.py RunFlag) that extra sets to other than
    their defaults, spelled as `stallscope run` reads them."""
    a: list[str] = []
    for f in (f for pl in plugins() for f in pl.RUN_FLAGS.flags):
        v = extra.get(f.dest, f.default_value())
        if v == f.default_value():
            continue
        if f.action == "store_true":
            a += [f.flag] * bool(v)
        elif f.action == "append":
            a += [x for item in v for x in (f.flag, str(item))]
        else:
            a += [f.flag, str(v)]
    return a


@dataclass
class RunPlan:
    """A run written to disk (manifest, built variants) and ready to execute."""
    runner: Runner

    @property
    def run_dir(self) -> Path:
        return self.runner.run_dir


@dataclass
class RunOutcome:
    run_dir: Path
    status: int          # 0: every rep ok; 1: some rep failed; 130: interrupted (resume it)
    report: bool = False  # the run asked for its report at the end


def plan_run(req: RunRequest, log: Log) -> RunPlan:
    """Check, build and write the manifest (RunError and the loaders' errors on bad input,
    raised before anything is built where the input alone decides)."""
    if not req.case:
        raise RunError("name a case (e.g. mset-50keys) or give --resume RUN_DIR")
    if len(req.variants) < 1:
        raise RunError("give at least one --variant NAME=SPEC (two to compare)")
    case = load_case(req.case, req.options.size, parse_sets(req.sets), llc=req.options.llc_bytes)
    opts = with_plugin_defaults(req.options)
    _check_options(opts)
    specs = parse_variants(req.variants)
    layouts.check(opts, specs)
    preflight(case, specs, opts, req.out, log)   # perf, PMU, memory, disk, load (a bad MEMTIER= too)
    host = machine.host_facts()
    _log_dataset(case, log)
    found = plugins()
    # Plugins judge the run before anything is built (perf missing, no PMU, token file).
    sections = [pl.manifest_sections(opts, host) for pl in found]
    variants = layouts.build_all(specs, opts, log)
    plan, decided = pairing.choose(variants, opts, case, host.memory_bytes)
    opts.paired = plan is not None
    if opts.layouts > 1 and not opts.paired:
        raise RunError(f"--layouts {opts.layouts}: pairs layout i of one variant with layout i "
                       f"of the other in paired reps; this run cannot pair ({decided.reason})")
    log(f"stallscope run: {'paired' if plan else 'unpaired'}: {decided.reason}")
    if opts.precision_on is not None and not (opts.paired and opts.profile == "perf"):
        raise RunError(f"--on {opts.precision_on}: a function's cost per operation is narrowed "
                       f"from the profiles of paired windows; this run is "
                       f"{'not paired (' + decided.reason + ')' if not opts.paired else 'not profiled (--profile ' + opts.profile + ')'}")
    units_note, short_reps, replan = _plan_reps(opts, host, case, log)
    profiling_note, short = _resolve_profiling(opts, host, case)
    short = short_reps + short
    for line in [profiling_note] * bool(profiling_note) + [f"targets: {x}" for x in short]:
        log(f"stallscope run: {line}")
    tools = versions.tool_versions({n: v.benchmark_bin for n, v in variants.items()})
    run_id = req.run_id or new_run_id(case.name, req.out)
    if req.run_id and (req.out / run_id).exists():
        raise RunError(f"{req.out / run_id} exists already: finish it with --resume")
    command = ["stallscope", "run", *(req.command if req.command is not None else req.argv())]
    m = make_manifest(run_id, case, variants, opts, command, host, tools, plan, decided)
    m.options.report = bool(req.report)
    if units_note:      # why the reps, and the targets out of reach said before the run
        m.precision.note, m.precision.replan = "; ".join([units_note, *short]), replan
    m.load_generator, memtier_bin = choose_load_generator(case, opts, variants, log)
    for s in sections:
        apply_sections(m, s)
    m.stalls = _plan_stalls(req, case, opts, m, log)
    m.run_spread = _run_spread(opts, host, case, log, noise_log.size_key(req.out / run_id, case.size))
    if units_note and m.stalls.planned:     # the reps leave the control its share of the budget
        m.precision.control_s = _control_s(host, case)
    run_dir = req.out / run_id
    save_manifest(run_dir, m)
    log(f"stallscope run: {run_dir}")
    run = RunContext(run_dir, m, case, variants, opts,
                     collector_factories=[pl.rep_collectors for pl in found],
                     window_profiler_factories=window_profilers(found), memtier_bin=memtier_bin)
    return RunPlan(Runner(run, progress=req.progress))


def _check_options(opts: RunOptions) -> None:
    """The options' own rules, before anything is built (RunError)."""
    if opts.reps < 1:
        raise RunError("--reps must be at least 1")
    # a run that decides takes a budget without a precision: its reps stop when it is spent
    problem = None if opts.targets else precision_problem(opts.precision, opts.budget_s, opts.reps)
    if problem:
        raise RunError(problem)
    if opts.precision_on is not None and opts.precision is None:
        raise RunError("--on goes with --precision (it names whose interval to narrow)")
    if opts.precision_on is not None and opts.precision_on.partition(":")[2] not in ("", "flat", "cum"):
        raise RunError(f"--on {opts.precision_on}: give FUNCTION, FUNCTION:flat or FUNCTION:cum")


def _plan_stalls(req: RunRequest, case: Case, opts: RunOptions, m: Manifest, log: Log) -> StallPlan:
    """The run's in-cache control, or why none (said where a run that decides has none); the
    host's memory latency measured first (into the manifest's host facts) when it has one."""
    served = None
    if stall_control.wanted(opts):
        m.host.memory_latency = stall_control.measure_latency(m.host, m.variants, log)
        served = m.host.memory_latency.served_bytes if m.host.memory_latency else None
    sp = stall_control.plan(case, req.case, req.sets, req.variants, opts, served)
    if opts.targets and not sp.planned:
        log(f"stallscope run: no in-cache control: {sp.reason}")
    return sp


def _log_dataset(case: Case, log: Log) -> None:
    """The plan line of the dataset against this host's cache (docs/cases.md)."""
    ws = case.working_set
    if ws is not None and case.dataset.kind != "none":
        log(f"stallscope run: dataset: {ws.describe(case.dataset.keys)} (size {case.size}: {ws.why()})")


def _control_s(host: HostFacts, case: Case) -> float:
    """What a run that decides keeps of its budget for the in-cache control: this case's
    controls recorded here, else a fixed allowance (stall_control.budget_s)."""
    return stall_control.budget_s(noise.lookup(host.summary(), case.name, "incache"))


def _run_spread(opts: RunOptions, host: HostFacts, case: Case, log: Log,
                size: str | None = None) -> RunSpread | None:
    """The spread between runs a paired run's throughput and CPU time per operation are widened by
    (analysis/run_spread.py): this host's A/A runs of the case at `size` (the case's, or an
    in-cache control's "incache": noise_log.size_key), else another host's
    (run_spread.default); said before the run."""
    if not opts.paired:
        return None
    size = size or case.size
    spread = noise.lookup(host.summary(), case.name, size)
    between = spread.between if spread is not None else run_spread.default()
    if between.borrowed:
        log(f"stallscope run: throughput and CPU time per operation widened by another host's spread between runs, "
            f"{run_spread.text(between)}: this host has fewer than {run_spread.MIN_RUNS} recorded "
            f"A/A runs of {case.name} at size {size} (the same --variant twice) to measure its own "
            f"(docs/statistics.md, \"Runs differ by more than their reps\")")
    elif between.sd > 0:
        log(f"stallscope run: throughput and CPU time per operation widened by this host's spread between runs: "
            f"{run_spread.text(between)} of {case.name} at size {size}")
    if between.sd > 0 and opts.precision is not None and not opts.targets:
        # Stein's rule narrows the interval over reps; the one printed keeps this spread too
        floor = math.expm1(run_spread.room(between, 0.95))
        log(f"stallscope run: --precision ±{opts.precision:.1%} narrows the interval over this "
            f"run's reps; the interval printed adds the spread between runs, ±{floor:.1%} on its own"
            + (", so it stays wider than asked" if floor >= opts.precision else ""))
    return between


def _plan_reps(opts: RunOptions, host: HostFacts, case: Case, log: Log) -> tuple[str, list[str], bool]:
    """A run that decides: its paired reps from this host's recorded spread for the case
    (collectors/runner/targets.py); a paired one profiled in its windows, its windows and
    perf's share of them too, planned with the reps from what a rep costs here and the
    budget (collectors/runner/rep_plan.py). (why, for the manifest; the targets the plan
    cannot reach; whether it plans again after its first rep: collectors/runner/replan.py)."""
    if not opts.targets:
        return "", [], False
    spread = noise.lookup(host.summary(), case.name, case.size, paired=opts.paired)
    t = targets.Targets()
    in_windows = (opts.paired and opts.profile == "perf" and case.workload.tool != "rdb-load"
                  and opts.paired_windows == TARGET_WINDOWS and opts.frequency_hz is None
                  and opts.perf_share is None)
    if not in_windows:
        units = targets.planned_units(spread, t)
        opts.reps = units.units
        log(f"stallscope run: targets: {t.text()}; {units.why}")
        return units.why, [], False
    top = sample_cost.choose(host.summary(), case=case.name, need_hz=math.inf, size=case.size).hz
    # planned as if the control is made where one is wanted: whether it can be is known after
    # the latency probe (plan_run), and the reps then get its share of the budget back
    control_s = _control_s(host, case) if stall_control.wanted(opts) else 0.0
    budget = None if opts.budget_s is None else opts.budget_s - control_s
    p = rep_plan.plan(spread, budget, t, top, opts.paired_window_s,
                      targets.focus_family_rows(case.focus, case.server.io_threads))
    opts.reps, opts.paired_windows, opts.perf_share = p.reps, p.windows, float(p.share)
    log(f"stallscope run: targets: {t.text()}; {p.text()}")
    return p.text(), rep_plan.short_of(p, spread, t, control_s), p.rep_s is None and budget is not None


def _resolve_profiling(opts: RunOptions, host: HostFacts, case: Case) -> tuple[str, list[str]]:
    """Where profiles come from and at what rate, when the request left them open: perf in
    the paired windows of a paired run (no separate profile reps), separate profile reps
    where the run cannot pair; the rate from what a sample cost this case (or, until it has
    measured enough, any case) on this host. (why the rate, the targets a run that decides
    cannot reach at it and why: targets.out_of_reach)"""
    tool = case.workload.tool
    if opts.profile_reps is None:
        in_windows = opts.paired and opts.profile == "perf" and tool != "rdb-load"
        opts.profile_reps = 0 if in_windows or opts.profile == "off" else SEPARATE_PROFILE_REPS
    if opts.frequency_hz is None:
        if opts.profile != "perf":
            opts.frequency_hz = DEFAULT_FREQ_HZ
            return "", []
        rate = sample_cost.choose(host.summary(), case=case.name, need_hz=_rate_need(opts, case),
                                  size=case.size)
        opts.frequency_hz = rate.hz
        short = (targets.out_of_reach(targets.Targets(), rate, *_row_plan(opts, case))
                 if opts.targets and rate.need_hz is not None else [])
        return rate.why(), short
    return "", []


def _row_plan(opts: RunOptions, case: Case) -> tuple[int, int, float, int, float, float]:
    """(reps, windows, window s, focus family rows, alpha, perf's share of the blocks) the
    function rows are planned in:
    the focus family at its largest, a run that decides' rows at its last look's alpha."""
    reps = max(opts.reps, 2)
    return (reps, opts.paired_windows, opts.paired_window_s,
            targets.focus_family_rows(case.focus, case.server.io_threads),
            targets.final_alpha(reps) if opts.targets else 0.05, opts.perf_share or 0.5)


def _rate_need(opts: RunOptions, case: Case) -> float | None:
    """The rate the function rows' targets ask in this run's reps (None: a --quick run, or
    one whose profiles are not in paired windows, keeps the 1% budget); inf when no rate
    reaches them (sample_cost says so)."""
    if opts.quick or not opts.paired or opts.profile_reps:
        return None
    reps, windows, window_s, rows, alpha, share = _row_plan(opts, case)
    return targets.rate_need(targets.Targets(), reps, windows, window_s, focus_rows=rows,
                             alpha=alpha, share=share) or math.inf


def with_plugin_defaults(opts: RunOptions) -> RunOptions:
    """opts with every plugin flag it does not set at the flag's default: a caller of the API
    sets RunOptions fields, not the plugins' flags (call graphs, TMA, Parca), and a plugin
    reads its flags from options.extra as `stallscope run` would have filled it."""
    defaults = {k: v for pl in plugins() for k, v in pl.RUN_FLAGS.defaults().items()}
    return dataclasses.replace(opts, extra={**defaults, **opts.extra})


def resume_run(run_dir: Path, log: Log, progress: bool = True) -> RunPlan:
    """An interrupted or failed run, ready to run the reps that are not ok."""
    return RunPlan(Runner.resume(Path(run_dir), log, progress=progress))


def execute(plan: RunPlan) -> RunOutcome:
    """The run's reps, then its in-cache control where one is planned (stall_control.py):
    interrupted or failed, the control is finished by `--resume` like the reps."""
    status = plan.runner.run()
    if status == 0 and plan.runner.m.stalls is not None and plan.runner.m.stalls.planned:
        status = _control(plan.run_dir, plan.runner.show_progress)
    return RunOutcome(plan.run_dir, status, plan.runner.m.options.report)


def _control(run_dir: Path, progress: bool) -> int:
    """The run's in-cache control: made, finished, or nothing left (0)."""
    def log(msg: str) -> None:
        print(msg, file=sys.stderr)
    step = stall_control.next_step(run_dir, log)
    if step is None:
        return 0
    try:
        if step.resume:
            status = resume_run(step.dir, log, progress).runner.run()
        else:
            req = RunRequest(step.case, step.variants, step.options, sets=step.sets, out=step.dir.parent,
                             progress=progress, run_id=step.dir.name)
            status = plan_run(req, log).runner.run()
    except StallscopeError as e:
        # the run's reps are complete: its report is written without the stall section
        log(f"stallscope run: the in-cache control was not made ({e}); the report goes without "
            f"the memory-stall table (stallscope run --resume {run_dir} tries it again)")
        return 0
    if status == 130:
        log(f"stallscope run: the in-cache control was interrupted; finish it with: "
            f"stallscope run --resume {run_dir}")
    return status


def parse_variants(texts: list[str]) -> list[VariantSpec]:
    """Every --variant parsed before the first is built: a typo fails in a second."""
    specs: list[VariantSpec] = []
    for t in texts:
        s = parse_variant(t)
        if s.name in {x.name for x in specs}:
            raise RunError(f"variant name {s.name!r} given twice")
        specs.append(s)
    return specs


def choose_load_generator(case: Case, opts: RunOptions, variants: dict[str, Variant],
                          log: Log) -> tuple[LoadGenerator, str | None]:
    """The manifest's load_generator entry (and memtier's path when memtier drives the load);
    a fallback from memtier to redis-benchmark is said on stderr, not only in the manifest."""
    paths: dict[str, str | None] = {}
    for n, v in variants.items():
        try:
            paths[n] = bench_bin(v)
        except procs.ToolNotFound:
            paths[n] = None     # the rep that needs it fails with the full message
    entry, binary = memtier.choose(case, opts.load_generator, paths, paired=opts.paired)
    line = memtier.describe(entry)
    if line:
        log(f"stallscope run: {line}")
    return entry, binary
