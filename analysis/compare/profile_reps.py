"""The profile reps of a run: their stacks, whether the weights are CPU time in ns, and
how many operations the load generator completed while each was recorded.

A profile rep holds perf.folded (perf record | perf script | inferno-collapse-perf) or
profile.pb.gz (a Parca query). The operation count is what turns a function's weight into
CPU time per operation (analysis/compare/per_op.py); docs/results-json.md gives the rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.inputs.layout import BENCH_FILES, PERF_FOLDED, PROFILE_PB
from analysis.compare.errors import CompareError
from analysis.compare.throughput import bench_rows, case_command
from analysis.inputs.manifest import Profiling
from analysis.inputs.collector_facts import TIME_EVENTS
from analysis.inputs.repfacts import RepFacts
from analysis.inputs.rundir import RunDir, read_rep_facts
from analysis.profile import pprof
from analysis.profile.stacks import FoldedError, Stacks, read_folded


@dataclass
class WindowOps:
    """Operations completed in one rep's profile window, or why they are unknown."""
    ops: float | None
    basis: str               # how they were counted; the reason when ops is None


@dataclass
class ProfileRep:
    rep: int
    dir: Path
    stacks: Stacks
    ops: WindowOps
    ns: bool                 # the weights are nanoseconds of CPU time
    # The weight of one sample (1 for sample counts, ~1e9/Hz ns for cpu-clock periods),
    # so a function's weight says how many samples it rests on; None when unknown.
    sample_weight: float | None = None


def load_stacks(d: Path) -> Stacks | None:
    if (d / PERF_FOLDED).is_file():
        return read_folded(d / PERF_FOLDED)
    if (d / PROFILE_PB).is_file():
        return pprof.read_pprof(d / PROFILE_PB)
    return None


def weights_not_ns(rep_dir: Path, stacks: Stacks, profiling: Profiling,
                   facts: RepFacts) -> str | None:
    """None when the rep's weights are nanoseconds of CPU time, else why not.

    pprof (Parca) weights are ns already. A perf.folded of a cpu-clock/task-clock
    recording sums sample periods (~1e9/hz ns each) when inferno folds periods; a
    count-per-sample fold would be taken for ns and make every per-op number a million
    times too small, so the sample count perf recorded must agree."""
    if stacks.unit == "nanoseconds":
        return None
    perf = facts.perf
    ev = (perf.event if perf else None) or profiling.event
    if ev not in TIME_EVENTS:
        return (f"{rep_dir.name}: folded weights are not CPU time (perf event "
                f"{ev or 'not recorded'}; cpu-clock periods are ns)")
    hz = (perf.frequency_hz if perf else None) or profiling.frequency_hz
    n_samples = perf.samples if perf else None
    if hz and n_samples:
        per = stacks.total / n_samples
        if not 0.5 < per * hz / 1e9 < 2.0:
            return (f"{rep_dir.name}: perf.folded holds {per:.4g} per sample, "
                    f"not the ~{1e9 / hz:.4g} ns period of {hz} Hz cpu-clock")
    return None


def window_ops(rep_dir: Path, facts: RepFacts, command: list[str]) -> WindowOps:
    """Operations completed in the profile window of one rep.

    The rep's own ops/s (its load generator ran under the profiler) × the seconds perf
    was attached (rep.json collectors.perf.window_s, else the planned
    window.profile_window_s), capped at the requests the load generator completed (-n):
    perf may outlive the load. A rep whose window has neither (the hand-recorded layout of
    tests/data/runs/record.sh) had perf attached before the load started and stopped after
    it ended, so all -n requests fall inside the profile."""
    perf = facts.perf
    if perf is not None and perf.sampled_commands is not None:
        # Profile windows: the server's own command count over exactly the windows perf
        # sampled (collectors/profilers/perf/windows.py).
        return WindowOps(float(perf.sampled_commands),
                         "the server's commands in the windows perf sampled (INFO stats)")
    if not any((rep_dir / f).is_file() for f in BENCH_FILES):
        return WindowOps(None, "the profile reps hold no load-generator output (no operation count)")
    try:
        rows = bench_rows(rep_dir, command)
    except ValueError as e:
        return WindowOps(None, f"unreadable load-generator output: {e}")
    if len(rows) != 1:
        return WindowOps(None, f"{len(rows)} tests in one profile rep: the window mixes "
                               "operations of different commands")
    n, win = facts.requests, facts.window
    perf_s = facts.perf.window_s if facts.perf else None
    secs, what = ((perf_s, "perf's recorded attach time") if perf_s
                  else (win.profile_window_s if win else None, "the planned profile window"))
    if secs:
        ops = rows[0].ops_per_sec * float(secs)
        if n is not None and ops > n:
            return WindowOps(n, f"all {n:,.0f} requests of the load (perf outlived the load)")
        return WindowOps(ops, f"the rep's ops/s × {what}")
    if n is not None and win is not None and win.perf_covers_load:
        return WindowOps(n, "all requests of the load (-n): perf was attached before the "
                            "load started and stopped after it ended")
    return WindowOps(None, f"{rep_dir.name}: no profile window or request count in rep.json")


def sample_weight(stacks: Stacks, profiling: Profiling, facts: RepFacts) -> float | None:
    """The weight one sample adds: perf's own sample count when rep.json has it (total
    weight / samples), else the cpu-clock period 1e9/Hz for time-weighted folds, 1 for
    folds of plain counts."""
    perf = facts.perf
    if perf is not None and perf.samples and stacks.total > 0:
        return stacks.total / perf.samples
    hz = (perf.frequency_hz if perf else None) or profiling.frequency_hz
    ev = (perf.event if perf else None) or profiling.event
    if stacks.unit == "nanoseconds" or (ev in TIME_EVENTS and _looks_like_periods(stacks)):
        return 1e9 / hz if hz else None
    return 1.0 if stacks.unit == "samples" and not _looks_like_periods(stacks) else None


def _looks_like_periods(stacks: Stacks) -> bool:
    # inferno folds cpu-clock sample periods (~1e6 ns at 999 Hz): no stack weighs < 1000
    return bool(stacks.weights) and min(stacks.weights.values()) >= 1000


def _rep(run: RunDir, rep_no: int, d: Path, stacks: Stacks) -> ProfileRep:
    facts = read_rep_facts(d)
    why_not = weights_not_ns(d, stacks, run.manifest.profiling, facts)
    ops = WindowOps(None, why_not) if why_not else window_ops(d, facts, case_command(run))
    return ProfileRep(rep_no, d, stacks, ops, why_not is None,
                      sample_weight(stacks, run.manifest.profiling, facts))


def paired_profiles(run: RunDir, variants: tuple[str, ...]) -> dict[str, list[ProfileRep]]:
    """Each paired rep's profile of each variant (collectors/profilers/perf/paired.py: perf
    in the paired windows; perf-<variant>.folded, rep.json collectors["perf:<variant>"]),
    numbered by the paired rep: the k-th of each variant are a pair. Empty when the run's
    paired reps hold no profiles (made before they did, or with --profile off)."""
    out: dict[str, list[ProfileRep]] = {v: [] for v in variants}
    for rep in run.manifest.reps(kind="paired"):
        d = run.rep_dir(rep)
        facts = read_rep_facts(d)
        got = {}
        for v in variants:
            pf = facts.perf_of(v)
            path = d / (pf.file if pf is not None and pf.file else f"perf-{v}.folded")
            if pf is None or not path.is_file():
                break
            try:
                stacks = read_folded(path)
            except (FoldedError, ValueError) as e:
                raise CompareError(str(e)) from None
            if stacks.total <= 0 or not pf.sampled_commands:
                break
            got[v] = ProfileRep(rep.rep, d, stacks,
                                WindowOps(float(pf.sampled_commands),
                                          "the server's own count of the case's command in the "
                                          "paired windows perf sampled (INFO commandstats)"),
                                pf.weights_are_ns,
                                stacks.total / pf.samples if pf.samples else None)
        if len(got) == len(variants):        # a pair, or nothing from this rep
            for v in variants:
                out[v].append(got[v])
    _mark_ns(out)
    return out


def _mark_ns(out: dict[str, list[ProfileRep]]) -> None:
    if all(r.ns for reps in out.values() for r in reps):
        # cpu-clock folds: the weights are ns, so say so in results.json, the flame
        # graphs and the pprof files (one unit for all reps: they are merged and diffed).
        for reps in out.values():
            for r in reps:
                r.stacks.unit = "nanoseconds"


def load(run: RunDir, variants: tuple[str, ...]) -> dict[str, list[ProfileRep]]:
    """Every profile rep with samples, per variant, in rep order: the paired reps' profiles
    when the run has them (they pair), else the separate profile reps."""
    paired = paired_profiles(run, variants)
    if all(paired[v] for v in variants):
        return paired
    out: dict[str, list[ProfileRep]] = {}
    for v in variants:
        reps = []
        for rep in run.manifest.reps(v, "profile"):
            d = run.rep_dir(rep)
            try:
                s = load_stacks(d)
            except (FoldedError, ValueError) as e:
                raise CompareError(str(e)) from None
            if s is not None and s.total > 0:
                reps.append(_rep(run, rep.rep, d, s))
        out[v] = sorted(reps, key=lambda r: r.rep)
    _mark_ns(out)
    return out


def are_paired(reps: dict[str, list[ProfileRep]]) -> bool:
    """Profiles from paired reps: the k-th of each variant were measured side by side."""
    return all(r.dir.name and (r.dir / "paired.json").is_file() for rs in reps.values() for r in rs) \
        and len({tuple(r.rep for r in rs) for rs in reps.values()}) == 1
