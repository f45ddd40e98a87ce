"""`make bench` figure 6b: `--precision P --on FUNCTION` on a skewed function row: the plan's
floor and the wider interval, against Stein's two-stage rule alone.

A function's per-rep log ratio of its CPU time per operation is skewed: the recorded small
A/A (tests/data/runs/mset-aa-paired-small, 10 paired reps) has dictFindByHash's own cost at
-2% in eight reps and +10% in two. Each simulated run resamples those reps whole (with
replacement), so its truth is their mean, and runs the plan as collectors/runner/precision.py
does (a first stage of 8, the reps Stein's rule asks for the target, capped at 200), then
checks the row's 95% interval:

- Stein: N = Stein's (at least the first stage), the interval from the first stage's spread
  (the rule until 2026-12-06);
- fixed 13: 13 reps and their t interval, whatever the spread (the reference the issue
  measured: a run that decides takes 13);
- shipped: N at least twostage.ON_FLOOR (16), the interval the wider of Stein's and the t over
  all the run's pairs (twostage.interval(..., whole=True), the "two-stage+t" method).

Coverage (with its 95% Wilson interval) and the mean reps, at the targets +-2% and +-5%, on
the skewed row and, for contrast, on a near-normal one (lookupKey's own cost, skew 0.35).

  .venv/bin/python bench/on_skew.py
  .venv/bin/python bench/on_skew.py --runs 40000
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import twostage  # noqa: E402
from analysis.compare.planned import function_log_ratios  # noqa: E402
from analysis.inputs.option_specs import PRECISION_PILOT  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

RUN = REPO / "tests" / "data" / "runs" / "mset-aa-paired-small"
ROWS = (("dictFindByHash", "flat"), ("lookupKey", "flat"))
CAP = 200              # collectors/runner/precision.MAX_UNITS
RULES = ("stein", "fixed 13", "shipped")


def row(fn: str, measure: str) -> np.ndarray:
    """The recorded row's per-rep log ratios, as the plan and the row read them."""
    run = load_run(RUN)
    return np.array(function_log_ratios(run, *list(run.manifest.variants)[:2], fn, measure))


def one_run(d: np.ndarray, rule: str, target: float) -> tuple[int, float, float]:
    """(reps, low, high) of one simulated run (d: its reps in order, at least CAP)."""
    if rule == "fixed 13":
        iv = twostage.interval(d[:13], 13)
        return 13, iv.low, iv.high
    p = PRECISION_PILOT
    sd0 = float(d[:p].std(ddof=1))
    floor = twostage.ON_FLOOR if rule == "shipped" else 0
    n = min(twostage.planned_reps(sd0, p, math.log1p(target), floor=floor), CAP)
    iv = twostage.interval(d[:n], p, whole=rule == "shipped")
    return n, iv.low, iv.high


def coverage(x: np.ndarray, rule: str, target: float, runs: int, seed: int
             ) -> tuple[float, float, float, float]:
    """(coverage, its 95% Wilson low and high, mean reps) over `runs` resampled runs."""
    rng = np.random.default_rng([seed, int(target * 1000)])
    truth, hits, reps = float(x.mean()), 0, 0
    for d in rng.choice(x, size=(runs, CAP), replace=True):
        n, lo, hi = one_run(d, rule, target)
        hits += lo <= truth <= hi
        reps += n
    z, p = 1.96, hits / runs
    mid = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return p, mid - half, mid + half, reps / runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20000, help="simulated runs per cell (20000)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    print(f"figure 6b: --precision --on, reps resampled from {RUN.name}, {a.runs} runs a cell, "
          f"first stage {PRECISION_PILOT}")
    for fn, measure in ROWS:
        x = row(fn, measure)
        print(f"  {fn} ({measure}): {len(x)} reps, skew {sps.skew(x):.2f}, "
              f"sd {x.std(ddof=1):.3f} of the log ratio")
        for target in (0.02, 0.05):
            for rule in RULES:
                cov, lo, hi, reps = coverage(x, rule, target, a.runs, a.seed)
                print(f"    ±{100 * target:.0f}% {rule:9} {100 * cov:5.1f}% [{100 * lo:.1f}, "
                      f"{100 * hi:.1f}]  {reps:5.1f} reps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
