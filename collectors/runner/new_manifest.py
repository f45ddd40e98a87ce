"""The manifest of a new run (docs/run-directory.md): what runs, on what, in which order,
and how throughput is measured (paired or not: collectors/runner/pairing.py)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from analysis.clock import id_stamp, now_iso, parse_iso
from analysis.inputs.case import Case
from analysis.inputs.host import HostFacts
from analysis.inputs.manifest import (Manifest, PairedPlan, Pairing, PrecisionPlan, Profiling, Rep, Variant,
                                      Warmup)
from collectors.collector import ManifestSections
from collectors.runner.options import RunOptions
from collectors.runner.placement import placement
from collectors.runner.rep_order import build_rep_order


def rep_seconds(r: Rep) -> float | None:
    """Wall seconds a finished rep took (from its started/finished times, 1 s resolution)."""
    a, b = parse_iso(r.started), parse_iso(r.finished)
    return (b - a).total_seconds() if a and b else None


def unique_id(base: str, out: Path) -> str:
    """`base`, or base-2, base-3 ... where out/base is taken."""
    rid, i = base, 2
    while (out / rid).exists():
        rid, i = f"{base}-{i}", i + 1
    return rid


def new_run_id(name: str, out: Path) -> str:
    """The one id of a new run, sweep or experiment directory: <date>-<time>-<name>
    (`/` and `@` as `_`), with -2, -3 ... when that directory exists already."""
    return unique_id(f"{id_stamp()}-{name.replace('/', '_').replace('@', '_')}", out)


def profiling(case: Case, opts: RunOptions) -> Profiling:
    if opts.profile == "off":
        return Profiling("off", "off", note="no CPU profile collected")
    if case.workload.tool == "rdb-load":
        return Profiling(opts.profile, "off",
                         note="rdb-load case: the measured phase is the server start; not profiled")
    # perf records cpu-clock (a software event: it works without a PMU); a plugin that
    # profiles otherwise replaces this block through its manifest_sections.
    return Profiling(opts.profile, "separate", event="cpu-clock" if opts.profile == "perf" else None,
                     frequency_hz=opts.frequency_hz, reps_per_variant=opts.profile_reps,
                     note=_profiling_note(opts))


def _profiling_note(opts: RunOptions) -> str:
    """Where the profiles come from: a paired run's perf samples its paired reps' windows
    (both servers in the same blocks, perf off in the others); separate profile reps run the
    same load with perf attached."""
    separate = ("profile reps run the same load with perf attached (their bench.csv shows the "
                "profiled throughput)")
    if not (opts.paired and opts.profile == "perf"):
        return f"throughput reps are unprofiled; {separate}"
    windows = ("perf samples the paired reps' windows: both servers at one rate in the same "
               "blocks of windows, perf off in the others (the report measures perf's cost from "
               "the two and checks that they agree)")
    return windows + (f"; {opts.profile_reps} separate {separate}" if opts.profile_reps else "")


def make_manifest(run_id: str, case: Case, variants: dict[str, Variant], opts: RunOptions,
                  command: list[str], host: HostFacts, tools: dict[str, str | None],
                  paired: PairedPlan | None = None, pairing: Pairing | None = None) -> Manifest:
    """The new run's manifest; `paired` and `pairing` are collectors.runner.pairing.choose's
    decision (opts.paired says the same)."""
    w = case.workload
    m = Manifest(run_id=run_id, created=now_iso(), command=command, case=case.to_json(),
                 size=case.size, variants=dict(variants),
                 host=host, tools=tools, placement=placement(case.server.io_threads),
                 profiling=profiling(case, opts),
                 schedule=build_rep_order(list(variants), opts, w.tool))
    m.warmup = Warmup(mode="per-rep" if w.warmup_s > 0 and w.tool != "rdb-load" else "none",
                      seconds=w.warmup_s,
                      note="each rep first runs the load for warmup_s (raw output warmup.csv), "
                           "then the measured run (bench.csv)")
    m.options = dataclasses.replace(opts)    # a copy: what was asked, as it was asked
    m.calibration = {}
    m.paired, m.pairing = paired, pairing
    if opts.precision is not None or opts.targets:
        # what was asked (target, budget, first stage, --on) is options only (manifest schema 4)
        m.precision = PrecisionPlan()
    return m


def apply_sections(m: Manifest, sections: ManifestSections) -> None:
    """A plugin's manifest sections: each one it set replaces the runner's."""
    if sections.tma is not None:
        m.tma = sections.tma
    if sections.profiling is not None:
        m.profiling = sections.profiling
