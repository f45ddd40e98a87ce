"""What the profiler cost the server, measured in the run itself.

Profile reps sample in every other window (ABBA: off on on off ..., rep.json
collectors.perf.windows), each window's throughput counted on the server. The cost is the
paired change from an "off" window to the "on" window beside it, on the log scale (a
ratio), with the interval of its method (analysis.stats) over the profile reps, each
its pairs' geometric means (pair_clusters.py: pairs of one rep are not independent), per
variant and for both variants pooled. In paired reps perf is on in whole ABBA blocks, and
each "on" block is weighed against the "off" blocks on both sides (sandwiches: a rep's
drift cancels). Profiles of runs made before profile windows existed have no such windows:
the section says so.
"""
from __future__ import annotations

import math
from itertools import groupby

from analysis import stats
from analysis.compare import pair_clusters, perf_blocks
from analysis.compare.results import ChangeOut, ProfilerCost
from analysis.compare.throughput import cold_note
from analysis.inputs.collector_facts import ProfileWindow
from analysis.inputs.layout import PAIRED_JSON
from analysis.inputs.paired import read_paired
from analysis.inputs.rundir import RunDir


def window_pairs(windows: list[ProfileWindow]) -> list[tuple[float, float]]:
    """(off, on) throughput of neighbouring windows: each block of two holds one of each."""
    out = []
    for i in range(0, len(windows) - 1, 2):
        a, b = windows[i], windows[i + 1]
        if a.perf == b.perf or not a.ops_per_s or not b.ops_per_s:
            continue
        off, on = (a, b) if not a.perf else (b, a)
        out.append((float(off.ops_per_s), float(on.ops_per_s)))
    return out


PAIRED = "paired"     # the key of a paired rep's pairs: both servers of the rep share it


def _pairs(run: RunDir, variant: str) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """(source, rep) -> the rep's (off, on) window pairs: the paired reps' when perf
    sampled their windows (source PAIRED), else the profile reps' (source the variant: each
    a server start of its own)."""
    paired = _paired_rep_pairs(run, variant)
    if paired:
        return paired
    out = {}
    for rep in run.manifest.reps(variant, "profile"):
        perf = run.facts(rep).perf
        if perf is not None and perf.windows and perf.windows_error is None:
            out[(variant, rep.rep)] = window_pairs(perf.windows)
    return out


def _paired_rep_pairs(run: RunDir, variant: str) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """Paired reps with perf in their windows (collectors/profilers/perf/paired.py: perf on
    in a share of the ABBA blocks): the variant's rate in each run of "on" blocks against
    the "off" blocks on both sides of it, each block its windows' geometric mean (the same server,
    seconds apart)."""
    out = {}
    for rep in run.manifest.reps(kind="paired"):
        path = run.rep_dir(rep) / PAIRED_JSON
        if not path.is_file():
            continue
        wins = pair_clusters.settled(read_paired(path).windows)   # the cold first block out
        if not any(w.perf is not None for w in wins):
            continue
        # a block: the windows of one perf state in a row (whole ABBA blocks, or pairs of
        # windows in a short rep: collectors/abba.block_schedule)
        blocks: list[tuple[bool, float]] = []
        for on, run_ in groupby(wins, key=lambda w: w.perf):
            mine = [w.rate for w in run_ if w.variant == variant and w.rate]
            if mine and on is not None:
                blocks.append((bool(on), _gmean(mine)))
        pairs = sandwiches(blocks)
        if pairs:
            out[(PAIRED, rep.rep)] = pairs
    return out


def sandwiches(blocks: list[tuple[bool, float]]) -> list[tuple[float, float]]:
    """(off, on) for each "on" block between two "off" blocks: off the geometric mean of the
    two. Runs of one perf state merge ABBA's halves (off | on on | off off | on on | off), so
    neighbouring blocks alternate and every "off" block precedes the "on" block after it:
    pairing each "on" block with the block before it (this module did until 2026-11-27) put
    "on" later in every pair, and a rep whose rate drifts (it rises as the servers warm)
    read as perf making the server faster (tests/data/runs/mset-aa-paired-small: "on"
    after "off" +1.5%, before "off" -0.6%). Both neighbours cancel a linear drift; an "on"
    block at a rep's end, with one neighbour, is left out."""
    out = []
    for i in range(1, len(blocks) - 1):
        (before_on, before), (on, rate), (after_on, after) = blocks[i - 1], blocks[i], blocks[i + 1]
        if on and not before_on and not after_on:
            out.append((math.sqrt(before * after), rate))
    return out


def _gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _cost(pairs: dict[tuple[str, int], list[tuple[float, float]]], confidence: float
          ) -> ChangeOut | None:
    # Reps are the units when there are enough (pair_clusters.py); keys made sortable ints.
    keyed = {i: ps for i, (_, ps) in enumerate(sorted(pairs.items()))}
    units, how = pair_clusters.units(keyed)
    if len(units) < stats.MIN_N:
        return None
    # "on" against "off": a cost shows as a fall; lower on-throughput is the worse side.
    ch = stats.compare([u.base for u in units], [u.cand for u in units], paired=True,
                       higher_is_better=True, confidence=confidence)
    out = ChangeOut.of(ch, "ops/s")
    out.method += "; " + how
    return out


def profiler_cost(run: RunDir, base: str, cand: str, confidence: float = 0.95) -> ProfilerCost:
    prof = run.manifest.profiling
    hz = _paired_frequency(run) or prof.frequency_hz
    pairs = {v: _pairs(run, v) for v in (base, cand)}
    counts = {v: sum(len(ps) for ps in p.values()) for v, p in pairs.items()}
    if not any(counts.values()):
        return ProfilerCost(False, reason="the profile reps sampled without windows (made before "
                                          "stallscope measured the profiler's cost, or "
                                          "--profile-windows 0)",
                            frequency_hz=hz)
    per = {v: c for v, p in pairs.items() if (c := _cost(p, confidence)) is not None}
    both = _cost(pooled(pairs[base], pairs[cand]), confidence)
    cold = cold_note(run)
    for c in [*per.values(), *([both] if both is not None else [])]:
        c.method += cold
    return ProfilerCost(True, frequency_hz=hz, pairs=counts, per_variant=per, pooled=both,
                        on_off=perf_blocks.agreement(run, base, cand, confidence))

def pooled(*per_variant: dict[tuple[str, int], list[tuple[float, float]]]
           ) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """Both variants' pairs as the units of the pooled row: the rep. The two servers of a
    paired rep share its noise (the host's moment, the load generators' CPU), so their
    costs in one rep are not two independent facts: a paired rep's pairs of both servers
    are one unit. Separate profile reps are server starts of their own: a unit each."""
    out: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for pairs in per_variant:
        for key, ps in pairs.items():
            out.setdefault(key, []).extend(ps)
    return out


def _paired_frequency(run: RunDir) -> int | None:
    """The rate perf sampled the paired windows at (rep.json collectors["perf:<variant>"])."""
    for rep in run.manifest.reps(kind="paired"):
        for name, c in run.facts(rep).collectors.items():
            if name.startswith("perf:") and getattr(c, "frequency_hz", None):
                return c.frequency_hz
    return None
