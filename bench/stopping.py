"""`make bench` figure 6: stopping rules for `--precision`, on recorded paired reps.

Each simulated run draws its units from the real per-rep values of a recorded run (log
throughput ratios of paired reps; tests/data/runs/noise-*), so its true change is their
mean, and stops by one of three rules once its interval is ±TARGET wide (or at MAX_UNITS):

- naive: a t-interval re-computed after every unit from the third;
- two-stage: Stein's design, what `stallscope run --precision` does (analysis/twostage.py);
- sequence: an anytime-valid t confidence sequence (Lai 1976; the normal mixture over the
  standardised effect, closed form), valid even when a run stops because the change looks
  good. Not what stallscope ships: it is here to show what that extra guarantee costs.

For each: the share of runs whose interval holds the true change, and the mean units run.

  .venv/bin/python bench/stopping.py
  .venv/bin/python bench/stopping.py --target 0.015 --runs 8000
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps
from scipy.optimize import minimize_scalar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import twostage  # noqa: E402
from analysis.compare.throughput import main_log_ratios  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

RUNS = ("noise-paired-12reps-16pairs", "noise-paired-8reps-48pairs")
PILOT = 8


def sequence_multiplier(n: int, alpha: float, rho: float) -> float:
    """c with the confidence sequence = mean ± c·s/√n after n values: from Lai's mixture
    M_n = √r ((1 + t²/ν) / (1 + r t²/ν))^(n/2) < 1/α, r = ρ/(n + ρ), ν = n − 1."""
    if n < 2:
        return math.inf
    r = rho / (n + rho)
    k = (alpha * alpha * r) ** (-1.0 / n)
    if k * r >= 1.0:
        return math.inf
    return math.sqrt((n - 1) * (k - 1.0) / (1.0 - k * r))


def best_rho(n: int, alpha: float) -> float:
    """The mixing precision that makes the sequence narrowest at n (fixed before the data)."""
    res = minimize_scalar(lambda lr: sequence_multiplier(n, alpha, math.exp(lr)),
                          bounds=(-12.0, 6.0), method="bounded")
    return math.exp(res.x)


def simulate(values: np.ndarray, target: float, max_units: int, runs: int, seed: int = 1
             ) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    truth = values.mean()
    t975 = {n: sps.t.ppf(0.975, n - 1) for n in range(2, max_units + 1)}
    rho = best_rho(max_units // 2, 0.05)
    seq = {n: sequence_multiplier(n, 0.05, rho) for n in range(2, max_units + 1)}
    out = {k: [0, 0.0] for k in ("naive", "two-stage", "sequence")}
    for x in rng.choice(values, size=(runs, max_units), replace=True):
        n_ = np.arange(1, max_units + 1)
        mean = np.cumsum(x) / n_
        sd = np.sqrt(np.maximum(np.cumsum(x * x) - n_ * mean * mean, 0) / np.maximum(n_ - 1, 1))
        for rule, mult in (("naive", t975), ("sequence", seq)):
            n = next((k for k in range(3, max_units + 1)
                      if math.isfinite(mult[k]) and mult[k] * sd[k - 1] / math.sqrt(k) <= target),
                     max_units)
            h = mult[n] * sd[n - 1] / math.sqrt(n)
            out[rule][0] += abs(mean[n - 1] - truth) <= h
            out[rule][1] += n
        n = min(twostage.planned_reps(x[:PILOT].std(ddof=1), PILOT, target), max_units)
        iv = twostage.interval(x[:n], PILOT)
        out["two-stage"][0] += iv.low <= truth <= iv.high
        out["two-stage"][1] += n
    return {k: (hits / runs, units / runs) for k, (hits, units) in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", type=float, default=0.012, help="half-width asked, log ratio (default 0.012)")
    ap.add_argument("--max-units", type=int, default=60, help="the budget, in units (default 60)")
    ap.add_argument("--runs", type=int, default=4000, help="simulated runs per rule (default 4000)")
    a = ap.parse_args(argv)
    print(f"== 6. stopping rules for --precision: ±{a.target:.1%} asked, at most {a.max_units} "
          f"units, {a.runs} simulated runs each")
    for name in RUNS:
        run = load_run(REPO / "tests" / "data" / "runs" / name)
        values = np.array(main_log_ratios(run, *run.variant_names[:2]))
        print(f"   from {name} ({len(values)} recorded reps, sd {values.std(ddof=1):.4f}):")
        for rule, (cover, units) in simulate(values, a.target, a.max_units, a.runs).items():
            print(f"     {rule:<10} coverage {cover:6.1%}  mean units {units:5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
