"""`make bench` figure 7b: a family's verdicts agree with its false-discovery decision.

A report judges a family of rows together: Benjamini-Hochberg over their p-values decides
which rows changed, and each row's interval is printed at the false-coverage-rate level.
The printed interval must clear 0 exactly for the rows BH called changed: that is what makes
"the interval printed is the one that decided" true. It fails when a row's p-value and its
printed interval come from different methods (a rank p-value ranked by BH, a Welch interval
printed because the rank interval cannot reach the family's level).

Each simulated family: 23 null rows and one row shifted by 2-6 standard deviations, 5 reps
a side, drawn from one recorded pool of per-window log throughput (tests/data/runs/
noise-paired-8reps-48pairs, variant base). A row contradicts its family when its printed
interval clears 0 but BH did not call it changed, or the reverse.

  .venv/bin/python bench/fdr_method.py
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.compare.multiplicity import Member, control  # noqa: E402
from analysis.compare.options import CompareOptions  # noqa: E402
from analysis.compare.throughput import paired_units  # noqa: E402
from analysis.compare.values import ChangeOut  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

RUN = REPO / "tests" / "data" / "runs" / "noise-paired-8reps-48pairs"


def pool() -> np.ndarray:
    units = paired_units(load_run(RUN), "base", "prefetch")
    return np.array([math.log(a) for rep in units.values() for a, _ in rep])


def family(values: np.ndarray, rng: np.random.Generator, rows: int = 24, n: int = 5
           ) -> list[tuple[bool, bool]]:
    """(printed interval clears 0, BH called it changed) for each row of one family."""
    sd = float(values.std())
    opts = CompareOptions()
    out: list[ChangeOut] = []
    members = []
    for i in range(rows):
        b = np.exp(rng.choice(values, n))
        c = np.exp(rng.choice(values, n) + (rng.uniform(2, 6) * sd if i == 0 else 0.0))

        def again(o, b=list(b), c=list(c)):
            return ChangeOut.of(o.relative(b, c, higher_is_better=True))
        out.append(again(opts))
        members.append(Member(str(i), out[-1], again, lambda ch, i=i: out.__setitem__(i, ch)))
    control("bench", members, opts)
    res = []
    for ch in out:
        clears = ch.rel_ci_low is not None and (ch.rel_ci_low > 0 or ch.rel_ci_high < 0)
        adj = float(ch.reason.split("adjusted p = ")[1].split(";")[0])
        res.append((clears, adj <= 0.05))
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    values, rng = pool(), np.random.default_rng(a.seed)
    bad_rows = bad_fams = shifted_called = 0
    for _ in range(a.families):
        rows = family(values, rng)
        wrong = sum(1 for clears, called in rows if clears != called)
        bad_rows += wrong
        bad_fams += wrong > 0
        shifted_called += rows[0][1]
    print(f"figure 7b: printed intervals that contradict their family's BH decision "
          f"({a.families} families of 24 rows, 5+5 reps, recorded noise)")
    print(f"  families with a contradiction {bad_fams / a.families:6.1%}; rows "
          f"{bad_rows / (24 * a.families):6.2%}; the shifted row called changed in "
          f"{shifted_called / a.families:.1%} of families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
