"""Do the perf-on and perf-off blocks of the paired reps tell one story?

Both servers are sampled at one rate in the same blocks, so perf's cost cancels in the
cand/base ratio, which is why a run may sample at the rate its function rows need (up to
~5% of the server: collectors/host/sample_cost.py). That holds only if perf costs both sides
alike: a cost that grows with what one side does (its stack depth, its cache misses under
the sampling interrupt) would tilt the ratio in the blocks perf is on. So each paired rep's
ratio over its perf-on windows is compared with its ratio over its perf-off windows, paired
over reps, with the interval of analysis/stats (the rep the unit), and judged by
equivalence (`judge`): the blocks agree only when the whole interval lies within +-TILT, the
throughput target a run aims at (a tilt inside it cannot move a verdict the run was planned
for); they disagree when it excludes 0 and passes the line; otherwise the run cannot tell.
An interval that merely holds 0, +0.2% [-1.1, +2.3] in the recorded A/A
tests/data/runs/aa-decides-emr-1, cannot rule out a tilt past the line: read as agreement,
it said "agree" of runs resampled from that A/A with a real 2% tilt planted in 21% of them
(bench/perf_tilt.py, `make bench` figure 11c); by equivalence (two one-sided tests, each at
2.5%) in 2.0-3.1% on each of nine recorded runs, where a right rule allows 2.5%.
"""
from __future__ import annotations

import math

from analysis import stats
from analysis.compare.pair_clusters import settled
from analysis.compare.results import ChangeOut
from analysis.compare.throughput import paired_docs
from analysis.inputs.option_specs import TARGET_THROUGHPUT
from analysis.inputs.rundir import RunDir

TILT = TARGET_THROUGHPUT     # the line a tilt must stay within for the blocks to agree (+-2%)


def judge(low: float, high: float, line: float = TILT) -> str:
    """"agree" (the interval [low, high] of the relative tilt lies within +-line), "disagree"
    (it excludes 0 and passes the line) or "cannot tell" (it holds 0 and passes the line)."""
    if -line <= low and high <= line:
        return "agree"
    return "cannot tell" if low <= 0 <= high else "disagree"


def _log_gmean(xs: list[float]) -> float | None:
    return sum(math.log(x) for x in xs) / len(xs) if xs else None


def rep_ratios(run: RunDir, base: str, cand: str) -> list[tuple[float, float]]:
    """(ratio over the perf-off windows, ratio over the perf-on windows) of each paired rep
    whose windows record perf's state, cand/base of the windows' geometric means; the windows
    the throughput is judged on (pair_clusters.settled: a profiled rep's cold first block
    left out, or it alone would tilt the off side's ratio)."""
    ok = {r.rep for r in run.manifest.reps(kind="paired") if r.status == "ok"}
    out = []
    for number, doc in paired_docs(run):
        wins = settled(doc.windows)
        if number not in ok or not any(w.perf is not None for w in wins):
            continue
        ratio = {}
        for on in (False, True):
            b = _log_gmean([w.rate for w in wins if w.perf is on and w.variant == base and w.rate])
            c = _log_gmean([w.rate for w in wins if w.perf is on and w.variant == cand and w.rate])
            if b is None or c is None:
                break
            ratio[on] = math.exp(c - b)
        else:
            out.append((ratio[False], ratio[True]))
    return out


def agreement(run: RunDir, base: str, cand: str, confidence: float = 0.95) -> ChangeOut | None:
    """The change of the cand/base ratio from the perf-off blocks to the perf-on ones, over the
    paired reps; None with fewer than stats.MIN_N reps that have both."""
    pairs = rep_ratios(run, base, cand)
    if len(pairs) < stats.MIN_N:
        return None
    ch = stats.compare([off for off, _ in pairs], [on for _, on in pairs], paired=True,
                       higher_is_better=True, confidence=confidence)
    return ChangeOut.of(ch, "ratio")
