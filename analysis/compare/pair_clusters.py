"""Window pairs -> the unit a paired interval may treat as independent: the rep.

Paired windows (--paired, and the profile reps' perf off/on windows) give many pairs per
rep, but on the 2-core VM they are not independent draws. What a prefetch buys moves with
the host's memory contention and with each server start, so reps differ by more than their
windows do. Measured (MSET 50 keys over 10M keys, two builds paired, 0.25 s windows):

- within one rep of 320 pairs (160 s of windows), the means of 16 s blocks of pairs had an
  sd of 0.025 (log ratio), close to the 0.020 that independent pairs would give, and the
  pairs' lag-1 autocorrelation was 0.2, ~0 beyond;
- across the demo's 5 reps (a server start each), the reps' mean log ratios were 0.18 ...
  0.35 (sd 0.06; Kruskal-Wallis across reps p = 0.005).

A signed-rank interval over all pairs would count the 32 pairs of one rep as 32 independent
facts about the change and come out 2-3x too narrow. So with at least MIN_REPS reps the
interval is over the reps: each rep's pairs summarised by their geometric means (base,
candidate), compared as pairs (analysis.stats: signed-rank, or a paired t-interval with
few reps). With fewer reps there is no between-rep interval to give: the window pairs are
used, and the method says that the interval leaves out rep-to-rep variation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from analysis import stats
from analysis.inputs.paired import PairedWindow

MIN_REPS = stats.MIN_N      # fewest reps for an interval over reps
SETTLE_MIN = 16             # windows a profiled rep needs before its cold first block is left out


@dataclass(frozen=True)
class Unit:
    """One value pair of the interval: a rep's geometric means, or a single window pair."""
    rep: int
    base: float
    cand: float


def settled(windows: list[PairedWindow]) -> list[PairedWindow]:
    """The windows of a paired rep that a comparison uses: all of them, but where perf
    sampled the windows (collectors/profilers/perf/paired.py) the first block before perf
    first switched on (the first ABBA block of four, perf off) is left out. Its first window
    runs cold: right after both perf record processes attached, and in every rep of
    tests/data/runs/mset-aa-paired-small it ran 11-33% (mean 22%) below the same server's
    median window, the next three 3-6%. That one window read perf as 4.8% faster in its
    sandwich and tilted the paired throughput. The unprofiled recorded runs (mset-aa-default,
    mset-demo-paired, noise-*, whose first server also waited out the second's warm-up)
    show nothing of the kind (first windows -7% ... +20%, no lean), so the cause is the
    attach, not the wait, and only profiled reps drop the block; the whole block, not the
    window alone, so the pairs left stay in ABBA balance (as many a-first as b-first). A
    rep of fewer than SETTLE_MIN windows keeps them all: its first block would be a quarter
    of its windows or more (a CI-size sweep point runs 4)."""
    if len(windows) < SETTLE_MIN:
        return list(windows)
    first_on = next((i for i, w in enumerate(windows) if w.perf), None)
    if first_on is None or not any(w.perf is False for w in windows[:first_on]):
        return list(windows)
    return list(windows[first_on:])


def _clean(pairs_by_rep: dict[int, list[tuple[float, float]]]) -> dict[int, list[tuple[float, float]]]:
    """Pairs with a value <= 0 have no ratio: left out (and reps left without pairs)."""
    clean = {r: [(b, c) for b, c in ps if b > 0 and c > 0] for r, ps in sorted(pairs_by_rep.items())}
    return {r: ps for r, ps in clean.items() if ps}


def rep_units(pairs_by_rep: dict[int, list[tuple[float, float]]]) -> list[Unit]:
    """One unit per rep: the geometric means of its base and its cand windows, in rep order."""
    return [Unit(r, _gmean([b for b, _ in ps]), _gmean([c for _, c in ps]))
            for r, ps in _clean(pairs_by_rep).items()]


def units(pairs_by_rep: dict[int, list[tuple[float, float]]]) -> tuple[list[Unit], str]:
    """pairs_by_rep: rep -> [(base, cand)] window pairs. Returns the units of the interval
    and the sentence for its method."""
    clean = _clean(pairs_by_rep)
    npairs = sum(len(ps) for ps in clean.values())
    if len(clean) >= MIN_REPS:
        out = rep_units(clean)
        return out, (f"over {len(out)} reps, each the geometric mean of its window pairs "
                     f"({npairs} pairs in all): pairs of one rep are not independent")
    out = [Unit(r, b, c) for r, ps in clean.items() for b, c in ps]
    return out, (f"over {npairs} window pairs of {len(clean)} rep(s): with fewer than "
                 f"{MIN_REPS} reps this interval leaves out the rep-to-rep variation "
                 "(on a shared host often the larger part)")


def _gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))
