"""`make bench` figure 12: how a run that decides plans its reps, on recorded paired reps:
does each row keep its coverage?

A run without --reps, --precision or --quick (collectors/runner/targets.py) takes the paired
reps this host's recorded spread for the case asks for its throughput target, decided before
it starts, and judges every row (throughput and functions) by its ordinary interval over
them. The alternatives decide the reps from the run's own first stage. Each recorded A/A
run's reps are resampled whole (a rep's throughput and function ratios together, so whatever
ties them is kept), every series centred (its mean is the truth of the simulation), and each
row's 95% interval is checked under four rules for the reps:

- ships: N decided before the run (here from the whole recording's spread, as the host's
  records give it), for the throughput's ±2%;
- stein: N from the throughput's first PILOT reps (Stein's two-stage rule), the
  function rows judged at it: exact for the throughput (its interval two-stage), not for rows
  whose reps its first stage chose;
- own pilot: N from the row's own first stage for its ±5% (an "internal pilot");
- naive: the interval re-computed after every rep from the pilot on, stopping as soon as the
  row could see ±5% (a "keep going until it is narrow" loop).

Coverage at 95% (the rows are judged at their family's level; 95% lets a few thousand runs
measure it), with the mean reps of each rule.

  .venv/bin/python bench/targets.py
  .venv/bin/python bench/targets.py --runs 4000
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

from analysis.compare.engine import analyse  # noqa: E402
from analysis.compare.options import CompareOptions  # noqa: E402
from analysis.compare.throughput import main_log_ratios  # noqa: E402
from analysis import twostage  # noqa: E402
from analysis.inputs.option_specs import TARGET_FOCUS, TARGET_THROUGHPUT  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402
from analysis.power import units_to_detect  # noqa: E402
from collectors.host.noise import Noise  # noqa: E402
from collectors.runner.targets import Targets, focus_ratios, planned_units  # noqa: E402

# recorded A/A paired runs (tests/data/runs/*/SOURCES.md): the same build both sides
RUNS = ("mset-aa-paired-small", "aa-decides-emr-1", "aa-decides-emr-2", "aa-decides-emr-3")
MAX_UNITS = 60
PILOT = 6              # the first stage of the rules that plan from the run's own reps


def matrices(names: tuple[str, ...] = RUNS) -> dict[str, tuple[list[str], np.ndarray]]:
    """Each recorded run's reps as rows: the throughput's log ratio then each focus row's
    (share 5% or more), every column centred; runs not in tests/data/runs are skipped."""
    out = {}
    for name in names:
        path = REPO / "tests" / "data" / "runs" / name
        if not (path / "manifest.json").is_file():
            continue
        run = load_run(path)
        base, cand = list(run.manifest.variants)[:2]
        cols = {"throughput": main_log_ratios(run, base, cand), **focus_ratios(analyse(run, CompareOptions()))}
        n = min(len(v) for v in cols.values())
        m = np.column_stack([np.asarray(v[:n]) for v in cols.values()])
        out[name] = (list(cols), m - m.mean(axis=0))
    return out


def _half(x: np.ndarray, confidence: float) -> float:
    return float(sps.t.ppf(1 - (1 - confidence) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))


def _detectable(x: np.ndarray, confidence: float) -> float:
    from analysis.power import POWER, multiplier
    k = multiplier("paired-t", len(x), len(x), round(confidence, 9), POWER)
    return k * float(x.std(ddof=1)) / math.sqrt(len(x))


def _own_n(x: np.ndarray, target: float, pilot: int) -> int:
    n = units_to_detect(target, float(x[:pilot].std(ddof=1)) or 1e-12, 0.95, limit=MAX_UNITS)
    return min(max(n or MAX_UNITS, pilot), MAX_UNITS)


def _naive_n(x: np.ndarray, target: float, pilot: int) -> int:
    m = pilot
    while m < MAX_UNITS and _detectable(x[:m], 0.95) > math.log1p(target):
        m += 1
    return m


def simulate(cols: list[str], m: np.ndarray, runs: int, pilot: int = PILOT, seed: int = 1
             ) -> dict[str, dict[str, tuple[float, float]]]:
    """{row: {rule: (coverage at 95%, mean reps)}} over `runs` resampled runs; the first
    column is the throughput."""
    rng = np.random.default_rng(seed)
    draws = [m[rng.integers(0, len(m), MAX_UNITS)] for _ in range(runs)]
    ships = planned_units(Noise(float(m[:, 0].std(ddof=1)), 0.0, 1, "the recording", ""), Targets()).units
    stein = [min(max(_stein_n(x[:pilot, 0]), pilot), MAX_UNITS) for x in draws]
    out = {}
    for j, name in enumerate(cols):
        res = {}
        for rule in ("ships", "stein", "own pilot", "naive"):
            hits = reps = 0
            for x, n_stein in zip(draws, stein):
                col = x[:, j]
                target = TARGET_THROUGHPUT if j == 0 else TARGET_FOCUS
                n = {"ships": ships, "stein": n_stein, "own pilot": _own_n(col, target, pilot),
                     "naive": _naive_n(col, target, pilot)}[rule]
                if rule == "stein" and j == 0:
                    iv = twostage.interval(col[:n], pilot)
                    hits += iv.low <= 0 <= iv.high
                else:
                    hits += abs(col[:n].mean()) <= _half(col[:n], 0.95)
                reps += n
            res[rule] = (hits / runs, reps / runs)
        out[name] = res
    return out


def _stein_n(first: np.ndarray) -> int:
    """Stein's N for the throughput's detectable ±2% from its first stage's spread: the
    fewest reps whose two-stage interval's size (analysis/power.py, K x s0 / sqrt(n)) is
    within it."""
    from analysis.power import POWER, multiplier
    sd, pilot = float(first.std(ddof=1)), len(first)
    for n in range(pilot, MAX_UNITS):
        if multiplier("two-stage", n, n, 0.95, POWER, pilot) * sd / math.sqrt(n) <= math.log1p(TARGET_THROUGHPUT):
            return n
    return MAX_UNITS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    args = ap.parse_args(argv)
    print(f"figure 12: the reps of a run that decides, {args.runs} resampled runs per recorded A/A run; "
          f"coverage at 95%, mean reps (targets: throughput ±{TARGET_THROUGHPUT:.0%}, functions "
          f"±{TARGET_FOCUS:.0%})")
    rules = ("ships", "stein", "own pilot", "naive")
    print(f"{'run: focus row':<60}" + "".join(f"{r:>17}" for r in rules))
    totals: dict[str, list[float]] = {r: [] for r in rules}
    for run, (cols, m) in matrices().items():
        for row, res in simulate(cols, m, args.runs).items():
            print(f"{(run + ': ' + row)[:60]:<60}" + "".join(f"{c:>10.1%} {n:>5.1f}r" for c, n in res.values()))
            for r, (c, _) in res.items():
                totals[r].append(c)
    for r, covs in totals.items():
        if covs:
            n = len(covs) * args.runs
            lo, hi = sps.binomtest(round(np.mean(covs) * n), n).proportion_ci(0.95, "wilson")
            print(f"  {r:<10} coverage {np.mean(covs):.2%} [{lo:.2%}, {hi:.2%}] over {len(covs)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
