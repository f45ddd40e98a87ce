"""After a run: keep its spread as this host's noise (collectors/host/noise.py), so that
plans know how many reps a change needs here. Paired runs and runs of A/B blocks count;
a failure to read or write the store never fails the run (it is a cache)."""
from __future__ import annotations

from pathlib import Path

from analysis.compare.throughput import main_log_ratios
from analysis.inputs.layout import INCACHE_DIR
from analysis.inputs.manifest import Rep
from analysis.inputs.rundir import RunDir
from analysis.compare.profiler_cost import profiler_cost
from analysis.compare.saturation import WORKING, main_busy
from collectors.host import noise, sample_cost
from collectors.runner.context import RunContext
from collectors.runner.new_manifest import rep_seconds


def keep(run: RunContext) -> bool:
    m = run.manifest
    names = list(run.variants)
    if m.pairing is None or len(names) != 2:
        return False
    try:
        ratios = main_log_ratios(RunDir(run.run_dir, m), names[0], names[1])
    except (OSError, ValueError):
        return False
    kind = "paired" if m.paired is not None else "throughput"
    secs = [s for r in m.schedule if r.kind == kind and r.status == "ok"
            if (s := rep_seconds(r)) is not None]
    per_unit = 1 if kind == "paired" else len(names)      # a block is one rep of each variant
    fixed, wall = rep_costs(run) if kind == "paired" else ([], [])
    try:
        return noise.record(m.host, run.case.name, size_key(run.run_dir, run.case.size),
                            noise.entry(record_id(run.run_dir, m.run_id), m.pairing.mode,
                                        m.pairing.aa, ratios, [s * per_unit for s in secs],
                                        m.created, fixed, wall))
    except OSError:
        return False


def record_id(run_dir: Path, run_id: str) -> str:
    """The run a record is kept under: an in-cache control's run id is its directory's name,
    "incache", the same for every control, and a record replaces one of its own run; so a
    control is kept as "<its run>/incache" and the controls of successive runs add up."""
    return f"{run_dir.parent.name}/{INCACHE_DIR}" if run_dir.name == INCACHE_DIR else run_id


def size_key(run_dir: Path, size: str) -> str:
    """The size a run's spread is kept under: an in-cache control's is its own ("incache"),
    not its run's size's (stall_control.py), though its case keeps that size."""
    return "incache" if run_dir.name == INCACHE_DIR else size


def rep_costs(run: RunContext) -> tuple[list[float], list[float]]:
    """Each ok paired rep's seconds outside its windows and per window, from the phases it
    booked (rep.json `phases`) and its windows (paired.json): what a plan of windows and reps
    needs (collectors/runner/rep_plan.py). Reps without phases give nothing."""
    fixed, wall = [], []
    rd = RunDir(run.run_dir, run.manifest)
    for r in run.manifest.reps(kind="paired"):
        if (got := rep_cost(rd, r, run.opts.paired_windows)) is not None:
            fixed.append(got[0])
            wall.append(got[1])
    return fixed, wall


def rep_cost(rd: RunDir, r: Rep, windows: int | None) -> tuple[float, float] | None:
    """An ok paired rep's (seconds outside its windows, seconds per window); its windows
    counted from rep.json (a run planned again after its first rep has reps of two sizes:
    collectors/runner/replan.py), else `windows`. None: not ok, or no phases booked."""
    if r.status != "ok" or (total := rep_seconds(r)) is None:
        return None
    try:
        facts = rd.facts(r)
    except (OSError, ValueError):
        return None
    windows_s = (facts.phases or {}).get("windows")
    n = len(facts.paired.order) if facts.paired is not None and facts.paired.order else windows
    if not windows_s or not n:
        return None
    return max(total - windows_s, 0.0), windows_s / n


def keep_sample_cost(run: RunContext) -> bool:
    """After a run that profiled: what one perf sample cost the server here, for this case at
    this size, so the next run's rate keeps perf's predicted cost within its budget (5% of the
    server's CPU, 1% in a --quick run: host/sample_cost.py). A failure to read or write the
    store never fails the run."""
    m = run.manifest
    names = list(run.variants)
    if len(names) != 2 or run.opts.profile != "perf" or run.run_dir.name == INCACHE_DIR:
        return False     # a control's in-cache dataset costs a sample differently
    try:
        got = measured_cost(RunDir(run.run_dir, m), names[0], names[1])
        return got is not None and sample_cost.record(m.host, m.run_id, *got, case=run.case.name,
                                                      size=run.case.size)
    except (OSError, ValueError):
        return False


def measured_cost(rd: RunDir, base: str, cand: str) -> tuple[int, float, float] | None:
    """(rate, overhead, its standard error) of a run's perf on/off windows, or None: not
    measured, or a server main thread under 80% busy (perf's CPU shows in throughput only
    when the server is the bottleneck; a client-bound run would call sampling free)."""
    if any((main_busy(rd, v) or 0.0) < WORKING for v in (base, cand)):
        return None
    cost = profiler_cost(rd, base, cand)
    p = cost.pooled
    if not cost.available or p is None or p.rel is None or p.rel_ci_low is None \
            or not cost.frequency_hz:
        return None
    se = (p.rel_ci_high - p.rel_ci_low) / (2 * 1.96)     # its 95% interval, as one s.e.
    return int(cost.frequency_hz), -p.rel, se
