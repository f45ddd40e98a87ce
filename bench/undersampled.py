"""`make bench` figure 7f: what "too few samples to see" may say about a quieter machine, on
recorded sample counts.

A function row the statistic calls unstable is "undersampled" when the dispersion test
(analysis/counting.py) finds no spread beyond counting its samples. The reason used to add
"a quieter machine would not narrow it": a claim read off a test that did not reject. Here
the machine's part is known: each simulated run takes a recorded row's samples per rep
(tests/data/runs/aa-decides-emr-1, 13 paired reps at 1499 Hz; the own-cost rows of 0.5-15%
of the samples, 50-1,240 samples a rep a side), draws each side's count from Poisson
at the recorded count, and adds machine noise to each rep's log ratio with variance
(phi - 1) x its counting variance, so the true dispersion is phi and a machine that added
nothing would narrow the interval by 1 - 1/sqrt(phi). In how many rows is a wrong claim
printed (only rows the test does not reject are labelled "too few samples")?

- replaced: "a quieter machine would not narrow it", wrong whenever phi > 1;
- shipped: "a quieter machine could narrow it by up to X%" (X from the dispersion's 95%
  upper bound, Dispersion.quiet_gain), wrong when X is under the true 1 - 1/sqrt(phi); "would
  not" only where that bound is within counting's.

  .venv/bin/python bench/undersampled.py
  .venv/bin/python bench/undersampled.py --draws 20000
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import counting  # noqa: E402
from bench import movers  # noqa: E402

RUN = REPO / "tests" / "data" / "runs" / "aa-decides-emr-1"
PHIS = (1.0, 1.5, 2.0, 3.0)


def recorded_counts(run: Path = RUN, band: tuple[float, float] = (0.005, 0.15)) -> list[np.ndarray]:
    """Each own-cost row's samples per rep, [side, rep], for the functions of `band` share."""
    p = movers.pool(run)
    out = []
    for i, f in enumerate(p.names):
        share = float((p.counts[:, :, i, 0] / p.total).mean())
        if band[0] <= share <= band[1]:
            out.append(p.counts[:, :, i, 0])
    return out


def simulate(counts: list[np.ndarray], phi: float, draws: int, rng: np.random.Generator
             ) -> dict[str, float]:
    """Shares of the draws: `labelled` (the test does not reject: "too few samples"), the
    draws where the replaced claim is printed and wrong (`old_wrong`: labelled at phi > 1),
    where the shipped one says "would not" (`new_not`), and where its bound is printed and
    under the truth (`new_wrong`)."""
    truth = 1 - 1 / math.sqrt(phi)
    labelled = old_wrong = new_not = new_wrong = 0
    for k in range(draws):
        mean = counts[k % len(counts)].mean(axis=0)       # both sides alike: no change
        b, c = rng.poisson(mean), rng.poisson(mean)
        b, c = counting.corrected(b, c)
        v = 1 / b + 1 / c
        x = np.log(c / b) + rng.normal(0, np.sqrt((phi - 1) * v))
        d = counting.dispersion(x, v)
        if d is None or not d.counting:
            continue
        labelled += 1
        old_wrong += phi > 1
        gain = d.quiet_gain()
        new_not += gain == 0
        new_wrong += gain < truth - 1e-12
    return {"labelled": labelled / draws, "old_wrong": old_wrong / draws, "new_not": new_not / draws,
            "new_wrong": new_wrong / draws}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=8000, help="simulated rows per dispersion")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    counts = recorded_counts()
    rng = np.random.default_rng(a.seed)
    print(f"figure 7f: 'too few samples' and the quieter machine, {len(counts)} recorded rows of "
          f"0.5-15% share ({np.median([c.mean() for c in counts]):,.0f} samples a rep a side, "
          f"13 reps), {a.draws} simulated rows per true dispersion")
    for phi in PHIS:
        r = simulate(counts, phi, a.draws, rng)
        print(f"  dispersion {phi:.1f} (a quiet machine narrows by {100 * (1 - 1 / math.sqrt(phi)):.0f}%): "
              f"'too few samples' {100 * r['labelled']:.1f}% of rows; a wrong claim printed in "
              f"{100 * r['old_wrong']:.1f}% (replaced: 'would not') / {100 * r['new_wrong']:.1f}% "
              f"(shipped: 'by up to X%' under the truth; 'would not' in {100 * r['new_not']:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
