"""What the profiler cost the server, measured in the run itself.

Profile reps sample in every other window (ABBA: off on on off ..., rep.json
collectors.perf.windows), each window's throughput counted on the server. The cost is the
paired change from an "off" window to the "on" window beside it, on the log scale (a
ratio), with the interval of its method (analysis.stats), per variant and for both
variants pooled. Profiles of runs made before profile windows existed have no such
windows: the section says so.
"""
from __future__ import annotations

from analysis import stats
from analysis.compare.results import ChangeOut, ProfilerCost
from analysis.inputs.rundir import RunDir


def window_pairs(windows: list[dict]) -> list[tuple[float, float]]:
    """(off, on) throughput of neighbouring windows: each block of two holds one of each."""
    out = []
    for i in range(0, len(windows) - 1, 2):
        a, b = windows[i], windows[i + 1]
        if a.get("perf") == b.get("perf") or not a.get("ops_per_s") or not b.get("ops_per_s"):
            continue
        off, on = (a, b) if not a["perf"] else (b, a)
        out.append((float(off["ops_per_s"]), float(on["ops_per_s"])))
    return out


def _pairs(run: RunDir, variant: str) -> list[tuple[float, float]]:
    pairs = []
    for rep in run.manifest.reps(variant, "profile"):
        perf = run.facts(rep).perf
        if perf is not None and perf.windows and perf.windows_error is None:
            pairs += window_pairs(perf.windows)
    return pairs


def _cost(pairs: list[tuple[float, float]], confidence: float) -> ChangeOut:
    # "on" against "off": a cost shows as a fall; lower on-throughput is the worse side.
    ch = stats.compare([p[0] for p in pairs], [p[1] for p in pairs], paired=True,
                       higher_is_better=True, confidence=confidence)
    return ChangeOut.of(ch, "ops/s")


def profiler_cost(run: RunDir, base: str, cand: str, confidence: float = 0.95) -> ProfilerCost:
    prof = run.manifest.profiling
    pairs = {v: _pairs(run, v) for v in (base, cand)}
    if not any(pairs.values()):
        return ProfilerCost(False, reason="the profile reps sampled without windows (made before "
                                          "stallscope measured the profiler's cost, or "
                                          "--profile-windows 0)",
                            frequency_hz=prof.frequency_hz)
    per = {v: _cost(p, confidence) for v, p in pairs.items() if len(p) >= stats.MIN_N}
    pooled = [x for p in pairs.values() for x in p]
    return ProfilerCost(True, frequency_hz=prof.frequency_hz,
                        pairs={v: len(p) for v, p in pairs.items()}, per_variant=per,
                        pooled=_cost(pooled, confidence) if len(pooled) >= stats.MIN_N else None)
