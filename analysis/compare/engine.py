"""Run directory -> `Results`: the comparison of two variants of one run.

Pure: reads the run directory only and writes nothing (the report writes each variant's
merged profile reps as `<variant>.folded`, from analyse_with_profiles). The same run
directory always gives the same Results: no clock is read, the statistics are exact or
seeded.
"""
from __future__ import annotations

import dataclasses
import json

from analysis import sequential
from analysis.compare import row_targets
from analysis.inputs.layout import MANIFEST
from analysis.compare.environment import environment, reproduce
from analysis.compare.errors import CompareError
from analysis.compare.families import metric_fdr
from analysis.compare.measurement import measurement
from analysis.compare.options import CompareOptions
from analysis.compare.profiler_cost import profiler_cost
from analysis.compare.profiles import main_names, profiles
from analysis.compare.saturation import saturation
from analysis.compare.stall_tma import agreement
from analysis.compare.stalls import section as stall_section
from analysis.compare.results import CaseInfo, Results, Settings
from analysis.compare.summary import summary
from analysis.compare.throughput import layout_spread, load_time, paired, throughput
from analysis.compare.tma import tma
from analysis.inputs.rundir import RunDir
from analysis.profile.stacks import Stacks


def _variants(run: RunDir, opts: CompareOptions) -> tuple[str, str]:
    names = run.variant_names
    where = run.path / MANIFEST
    if len(names) < 2:
        raise CompareError(f"{where}: needs two variants to compare, has {names}")
    base = opts.base or names[0]
    cand = opts.cand or next(n for n in names if n != base)
    for v in (base, cand):
        if v not in names:
            raise CompareError(f"{where}: no variant {v!r} (has {names})")
    return base, cand


def _settings(opts: CompareOptions, focus: list[str]) -> Settings:
    return Settings(opts.noise, opts.regression, opts.noise_pp, opts.regression_pp,
                    opts.thread or "auto", opts.top, opts.confidence, opts.max_cv, focus,
                    opts.min_share, opts.min_samples)


def _notes(run: RunDir, r: Results) -> list[str]:
    m = run.manifest
    notes = [m.dataset.l3_warning] if m.dataset.l3_warning else []
    if not r.throughput and not r.paired:
        notes.append("no throughput reps with bench.csv/bench.json/bench.txt (or RDB loads) on "
                     "both sides")
    failed = [f"{x.dir} ({x.reason or 'failed'})" for x in m.schedule if x.status == "failed"]
    if failed:
        notes.append("failed reps left out: " + "; ".join(failed))
    pending = [x.dir for x in m.schedule if x.status in ("pending", "running")]
    if pending:
        notes.append("run not finished; reps not done: " + ", ".join(pending))
    return notes


def _label(run: RunDir, r: Results) -> None:
    """The case's words for the title and the throughput rows (the raw test stays in
    `test`): one label per test the load generator named."""
    case = run.manifest.case
    r.case.label = case.label()
    r.case.overrides = [f"{k}={_value(v)}" for k, v in case.overrides.items()]
    for row in r.throughput + r.latency:
        row.label = case.label(None if _same_command(row.test, r.case.command) else row.test)
    for row in r.paired:         # both variants under the case's own load
        row.label = r.case.label


def _value(v: object) -> str:
    # a command list reads as the command line it sends; other values as YAML would
    if isinstance(v, list):
        return " ".join(str(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v) if isinstance(v, dict) else str(v)


def _same_command(test: str, command: list[str]) -> bool:
    # memtier's row and redis-benchmark's custom-command row are the case's own command
    words = test.split()
    return not command or (bool(words) and words[0].upper() == str(command[0]).upper())


def analyse(run: RunDir, opts: CompareOptions) -> Results:
    """The comparison of a run directory (nothing written)."""
    return analyse_with_profiles(run, opts)[0]


def analyse_with_profiles(run: RunDir, opts: CompareOptions) -> tuple[Results, dict[str, Stacks]]:
    """The comparison, and each variant's profile reps merged (what the report writes as
    `<variant>.folded` and renders flame graphs and pprof files from)."""
    m = run.manifest
    level = sequential.run_level(m.precision) if opts.run_level else None
    if level is not None:       # every interval at the level of the look that ended the run
        opts = dataclasses.replace(opts, confidence=level)
    if m.run_spread is not None:     # a paired run: its relative rows carry it (options.widened)
        opts = dataclasses.replace(opts, run_spread=m.run_spread)
    base, cand = _variants(run, opts)
    focus = opts.focus if opts.focus is not None else [str(f) for f in m.case.focus or []]
    r = Results(run_id=m.run_id, created=m.created,
                case=CaseInfo(str(m.case.name or ""), str(m.case.description or ""),
                              m.size, focus, list(m.case.workload.command or []),
                              working_set=m.case.working_set, keys=m.case.dataset.keys),
                base=base, cand=cand, settings=_settings(opts, focus))
    r.throughput, r.latency = throughput(run, base, cand, opts)
    r.paired = paired(run, base, cand, opts)
    r.throughput += load_time(run, base, cand, opts)      # rdb-load cases
    # a --precision run's main row (two-stage) is the one comparison it was planned for
    metrics = metric_fdr([x for x in r.throughput + r.latency if "two-stage" not in x.change.method], opts)
    _label(run, r)
    r.profile, merged = profiles(run, base, cand, focus, opts)
    r.saturation = saturation(run, base, cand, merged, main_names(run))
    r.profiler_cost = profiler_cost(run, base, cand, opts.confidence)
    r.tma = tma(run, base, cand)
    r.environment = environment(run, base, cand)
    r.reproduce = reproduce(run)
    r.fdr = [f for f in (metrics, r.profile.fdr, r.profile.movers_fdr) if f is not None]
    main = row_targets.main_row(r)
    reps = row_targets.floor_reps(m.precision, main.base.n if main is not None else None)
    missed = row_targets.mark(r, reps) if m.options.targets else []
    r.measurement = measurement(m, main, missed)
    r.measurement.layouts = layout_spread(run, base, cand, opts.confidence)
    r.stalls = stall_section(run, r, merged, opts)
    r.stalls.tma, r.stalls.tma_agree = agreement(r.stalls, r.tma.funnel)
    r.notes = _notes(run, r)
    r.summary = summary(r)
    return r, merged
