"""`make bench` figure 7e: a top mover noisier than its family, judged on its own degrees of
freedom, on recorded paired A/A runs.

A mover's CPU time per operation is judged by its moderated t (analysis/moderated.py): its
dispersion is the larger of its own and the moderated one. Where its own is the larger, the
t it makes has the row's own n - 1 degrees of freedom, not the family's d0 + n - 1: the
moderated degrees of freedom belong to the moderated dispersion, and a row that does not
use it has not earned them. Judged on them, such a row is called changed more often than
its level allows, and its detectable size prints small.

The proof uses no model of the noise: in an A/A run the two servers of a paired rep are
exchangeable, so every pattern of swapped sides (2^n of n reps: each rep's log ratio with
its sign flipped or not) is a draw of the run under no change. For every mover row whose
recorded own dispersion is the larger one, all 2^n patterns are judged, the family's prior
held at the one the recorded rows fit, by the rule as shipped (the row's own degrees of
freedom when its own dispersion is the larger one in that pattern) and by the rule it
replaced (the family's always). A right rule is called changed in 1 - level of them.

  .venv/bin/python bench/mover_df.py
  .venv/bin/python bench/mover_df.py --runs aa-decides-emr-1
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import counting, moderated, power  # noqa: E402
from bench import movers  # noqa: E402

RUNS = ("aa-decides-emr-1", "aa-decides-emr-2", "aa-decides-emr-3",
        "known-cost-nopause-control-default-emr", "mset-aa-paired-small")
LEVELS = (0.95, 0.99, 0.999)


@dataclass
class Flips:
    """One row's 2^n sign patterns: |t| of each, whether its own dispersion was the larger,
    and the degrees of freedom each rule judges it on."""
    name: str
    kind: str
    phi: float             # the recorded own dispersion
    z: np.ndarray          # |t| by the larger of the moderated and the own dispersion
    t_own: np.ndarray      # |t| by its own dispersion alone
    own: np.ndarray        # own dispersion the larger, per pattern
    df_own: int
    df_family: float


def _quantile(df: float | np.ndarray, p: float) -> np.ndarray:
    df = np.asarray(df, float)
    return np.where(np.isinf(df), special.ndtri(p), special.stdtrit(np.where(np.isinf(df), 1, df), p))


def flips(run: str) -> tuple[moderated.Prior, list[Flips]]:
    """The recorded run's family prior and, for each mover row whose own dispersion is the
    larger, its 2^n sign patterns."""
    p = movers.pool(REPO / "tests" / "data" / "runs" / run)
    members = movers.rows(p, p.counts, p.total, p.unit)
    disp = [counting.of_row(r.base, r.cand, r.nb, r.nc, True) for r in members]
    prior = moderated.prior_of([d for d in disp if d is not None])
    n = p.counts.shape[1]
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    out = []
    for r, d in zip(members, disp):
        if d is None or prior.d0 == 0 or d.phi <= moderated.moderate(d.phi, d.df, prior)[0]:
            continue
        nb, nc = counting.corrected(r.nb, r.nc)
        w = 1 / (1 / nb + 1 / nc)
        x = signs * np.log(np.asarray(r.cand) / np.asarray(r.base))
        mean = (x * w).sum(1) / w.sum()
        phi = ((x - mean[:, None]) ** 2 * w).sum(1) / (n - 1)
        if math.isinf(prior.d0):
            mod, df = np.full_like(phi, prior.s02), math.inf
        else:
            mod, df = (prior.d0 * prior.s02 + (n - 1) * phi) / (prior.d0 + n - 1), prior.d0 + n - 1
        out.append(Flips(r.name, r.kind, d.phi, np.abs(mean) / np.sqrt(np.maximum(mod, phi) / w.sum()),
                         np.abs(mean) / np.sqrt(phi / w.sum()), phi > mod, n - 1, df))
    return prior, out


def called(f: Flips, level: float, rule: str) -> float:
    """The share of the row's patterns called changed at `level` by `rule`: "family" (the
    family's degrees of freedom always, the rule replaced), "shipped" (the row's own where
    its own dispersion is the larger), "alone" (the row's own t: no moderation at all)."""
    if rule == "alone":
        return float(np.mean(f.t_own > _quantile(f.df_own, 0.5 + level / 2)))
    df = np.where(f.own, f.df_own, f.df_family) if rule == "shipped" else f.df_family
    return float(np.mean(f.z > _quantile(df, 0.5 + level / 2)))


def rate(rows: list[Flips], level: float, rule: str) -> float:
    """The rows' patterns called changed, as a multiple of 1 - level."""
    return float(np.mean([called(f, level, rule) for f in rows])) / (1 - level)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", nargs="+", default=list(RUNS))
    a = ap.parse_args(argv)
    print("figure 7e: mover rows whose own dispersion is the larger, every pattern of swapped "
          "sides judged; called changed as a multiple of what the level allows (1 - level)")
    for run in a.runs:
        prior, rows = flips(run)
        d0 = "infinite" if math.isinf(prior.d0) else f"{prior.d0:.0f}"
        print(f"  {run}: {len(rows)} rows, {2 ** (rows[0].df_own + 1) if rows else 0} patterns "
              f"each, prior {prior.s02:.2f} on {d0} df")
        for level in LEVELS:
            print(f"    {100 * level:.1f}%: the family's df {rate(rows, level, 'family'):.2f}x, "
                  f"the row's own (shipped) {rate(rows, level, 'shipped'):.2f}x; "
                  f"its own t alone {rate(rows, level, 'alone'):.2f}x")
        for f in rows:
            if f.phi > 2:
                k_old = power.moderated_multiplier(f.df_family, 0.99)
                k_new = power.moderated_multiplier(f.df_own, 0.99)
                print(f"    {f.name} ({f.kind}), dispersion {f.phi:.2f} on {f.df_own} df: at 99.9% "
                      f"{called(f, 0.999, 'family') / 0.001:.1f}x on the family's {f.df_family:.0f} df, "
                      f"{called(f, 0.999, 'shipped') / 0.001:.1f}x on its own; its size at 99% "
                      f"K = {k_old:.2f} -> {k_new:.2f} ({100 * (1 - k_old / k_new):.0f}% small before)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
