"""`make bench` figure 7d: the top movers' rule, its error rate and its power, on a recorded
paired A/A run.

tests/data/runs/mset-aa-paired-small holds 10 paired reps of one build against itself, perf
in the windows at 299 Hz (~1,200 samples a rep a side). No function changed, and the two
servers of a rep are exchangeable. Each draw takes k of its reps (5: `stallscope run`'s
default; 10: the demo's) and swaps a rep's two sides at random, then judges the top
movers' family (every material non-focus function's own and cumulative CPU time per
operation) by three rules:

- naive: each row alone at 95% (its own paired rank or t interval);
- Holm: the family's rows judged together by Holm, each its rank or t interval at the
  family's level (the rule until 2026-11-28: 74 rows, 99.93% each);
- weighted + moderated (shipped): each function's rows weigh its own share of the samples
  (weighted Holm), and a row's CPU time per operation is judged by its moderated t: its
  spread is counting its samples times a dispersion shrunk towards the family's
  (analysis/moderated.py, analysis/counting.py).

Error rate: the share of A/A draws with any row called changed (each rule promises 5%,
naive promises nothing). Power: the same draws with a known change planted in one
function of about 5% of the samples (3-8%: rtree_metadata_read, dictSdsKeyLen,
je_malloc_usable_size, rtree_metadata_try_read_fast, je_free): its own samples on one side
thinned to 90% (-10%), or the other side's to 1/1.1 (+10%), binomially, so they stay
counts; how often each rule calls that function's own cost changed the right way.
The planner's prediction (analysis/power.row_reach) is printed beside: the detectable size
at each rule's level for the recorded sample count, and what a 5%-share row could see at
the review's rates (10 reps of 128 windows).

The rows are built from the recorded reps by the library's own pieces (profiles.cost_values,
counting, moderated, multiplicity.weighted_holm); tests/test_movers.py checks that on the
whole run they are the rows, p-values and weights `stallscope compare` judges.

  .venv/bin/python bench/movers.py
  .venv/bin/python bench/movers.py --draws 2000 --seed 7
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import counting, moderated, power, stats  # noqa: E402
from analysis.compare import multiplicity, profile_reps, profiles  # noqa: E402
from analysis.compare.options import MIN_SAMPLES, MIN_SHARE  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402
from analysis.intervals import p_value  # noqa: E402

RUN = REPO / "tests" / "data" / "runs" / "mset-aa-paired-small"
Q = 0.05
PLANTED = ("rtree_metadata_read", "dictSdsKeyLen", "je_malloc_usable_size",
           "rtree_metadata_try_read_fast", "je_free")
RULES = ("naive", "holm", "shipped")
KINDS = ("flat", "cum")


@dataclass
class Pool:
    """The recorded reps as counts: per side (0, 1), rep and function, the samples of its own
    and cumulative cost in the view; each rep-side's samples in all, and the CPU time per
    operation one sample stands for (its weight / the operations)."""
    names: list[str]
    counts: np.ndarray       # [side, rep, function, kind] samples
    total: np.ndarray        # [side, rep] samples of the view
    unit: np.ndarray         # [side, rep] ns per operation per sample
    focus: set[str]


def pool(run_dir: Path = RUN) -> Pool:
    run = load_run(run_dir)
    a, b = run.manifest.variants
    reps = profile_reps.paired_profiles(run, (a, b))
    names_ = profiles.main_names(run)
    thread, _ = profiles.choose_thread(reps, None, a, b, names_)
    sh = profiles.shares(reps, thread, names_)
    fns = sorted({f for v in sh for _, c in sh[v] for f in c})
    counts = np.zeros((2, len(reps[a]), len(fns), 2))
    total, unit = np.zeros((2, len(reps[a]))), np.zeros((2, len(reps[a])))
    for s, v in enumerate((a, b)):
        for r, ((_, costs), rep) in enumerate(zip(sh[v], reps[v])):
            for i, f in enumerate(fns):
                if f in costs:
                    counts[s, r, i] = (costs[f].flat / rep.sample_weight, costs[f].cum / rep.sample_weight)
            total[s, r] = sum(c.flat for c in costs.values()) / rep.sample_weight
            unit[s, r] = rep.sample_weight / rep.ops.ops
    return Pool(fns, counts, total, unit, set(run.manifest.case.focus or []))


def draw(p: Pool, k: int, rng: np.random.Generator, plant: tuple[str, float] | None = None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts [side, rep, fn, kind], totals [side, rep], units [side, rep]) of k reps, each
    rep's sides swapped with probability 1/2; `plant` (function, -0.1 | +0.1): its own
    samples thinned on one side (b for a fall, a for a rise), its cumulative alike."""
    reps = rng.choice(p.counts.shape[1], k, replace=False)
    swap = rng.random(k) < 0.5
    side = np.array([[int(s), 1 - int(s)] for s in swap])          # [rep, (a, b)] -> recorded side
    c = np.stack([p.counts[side[:, i], reps] for i in (0, 1)])
    tot = np.stack([p.total[side[:, i], reps] for i in (0, 1)])
    unit = np.stack([p.unit[side[:, i], reps] for i in (0, 1)])
    if plant is not None:
        f, change = plant
        i, s = p.names.index(f), (1 if change < 0 else 0)
        keep = 1 + change if change < 0 else 1 / (1 + change)
        own = np.round(c[s, :, i, 0]).astype(int)
        lost = own - rng.binomial(own, keep)
        c[s, :, i, 0] -= lost
        c[s, :, i, 1] -= lost
        tot[s] -= lost
    return c, tot, unit


@dataclass
class Row:
    name: str
    kind: str
    base: list[float]          # the statistic's values: CPU time per operation per rep
    cand: list[float]
    nb: np.ndarray             # samples per rep
    nc: np.ndarray
    weight: float              # the function's own share (a fraction)


def rows(p: Pool, c: np.ndarray, tot: np.ndarray, unit: np.ndarray) -> list[Row]:
    """The family's rows as families.py takes them (materiality.judge's floors first)."""
    share = 100 * c / tot[:, :, None, None]
    out = []
    for i, f in enumerate(p.names):
        if f in p.focus or share[:, :, i, 0].max() < profiles.MOVER_MIN_SHARE:
            continue
        w = max(float(share[:, :, i, 0].mean()) / 100, 1e-6)
        ran = np.median(share[:, :, i, 1], axis=1) > 0
        for j, kind in enumerate(KINDS):
            nb, nc = np.round(c[0, :, i, j], 3), np.round(c[1, :, i, j], 3)
            med = np.median(share[:, :, i, j], axis=1)
            if max(med) < MIN_SHARE or max(nb.sum(), nc.sum()) < MIN_SAMPLES or not ran.all() \
                    or (kind == "cum" and not (med > 0).all()):
                continue
            cb, cc = counting.corrected(nb, nc) if min(nb.min(), nc.min()) <= 0 else (nb, nc)
            out.append(Row(f, kind, list(cb * unit[0]), list(cc * unit[1]), nb, nc, w))
    return out


def called(members: list[Row], rule: str) -> list[tuple[Row, float]]:
    """The rows a rule calls changed, each with the change its statistic estimates (log)."""
    logs = [(np.log(r.base), np.log(r.cand)) for r in members]
    est = [float(np.mean(c - b)) for b, c in logs]
    if rule == "shipped":
        disp = [counting.of_row(r.base, r.cand, r.nb, r.nc, True) for r in members]
        prior = moderated.prior_of([d for d in disp if d is not None])
        tests = [moderated.row_test(d, prior) if d is not None else None for d in disp]
        p = np.array([moderated.p_value(t) if t is not None else 1.0 for t in tests])
        est = [t.mean if t is not None else e for t, e in zip(tests, est)]
        hit, _ = multiplicity.weighted_holm(p, np.array([r.weight for r in members]), Q)
    else:
        level = 1 - Q if rule == "naive" else 1 - Q / len(members)
        keys = ["signed-rank" if stats.rank_reaches(len(r.base), len(r.base), True, level)
                else "paired-t" for r in members]
        p = np.array([p_value(k, b, c, 0) for k, (b, c) in zip(keys, logs)])
        hit = p <= Q if rule == "naive" else multiplicity.adjusted_p(p, "holm") <= Q
    return [(r, e) for r, e, h in zip(members, est, hit) if h]


def wilson(hits: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a rate."""
    z, p = 1.96, hits / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def error_rates(p: Pool, k: int, draws: int, seed: int) -> dict[str, int]:
    """A/A draws with any row called changed, per rule."""
    rng = np.random.default_rng([seed, k])
    out = {rule: 0 for rule in RULES}
    for _ in range(draws):
        members = rows(p, *draw(p, k, rng))
        for rule in RULES:
            out[rule] += bool(called(members, rule))
    return out


def detections(p: Pool, k: int, draws: int, seed: int) -> dict[str, dict[str, int]]:
    """Per planted function: draws whose rule called its own cost changed the right way,
    half the draws a fall of 10%, half a rise."""
    rng = np.random.default_rng([seed, k, 1])
    out = {f: {rule: 0 for rule in RULES} for f in PLANTED}
    for f in PLANTED:
        for d in range(draws):
            change = -0.1 if d % 2 else 0.1
            members = rows(p, *draw(p, k, rng, (f, change)))
            for rule in RULES:
                out[f][rule] += any(r.name == f and r.kind == "flat" and (e > 0) == (change > 0)
                                    for r, e in called(members, rule))
    return out


def labels(p: Pool, k: int, draws: int, seed: int, band: tuple[float, float] = (0.03, 0.08)
           ) -> tuple[int, int, int]:
    """Under no change, the own-cost rows of `band` own share: (rows, rows the statistic calls
    unstable: interval over 0 and its pairs' log ratios spread over max_cv, 10%; of those,
    rows whose spread counting explains: "too few samples to see", materiality.py)."""
    rng = np.random.default_rng([seed, k, 2])
    n = unstable = counted = 0
    for _ in range(draws):
        members = rows(p, *draw(p, k, rng))
        hit = {id(r) for r, _ in called(members, "shipped")}
        for r in members:
            if r.kind != "flat" or not band[0] <= r.weight <= band[1] or id(r) in hit:
                continue
            n += 1
            if float(np.std(np.log(r.cand) - np.log(r.base), ddof=1)) > 0.10:
                unstable += 1
                d = counting.of_row(r.base, r.cand, r.nb, r.nc, True)
                counted += d is not None and d.counting
    return n, unstable, counted


def own_share(p: Pool, f: str) -> float:
    i = p.names.index(f)
    return float((p.counts[:, :, i, 0] / p.total).mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=600, help="A/A draws per k (default 600)")
    ap.add_argument("--planted", type=int, default=100, help="draws per planted function and k")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    p = pool()
    print(f"figure 7d: the top movers' family on {RUN.name} (10 paired reps, "
          f"{np.median(p.total):,.0f} samples a rep a side), k reps a draw, sides swapped at random")
    for k in (5, 10):
        err = error_rates(p, k, a.draws, a.seed)
        print(f"  k={k}: A/A draws with a false mover ({a.draws} draws)")
        for rule in RULES:
            lo, hi = wilson(err[rule], a.draws)
            print(f"    {rule:8} {100 * err[rule] / a.draws:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
        det = detections(p, k, a.planted, a.seed)
        print(f"  k={k}: a planted ±10% called in the right direction ({a.planted} draws each)")
        for f in PLANTED:
            s = own_share(p, f)
            reach = power.row_reach(s, float(np.median(p.total)), k, dispersion=0.84)
            print(f"    {f:30} {100 * s:4.1f}% " + "  ".join(
                f"{rule} {100 * det[f][rule] / a.planted:5.1f}%" for rule in RULES)
                + f"  (planner: level {100 * reach.level:.2f}%, could see ±{100 * reach.detectable:.0f}%)")
    for k in (5, 10):
        n, unstable, counted = labels(p, k, a.draws // 4, a.seed)
        print(f"  k={k}, no change: {n} own-cost rows of 3-8% share; the statistic calls "
              f"{100 * unstable / n:.0f}% unstable, and of those counting explains "
              f"{100 * counted / max(unstable, 1):.0f}% (now 'too few samples to see')")
    print("  the planner for a 5%-share row, 10 reps of 128 windows (~1,600 samples a rep at 199 Hz):")
    for hz in (199, 999, 3999):
        r = power.row_reach(0.05, 1600 * hz / 199, 10)
        print(f"    {hz:5} Hz: top mover at {100 * r.level:.2f}% could see ±{100 * r.detectable:.1f}%; "
              f"focus row (10 rows) ±{100 * power.row_reach(0.05, 1600 * hz / 199, 10, focus_rows=10).detectable:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
