"""`make bench` figure 10: the power a printed "could see ±X% (80% power)" really has, on recorded noise.

Every "no change" and "unstable" verdict prints the smallest change the run could have
established at 80% power (its detectable size). This figure checks that promise the way a
user meets it: draw a run from recorded noise, take the size it prints, then draw new runs
whose true change is exactly that size and count how often the method that decides (the
library's own interval, analysis/intervals.py) establishes it. Averaged over printed sizes,
that is the power at the printed size. Two rules:

- normal: (t(0.975) + t(0.80)) x SE, the normal-theory size stallscope printed before;
- method: analysis/power.py, calibrated by simulation for the deciding method and counts.

Pools (tests/data/runs/noise-*, this 2-core VM): paired methods draw pair log ratios of one
recorded run (centred: the true change is then the shift added), unpaired ones a variant's
log per-window throughput. The normal rule falls short where the rank intervals' steps bite
(6 pairs, 4 + 4); the calibrated one holds about 80% or more everywhere.

  .venv/bin/python bench/power.py
  .venv/bin/python bench/power.py --runs 1000 --inner 200
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import special

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import power  # noqa: E402
from analysis.compare.throughput import paired_units  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402
from analysis.intervals import METHODS  # noqa: E402

RUNS = ("noise-paired-1rep-640pairs", "noise-paired-8reps-48pairs", "noise-paired-12reps-16pairs")
CASES = (("signed-rank", 6), ("signed-rank", 8), ("signed-rank", 10), ("mann-whitney", 4),
         ("mann-whitney", 5), ("welch", 3), ("paired-t", 5))


def pools(name: str, runs_dir: Path = REPO / "tests" / "data" / "runs") -> tuple[np.ndarray, np.ndarray]:
    """(centred pair log ratios, one variant's log throughput) of one recorded noise run."""
    units = paired_units(load_run(runs_dir / name), "base", "prefetch")
    pairs = np.array([math.log(b / a) for rep in units.values() for a, b in rep])
    one = np.array([math.log(a) for rep in units.values() for a, _ in rep])
    return pairs - np.median(pairs), one


def normal_size(key: str, b: np.ndarray, c: np.ndarray) -> float:
    """The normal-theory size stallscope printed before analysis/power.py."""
    if key in power.PAIRED:
        d = c - b
        se, df = d.std(ddof=1) / math.sqrt(len(d)), len(d) - 1.0
    else:
        vb, vc = b.var(ddof=1) / len(b), c.var(ddof=1) / len(c)
        se = math.sqrt(vb + vc)
        df = (vb + vc) ** 2 / (vb * vb / (len(b) - 1) + vc * vc / (len(c) - 1))
    return float((special.stdtrit(df, 0.975) + special.stdtrit(df, 0.8)) * se)


def power_at_printed(key: str, n: int, pool_pairs: np.ndarray, pool_one: np.ndarray,
                     runs: int, inner: int, seed: int = 1) -> dict[str, float]:
    """Mean power at the printed size, per rule (module docstring)."""
    rng = np.random.default_rng(seed)
    paired = key in power.PAIRED

    def draw() -> tuple[np.ndarray, np.ndarray]:
        if paired:
            return np.zeros(n), rng.choice(pool_pairs, n)
        return rng.choice(pool_one, n), rng.choice(pool_one, n)

    got: dict[str, list[float]] = {"normal": [], "method": []}
    for _ in range(runs):
        b, c = draw()
        sizes = {"normal": normal_size(key, b, c),
                 "method": power.detectable(key, b, c, 0.95, 0.80)}
        for rule, size in sizes.items():
            if size is None:
                continue
            hits = 0
            for _ in range(inner):
                b2, c2 = draw()
                e = METHODS[key][1](b2, c2 + size, 0.95, 0)
                hits += e.low > 0 or e.high < 0
            got[rule].append(hits / inner)
    return {rule: float(np.mean(v)) for rule, v in got.items() if v}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=400, help="printed sizes per case (default 400)")
    ap.add_argument("--inner", type=int, default=100, help="runs at each size (default 100)")
    a = ap.parse_args(argv)
    print("figure 10: power at the printed detectable size (target 80%), recorded noise pools")
    print(f"{'pool':<30} {'method':<13} {'n':>3} {'normal rule':>12} {'calibrated':>11}")
    for name in RUNS:
        pairs, one = pools(name)
        for key, n in CASES:
            p = power_at_printed(key, n, pairs, one, a.runs, a.inner)
            print(f"{name:<30} {key:<13} {n:>3} {p['normal']:>11.1%} {p['method']:>10.1%}")
    print(f"({a.runs} printed sizes x {a.inner} runs each, per cell; Monte-Carlo error about "
          f"±{100 * 0.5 / math.sqrt(a.runs):.0f} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
