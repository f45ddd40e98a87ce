"""The manifest of a new run (docs/run-directory.md): what runs, on what, in which order,
and the paired plan of config-only variants."""
from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from analysis.inputs.case import Case
from analysis.inputs.manifest import Manifest, PairedPlan, Profiling, Variant
from collectors.runner.options import RunError, RunOptions
from collectors.runner.placement import placement
from collectors.runner.schedule import build_schedule
from collectors.workload.dataset import keyspace_bytes_estimate


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(case_name: str, out: Path) -> str:
    """<date>-<time>-<case>, with -2, -3 ... when that directory exists already."""
    base = f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{case_name.replace('/', '_').replace('@', '_')}"
    rid, i = base, 2
    while (out / rid).exists():
        rid, i = f"{base}-{i}", i + 1
    return rid


def profiling(case: Case, opts: RunOptions) -> Profiling:
    if opts.profile == "off":
        return Profiling("off", "off", note="no CPU profile collected")
    if case.workload.tool == "rdb-load":
        return Profiling(opts.profile, "off",
                         note="rdb-load case: the measured phase is the server start; not profiled")
    # perf records cpu-clock (a software event: it works without a PMU); a plugin that
    # profiles otherwise replaces this block through its manifest_sections.
    return Profiling(opts.profile, "separate", event="cpu-clock" if opts.profile == "perf" else None,
                     frequency_hz=opts.freq_hz, reps_per_variant=opts.profile_reps,
                     note="throughput reps are unprofiled; profile reps run the same load "
                          "with perf attached (their bench.csv shows the profiled throughput)")


def make_manifest(run_id: str, case: Case, variants: dict[str, Variant], opts: RunOptions,
                  command: list[str], host: dict[str, Any], tools: dict[str, Any]) -> Manifest:
    w = case.workload
    m = Manifest(run_id=run_id, created=now_iso(), command=command, case=case.to_json(),
                 size=case.size, variants=dict(variants),
                 host=host, tools=tools, placement=placement(case.server.io_threads),
                 profiling=profiling(case, opts),
                 schedule=build_schedule(list(variants), opts, w.tool))
    m.warmup = {"mode": "per-rep" if w.warmup_s > 0 and w.tool != "rdb-load" else "none",
                "seconds": w.warmup_s,
                "note": "each rep first runs the load for warmup_s (raw output warmup.csv), then "
                        "the measured run (bench.csv)"}
    m.options = asdict(opts)
    m.calibration = {}
    m.load_generator = {}
    if opts.paired:
        m.paired = paired_plan(variants, opts, case, host.get("memory_bytes"))
    return m


def apply_sections(m: Manifest, sections: dict[str, Any]) -> None:
    """Plugins' manifest sections: a typed section (e.g. "tma") is read into its record,
    anything else is kept as given."""
    for k, v in sections.items():
        current = getattr(m, k, None)
        setattr(m, k, type(current).from_json(v, k) if hasattr(current, "from_json") else v)


def paired_plan(variants: dict[str, Variant], opts: RunOptions, case: Case | None = None,
                memory_bytes: int | None = None) -> PairedPlan:
    """What --paired alternates between: the differing settings of one binary (mode
    "config", one process), or two builds loaded at once (mode "servers"), memory permitting."""
    names = list(variants)
    if len(names) != 2:
        raise RunError(f"--paired needs exactly two variants (got {len(names)})")
    a, b = (variants[n] for n in names)
    common = dict(window_s=opts.paired_window_s, windows=opts.paired_windows, variants=names,
                  counter="INFO stats total_commands_processed")
    if a.binary_sha256 != b.binary_sha256:
        _check_room_for_two(case, memory_bytes)
        return PairedPlan(mode="servers", values={n: dict(variants[n].config or {}) for n in names},
                          **common)
    keys = sorted(set(a.config or {}) | set(b.config or {}))
    keys = [k for k in keys if (a.config or {}).get(k) != (b.config or {}).get(k)]
    if not keys:
        raise RunError(f"--paired: {names[0]} and {names[1]} are the same build with the same "
                       "config; nothing to compare")
    return PairedPlan(mode="config", setting=keys,
                      values={n: {k: (variants[n].config or {}).get(k) for k in keys} for n in names},
                      **common)


# Two servers each hold the dataset (about +-30% estimated), plus the allocator's slack.
TWO_SERVER_HEADROOM = 1.5


def _check_room_for_two(case: Case | None, memory_bytes: int | None) -> None:
    if case is None or not memory_bytes:
        return
    need = 2 * TWO_SERVER_HEADROOM * keyspace_bytes_estimate(case)
    if need > 0.8 * memory_bytes:
        raise RunError(f"--paired with two builds keeps both servers loaded at once: about "
                       f"{need / 2**30:.1f} GiB for case {case.name} (size {case.size}), more than "
                       f"80% of this host's {memory_bytes / 2**30:.1f} GiB. Run without --paired "
                       "(a server restart per rep, wider intervals) or at a smaller --size")
