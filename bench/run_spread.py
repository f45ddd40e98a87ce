"""`make bench` figure 17: a run's throughput interval against the spread between runs.

A run's interval is made from its own paired reps, so a component its reps share (constant
over the run, different the next run) is not in it. The default-size A/A runs recorded
on the 480 MiB Xeon guest (tests/data/noise/xeon480-aa-default.json: each run's mean log
ratio, the sd of its reps' log ratios and their count) show one: their means stray from 0
more than their own intervals allow. analysis/run_spread.py estimates its sd τ from a host's
A/A runs (their truth is 0: Paule-Mandel with the mean known) and widens a later run's
interval by it.

Two checks, both printed as coverage of 0 by a 95% interval:

- leave one out: each recorded run judged with τ from the others (real runs, real
  outliers; 11 runs say little about a 95% rate, but they show the naive rule failing);
- simulated: runs drawn from a random-effects model whose within-run sd and reps are the
  recorded runs' (drawn at random) and whose run effects are normal with sd τ (0 to 0.8%);
  τ estimated from k earlier A/A runs of the same model; the interval of the next run
  naive (its reps only), widened with the normal quantile, and widened as shipped (Student
  on k − 1 df);
- every row: the recorded A/A runs' per-row summaries (tests/data/noise/xeon480-aa-rows.json:
  the throughput, the whole profile's CPU time per operation and the focus functions' own
  and cumulative CPU time per operation), each row's own τ, and each run judged with the
  throughput's τ from the other runs, as a paired run's rows are (one τ: the server's speed
  in a run moves them all);
- borrowed: a host with fewer than 3 A/A runs of its own is widened by the spread recorded
  on the Xeon guest (run_spread.default, fixed); runs drawn as above with the host's own
  true τ (0 to 0.8%), coverage of its bare and of its borrowed-widened interval.

  .venv/bin/python bench/run_spread.py
  .venv/bin/python bench/run_spread.py --draws 20000
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import run_spread  # noqa: E402

RECORDS = Path(__file__).resolve().parent.parent / "tests" / "data" / "noise" / "xeon480-aa-default.json"
ROWS = RECORDS.with_name("xeon480-aa-rows.json")
LEVEL = 0.95


def recorded(path: Path = RECORDS) -> list[tuple[float, float, int]]:
    """(mean log ratio, sd of the reps' log ratios, reps) of each recorded A/A run."""
    doc = json.loads(path.read_text())
    runs = [r for case in doc["hosts"].values() for rs in case.values() for r in rs if r["aa"]]
    return [(r["change"], r["sd"], r["units"]) for r in runs]


def half_width(sd: float, n: int, level: float = LEVEL) -> float:
    """The paired t interval's half-width over n reps (log scale)."""
    return float(sps.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)


def covers(y: float, sd: float, n: int, tau: float, runs: int, student: bool = True) -> bool:
    """Does the interval of a run (y, sd, n) widened by τ from `runs` A/A runs hold 0?"""
    q = float(sps.t.ppf(0.5 + LEVEL / 2, max(runs - 1, 1)) if student else sps.norm.ppf(0.5 + LEVEL / 2))
    return abs(y) <= math.hypot(half_width(sd, n), q * tau)


def leave_one_out(runs: list[tuple[float, float, int]]) -> list[tuple[float, float, bool, bool]]:
    """(run's mean, τ from the others, naive covers, widened covers) for each run."""
    out = []
    for i, (y, sd, n) in enumerate(runs):
        est = run_spread.estimate(r for j, r in enumerate(runs) if j != i)
        tau = est.sd if est else 0.0
        out.append((y, tau, abs(y) <= half_width(sd, n), covers(y, sd, n, tau, len(runs) - 1)))
    return out


def simulate(runs: list[tuple[float, float, int]], tau: float, k: int, draws: int,
             rng: np.random.Generator) -> tuple[float, float, float]:
    """Coverage of (naive, widened with the normal quantile, widened as shipped)."""
    shapes = [(sd, n) for _, sd, n in runs]

    def one() -> tuple[float, float, int]:
        sd, n = shapes[rng.integers(len(shapes))]
        x = rng.normal(rng.normal(0.0, tau), sd, n)
        return float(x.mean()), float(x.std(ddof=1)), n

    hits = np.zeros(3)
    for _ in range(draws):
        est = run_spread.estimate(one() for _ in range(k))
        t = est.sd if est else 0.0
        y, sd, n = one()
        hits += [abs(y) <= half_width(sd, n), covers(y, sd, n, t, k, student=False),
                 covers(y, sd, n, t, k)]
    return tuple(hits / draws)


def row_runs(path: Path = ROWS) -> dict[str, list[tuple[float, float, int] | None]]:
    """Each row's (mean log ratio, sd, reps) per recorded run, None where the run lacks it."""
    runs = json.loads(path.read_text())["runs"]
    names = sorted({n for r in runs for n in r["rows"]}, key=lambda n: (n != "throughput", n))
    return {n: [(r["rows"][n]["change"], r["rows"][n]["sd"], r["rows"][n]["units"]) if n in r["rows"]
                else None for r in runs] for n in names}


def rows_leave_one_out(rows: dict[str, list[tuple[float, float, int] | None]]
                       ) -> list[tuple[str, int, float, int, int]]:
    """(row, runs, its own τ, naive covers, widened by the throughput's τ from the other
    runs covers) for each row."""
    thr = rows["throughput"]
    out = []
    for name, runs in rows.items():
        have = [(i, r) for i, r in enumerate(runs) if r is not None]
        own = run_spread.estimate(r for _, r in have)
        naive = wide = 0
        for i, (y, sd, n) in have:
            est = run_spread.estimate(r for j, r in enumerate(thr) if j != i and r is not None)
            naive += abs(y) <= half_width(sd, n)
            wide += covers(y, sd, n, est.sd if est else 0.0, est.runs if est else 1)
        out.append((name, len(have), own.sd if own else float("nan"), naive, wide))
    return out


def borrowed(runs: list[tuple[float, float, int]], tau: float, spread, draws: int,
             rng: np.random.Generator) -> tuple[float, float]:
    """Coverage of (naive, widened by the fixed borrowed `spread`) on a host whose own
    spread between runs is `tau`."""
    shapes = [(sd, n) for _, sd, n in runs]
    hits = np.zeros(2)
    for _ in range(draws):
        sd, n = shapes[rng.integers(len(shapes))]
        x = rng.normal(rng.normal(0.0, tau), sd, n)
        y, s = float(x.mean()), float(x.std(ddof=1))
        hits += [abs(y) <= half_width(s, n), covers(y, s, n, spread.sd, spread.runs)]
    return tuple(hits / draws)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=4000, help="simulated runs per cell (default 4000)")
    a = ap.parse_args()
    runs = recorded()
    est = run_spread.estimate(runs)
    print(f"figure 17: the spread between runs (run_spread): τ {run_spread.text(est)}\n")
    print("leave one out (τ from the other runs), 95% intervals over each run's reps:")
    loo = leave_one_out(runs)
    for y, tau, naive, wide in loo:
        print(f"  mean {y:+.2%}  τ {tau:.2%}  naive {'holds 0' if naive else 'MISSES 0'}  "
              f"widened {'holds 0' if wide else 'MISSES 0'}")
    print(f"  naive covers {sum(x[2] for x in loo)} of {len(loo)}, widened {sum(x[3] for x in loo)} of {len(loo)}\n")
    rng = np.random.default_rng(17)
    print(f"simulated coverage of 0 ({a.draws} runs a cell; MC error about "
          f"±{100 * math.sqrt(0.05 * 0.95 / a.draws) * 2:.1f} points):")
    print("| τ | A/A runs behind τ | naive | widened, normal | widened, Student (shipped) |")
    print("|---|---|---|---|---|")
    for tau in (0.0, 0.002, round(est.sd, 4), 0.008):
        for k in (3, 5, 8, 12):
            n, z, t = simulate(runs, tau, k, a.draws, rng)
            print(f"| {tau:.2%} | {k} | {n:.1%} | {z:.1%} | {t:.1%} |")
    print("\nevery row of the recorded A/A runs, 95% intervals over each run's reps, left out one "
          "at a time:")
    print("| row | runs | its own τ | naive holds 0 | widened by the throughput's τ holds 0 |")
    print("|---|---|---|---|---|")
    for name, k, tau, naive, wide in rows_leave_one_out(row_runs()):
        print(f"| {name} | {k} | {tau:.2%} | {naive} of {k} | {wide} of {k} |")
    default = run_spread.default()
    print(f"\na host without 3 A/A runs of its own, widened by {run_spread.text(default)}:")
    print("| this host's own τ | naive | widened by the borrowed τ (shipped) |")
    print("|---|---|---|")
    for tau in (0.0, 0.002, round(est.sd, 4), 0.008):
        n, b = borrowed(runs, tau, default, a.draws, rng)
        print(f"| {tau:.2%} | {n:.1%} | {b:.1%} |")


if __name__ == "__main__":
    main()
