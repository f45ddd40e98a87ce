"""`make bench` figure 11c: "the perf-on and perf-off blocks agree", by equivalence, on
recorded paired runs.

Both servers of a paired rep are sampled at one rate in the same blocks, so perf's cost
cancels in the cand/base ratio unless it tilts it: analysis/compare/perf_blocks.py compares
each rep's ratio over its perf-on windows with its ratio over its perf-off windows, paired
over the reps. An interval that holds 0 only says the run saw no tilt; +0.2% [-1.1, +2.3]
(tests/data/runs/aa-decides-emr-1) cannot rule out one past the +-2% the run aims its
throughput at. So the blocks are said to agree only when the interval lies within
+-perf_blocks.TILT (equivalence: two one-sided tests, each at 2.5%), disagree when it
excludes 0 and passes the line, and otherwise "cannot tell".

Each recorded run's per-rep log ratios on/off (its own reps, centred on their
Hodges-Lehmann pseudo-median, the location the paired signed-rank interval estimates: no
tilt) are resampled whole, as many as it has, a tilt planted (every rep's on-ratio times 1 + tilt),
and the library's interval (stats.compare, paired, as perf_blocks.agreement) judged by
the rule replaced ("agree" whenever it holds 0) and the shipped one.

  .venv/bin/python bench/perf_tilt.py
  .venv/bin/python bench/perf_tilt.py --draws 4000
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import stats  # noqa: E402
from analysis.compare import perf_blocks  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402
from analysis.ranks import pseudo_median  # noqa: E402

RUNS = ("aa-decides-emr-1", "aa-decides-emr-2", "aa-decides-emr-3", "known-cost-nopause-default-emr",
        "known-cost-nopause-control-default-emr", "moved-cost-default-emr", "mset-aa-paired-small",
        "known-cost-default-emr-1499hz", "known-cost-default-emr-199hz")
TILTS = (0.0, 0.01, 0.02, 0.03)


def tilts(name: str) -> np.ndarray:
    """The run's per-rep log(ratio on / ratio off)."""
    run = load_run(REPO / "tests" / "data" / "runs" / name)
    a, b = list(run.manifest.variants)[:2]
    return np.array([math.log(on / off) for off, on in perf_blocks.rep_ratios(run, a, b)])


def said(d: np.ndarray) -> tuple[bool, str]:
    """(the replaced rule said they agree, what the shipped rule says) of one run's values."""
    ch = stats.compare(np.ones(len(d)), np.exp(d), paired=True, higher_is_better=True)
    return ch.rel_ci_low <= 0 <= ch.rel_ci_high, perf_blocks.judge(ch.rel_ci_low, ch.rel_ci_high)


def rates(d: np.ndarray, tilt: float, draws: int, rng: np.random.Generator
          ) -> tuple[float, float, float]:
    """(old "agree", shipped "agree", shipped "disagree") shares of `draws` resampled runs."""
    centred = d - pseudo_median(d)
    old = new = dis = 0
    for _ in range(draws):
        x = rng.choice(centred, len(d), replace=True) + math.log1p(tilt)
        if np.ptp(x) == 0:
            continue
        o, n = said(x)
        old, new, dis = old + o, new + (n == "agree"), dis + (n == "disagree")
    return old / draws, new / draws, dis / draws


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=1000, help="resampled runs per run and tilt")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    print(f"figure 11c: 'the perf-on and perf-off blocks agree' (line ±{perf_blocks.TILT:.0%}), "
          f"{a.draws} resampled runs per recorded run and planted tilt; shares said to agree "
          "by the replaced rule (interval holds 0) / the shipped one (interval within the line)")
    pooled = {t: [0.0, 0.0, 0.0] for t in TILTS}
    for name in RUNS:
        d = tilts(name)
        cells = []
        for t in TILTS:
            old, new, dis = rates(d, t, a.draws, rng)
            pooled[t] = [p + v / len(RUNS) for p, v in zip(pooled[t], (old, new, dis))]
            cells.append(f"{100 * t:+.0f}%: {100 * old:5.1f} / {100 * new:5.1f}")
        print(f"  {name:40} {len(d):2} reps, sd {d.std(ddof=1) * 100:.2f}%  " + "  ".join(cells))
    print("  all runs: " + "  ".join(f"tilt {100 * t:+.0f}%: agree {100 * o:.1f}% / {100 * n:.1f}%, "
                                      f"disagree {100 * x:.1f}%" for t, (o, n, x) in pooled.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
