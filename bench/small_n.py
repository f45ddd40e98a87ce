"""`make bench` figure 8: an interval from 2 runs a side, on recorded reps.

The TMA funnel gives a change interval from 2 runs per side (analysis.stats.SMALL_N): users
bring the toplev/perf outputs they have, often two of minutes each. Only the Welch
t-interval exists there (no rank interval reaches 95% with 2+2). This figure shows that it
keeps its 95% on real noise and that the two rules a reader would reach for do not:

- welch: the Welch t-interval, Welch-Satterthwaite degrees of freedom (what the funnel uses);
- normal: the same difference of means ± 1.96 standard errors (the "z" interval);
- ranges: "a change when the two sides' min-max ranges do not overlap".

Each simulated comparison draws both sides from one recorded pool of per-window throughput
(log ops/s of the same binary: tests/data/runs/noise-*, recorded on this 2-core VM), so the
true change is 0 and an interval "holds" when it contains 0 (for `ranges`: when it calls no
change). Two ways of drawing: `iid` (any 4 windows of the pool) and `in order` (4 windows in
a row, given to the sides A B A B as interleaved runs are: drift stays in the draw); and
`cand spread x3`, the candidate's deviations from the pool's median tripled (the sides'
spreads differ, Welch's harder case; the true change is still 0). Share pools: a function's
% of samples in each of the 16 profile reps of the recorded A/A run (values that are shares,
as TMA nodes are; repeated TMA outputs of one workload are not recorded here).

  .venv/bin/python bench/small_n.py
  .venv/bin/python bench/small_n.py --draws 50000 --n 3
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.compare.throughput import paired_units  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

RUNS = ("noise-paired-1rep-640pairs", "noise-paired-8reps-48pairs", "noise-paired-12reps-16pairs")
RULES = ("welch", "normal", "ranges")


@dataclass(frozen=True)
class Pool:
    name: str
    values: np.ndarray      # log ops/s of one variant's windows, in the order measured


def recorded_pools(runs_dir: Path = REPO / "tests" / "data" / "runs") -> list[Pool]:
    """Each recorded noise run's windows, one pool per variant (base, prefetch)."""
    pools = []
    for name in RUNS:
        windows = [w for rep in paired_units(load_run(runs_dir / name), "base", "prefetch").values()
                   for w in rep]
        for i, variant in enumerate(("base", "prefetch")):
            pools.append(Pool(f"{name}:{variant}", np.log([w[i] for w in windows])))
    return pools


def share_pools(run_dir: Path = REPO / "tests" / "data" / "runs" / "mset-aa-default",
                top: int = 4) -> list[Pool]:
    """Shares (% of a profile rep's samples) of the run's `top` biggest functions, one pool
    per function over all 16 profile reps of the recorded A/A run: values that are shares,
    as the funnel's TMA nodes are (repeated TMA outputs of one workload are not recorded)."""
    from analysis.compare import profile_reps
    from analysis.profile.stacks import function_costs
    run = load_run(run_dir)
    reps = [r for reps in profile_reps.load(run, tuple(run.manifest.variants)).values()
            for r in reps]
    costs = [function_costs(r.stacks) for r in reps]
    names = sorted(costs[0], key=lambda k: -costs[0][k].flat_share)[:top]
    return [Pool(f"mset-aa-default share:{n}",
                 np.array([c[n].flat_share if n in c else 0.0 for c in costs]))
            for n in names]


def draws(pool: np.ndarray, n: int, count: int, in_order: bool, rng: np.random.Generator,
          spread: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(count x n base values, count x n cand values) from one pool; `spread`: the cand's
    deviations from the pool's median scaled by it (unequal spreads, the true change still
    0: Welch's hard case, where the sides disagree on their noise)."""
    b, c = _draws(pool, n, count, in_order, rng)
    if spread != 1.0:
        mid = float(np.median(pool))
        c = mid + spread * (c - mid)
    return b, c


def _draws(pool: np.ndarray, n: int, count: int, in_order: bool, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray]:
    if not in_order:
        x = rng.choice(pool, size=(count, 2 * n), replace=True)
        return x[:, :n], x[:, n:]
    start = rng.integers(0, len(pool) - 2 * n + 1, size=count)
    x = pool[start[:, None] + np.arange(2 * n)]
    return x[:, 0::2], x[:, 1::2]           # A B A B ...


def holds(b: np.ndarray, c: np.ndarray, confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Per draw and rule: does it hold the true change 0 (no false change)?"""
    n_b, n_c = b.shape[1], c.shape[1]
    d = c.mean(1) - b.mean(1)
    vb, vc = b.var(1, ddof=1) / n_b, c.var(1, ddof=1) / n_c
    se = np.sqrt(vb + vc)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vb + vc) ** 2 / (vb ** 2 / (n_b - 1) + vc ** 2 / (n_c - 1))
    df = np.where(np.isfinite(df), df, n_b + n_c - 2.0)
    q = special.stdtrit(df, 0.5 + confidence / 2)
    z = float(special.ndtri(0.5 + confidence / 2))
    apart = (b.max(1) < c.min(1)) | (c.max(1) < b.min(1))
    return {"welch": np.abs(d) <= q * se, "normal": np.abs(d) <= z * se, "ranges": ~apart,
            "_half": q * se}


MODES = ("iid", "in order", "iid, cand spread x3")


def simulate(pools: list[Pool], n: int, count: int, seed: int = 1, modes: tuple[str, ...] = MODES
             ) -> list[tuple[str, str, dict[str, float], float]]:
    """(pool, draw mode, share holding per rule, median Welch half-width in %) per row."""
    rng = np.random.default_rng(seed)
    out = []
    for pool in pools:
        for mode in modes:
            spread = 3.0 if "spread" in mode else 1.0
            h = holds(*draws(pool.values, n, count, mode == "in order", rng, spread))
            half = float(np.median(h["_half"]))
            # log throughput: the half-width as a ratio, in %; shares: in pp already
            out.append((pool.name, mode, {r: float(h[r].mean()) for r in RULES},
                        half if "share:" in pool.name else float(np.expm1(half) * 100)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2, help="runs per side (default 2)")
    ap.add_argument("--draws", type=int, default=20000, help="comparisons per pool and mode")
    a = ap.parse_args(argv)
    rows = simulate(recorded_pools(), a.n, a.draws)
    rows += simulate(share_pools(), a.n, a.draws, modes=("iid", "iid, cand spread x3"))
    print(f"Figure 8: intervals from {a.n} runs a side, {a.draws:,} A/A comparisons per row "
          f"(share that holds the true change 0; target 95%)")
    print(f"{'pool (recorded windows, or shares)':44} {'draw':20} {'welch':>7} {'normal':>7} "
          f"{'ranges':>7} {'welch ± (median)':>17}")
    for name, mode, share, half in rows:
        print(f"{name:44} {mode:20} " + " ".join(f"{share[r]:7.1%}" for r in RULES)
              + f" {half:15.1f}{' pp' if 'share:' in name else '%'}")
    worst = min(s["welch"] for _, _, s, _ in rows)
    print(f"worst welch: {worst:.1%}; normal at most {max(s['normal'] for _, _, s, _ in rows):.1%}; "
          f"ranges at most {max(s['ranges'] for _, _, s, _ in rows):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
