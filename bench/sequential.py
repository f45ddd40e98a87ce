"""`make bench` figure 16: a run that decides stops when it has answered; does every interval
it prints keep its coverage, and how often does an A/A run print a false verdict?

A run that decides (collectors/runner/looks.py) looks at itself at planned counts of paired
reps (analysis/sequential.looks: 4, 6, 10, 13 for a plan of 13) and stops at the first look where
the throughput row and every focus row of 5% of the samples or more is decided (its interval
excludes 0) or has reached its target (its detectable size, 80% power, at most ±2% for the
throughput and ±5% for a focus row). Every row is printed at the level of the look that
stopped the run. Three rules for that level:

- spending (shipped): look j at 1 - alpha_j, the alpha_j from the alpha-spending function
  0.05 (n/N)^3, adding up to 0.05 (a union bound over the looks);
- naive: 95% at every look (the same stopping rule);
- fixed: no looks, the N planned reps at 95% (the run before it stopped when answered).

The focus rows are one family at each look, Holm at q = the look's alpha over the family's
rows (the recorded run's focus family), their intervals at 1 - q/(m - R) as the comparison
prints them (analysis/compare/multiplicity.py). Each interval is the row's method over the
reps' log ratios (`_method`: the signed-rank interval where its widest reaches the level, else
the paired t), its detectable size the paired t's calibrated K (analysis/power.py). Left out:
the top movers (judged by their own family, never holding the run), the spread between runs
(figure 17) and a plan made again after its first rep (collectors/runner/replan.py; its looks
are those of the plan it takes).

Each recorded run's reps are resampled whole (a rep's throughput and focus rows together,
so what ties them is kept; skewed rows keep their skew): as recorded, the truth of a row is
its recorded mean (coverage where the change is real: the known costs, the demo); centred,
every row's truth is 0 (an A/A run: coverage, and the share of runs whose printed table
holds a decided row, the false verdicts). noise-paired-1rep-640pairs is left out: one rep,
no spread between reps to resample.

`--short` prints, for each planned count from 4 to 13, the lowest coverage of any printed row
(as recorded and as an A/A run) under the shipped rule: where it reaches 94%
(analysis/sequential.FLOOR_REPS) and what a plan below that keeps (SHORT_COVERAGE, which
the report marks rows with).

  .venv/bin/python bench/sequential.py
  .venv/bin/python bench/sequential.py --runs 4000 --planned 20
  .venv/bin/python bench/sequential.py --short
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import special
from scipy import stats as sps

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis import sequential  # noqa: E402
from analysis.inputs.option_specs import TARGET_FOCUS, TARGET_THROUGHPUT, TARGET_UNITS  # noqa: E402
from analysis.power import POWER, multiplier  # noqa: E402
from analysis.ranks import order_stat_interval, paired_max_confidence, signed_rank_cdf  # noqa: E402

RUNS = ("aa-decides-emr-1", "aa-decides-emr-2", "aa-decides-emr-3", "mset-aa-paired-small",
        "known-cost-control-default-emr", "known-cost-nopause-control-default-emr",
        "known-cost-default-emr-1499hz", "known-cost-default-emr-199hz",
        "known-cost-nopause-default-emr", "mset-demo-stalls-xeon480",
        "noise-paired-12reps-16pairs", "noise-paired-8reps-48pairs",
        "aa-default-13reps-xeon480")
RULES = ("spending", "naive", "fixed")


@dataclass
class Recording:
    """One recorded run as the simulation draws from it: per-rep log ratios, the throughput
    first and then each focus row of 5% of the samples or more, and the focus family's size."""
    name: str
    cols: list[str]
    x: np.ndarray            # reps x rows
    family: int              # rows the focus family judges (Holm's m)


def recording(name: str) -> Recording | None:
    """A recorded run's matrix (None when it has fewer than 3 reps with every row)."""
    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.compare.throughput import main_log_ratios
    from analysis.inputs.rundir import load_run
    from collectors.runner.targets import focus_ratios
    path = REPO / "tests" / "data" / "runs" / name
    if not (path / "manifest.json").is_file():
        return None
    run = load_run(path)
    base, cand = list(run.manifest.variants)[:2]
    r = analyse(run, CompareOptions(run_level=False))
    cols = {"throughput": main_log_ratios(run, base, cand), **focus_ratios(r)}
    n = min(len(v) for v in cols.values())
    if n < 3:
        return None
    fam = r.profile.fdr.comparisons if r.profile.fdr is not None else len(cols) - 1
    return Recording(name, list(cols), np.column_stack([np.asarray(v[:n]) for v in cols.values()]),
                     max(fam, len(cols) - 1))


def _method(n: int, level: float) -> str:
    """The interval the comparison prints at `level` over n pairs (analysis/stats._choose):
    the signed-rank interval where its widest reaches the level, else the paired t."""
    return "signed-rank" if paired_max_confidence(n) + 1e-12 >= level else "paired-t"


def pseudo_median(v: np.ndarray) -> float:
    """The population's pseudo-median: the median of (X1 + X2)/2 over independent draws
    from the recorded values (what a signed-rank interval covers)."""
    return float(np.median((v[:, None] + v[None, :]) / 2))


def _walsh(x: np.ndarray) -> np.ndarray:
    """Each run's sorted Walsh averages (runs x n -> runs x n(n+1)/2)."""
    i, j = np.triu_indices(x.shape[1])
    return np.sort((x[:, i] + x[:, j]) / 2, axis=1)


def _p(x: np.ndarray, method: str) -> np.ndarray:
    """Each run's two-sided p of no change by the row's method (ranks.paired_p_value)."""
    n = x.shape[1]
    if method == "paired-t":
        se = np.maximum(x.std(axis=1, ddof=1), 1e-12) / math.sqrt(n)
        return 2 * sps.t.sf(np.abs(x.mean(axis=1)) / se, n - 1)
    w = _walsh(x)
    cdf = np.asarray(signed_rank_cdf(n))
    return np.minimum(1.0, 2 * cdf[np.minimum((w <= 0).sum(axis=1), (w >= 0).sum(axis=1))])


def _interval(x: np.ndarray, level: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Each run's interval at its own level (runs,), by the row's method."""
    n = x.shape[1]
    low, high = np.empty(len(x)), np.empty(len(x))
    if method == "paired-t":
        half = special.stdtrit(n - 1, 1 - (1 - level) / 2) * x.std(axis=1, ddof=1) / math.sqrt(n)
        return x.mean(axis=1) - half, x.mean(axis=1) + half
    w, cdf = _walsh(x), signed_rank_cdf(n)
    for lv in np.unique(level):
        at = level == lv
        lo, hi, _ = order_stat_interval(np.arange(w.shape[1], dtype=float), cdf, 1 - lv)
        low[at], high[at] = w[at, int(lo)], w[at, int(hi)]
    return low, high


def _detectable(x: np.ndarray, level: np.ndarray, method: str) -> np.ndarray:
    """The row's detectable size (80% power, analysis/power.py's K for its method)."""
    n = x.shape[1]
    ks = {lv: multiplier(method, n, n, round(float(lv), 9), POWER) for lv in np.unique(level)}
    k = np.array([ks[lv] if ks[lv] is not None else math.inf for lv in level])
    return np.expm1(k * x.std(axis=1, ddof=1) / math.sqrt(n))


def _futile(x: np.ndarray, size: np.ndarray, level: np.ndarray, target: float, end: tuple[int, float]
            ) -> np.ndarray:
    """The shipped futility check (analysis/sequential.out_of_reach): the row would neither
    reach its target nor be decided by the plan's end (`end`: its reps and last level)."""
    n = x.shape[1]
    change = np.expm1(x.mean(axis=1))
    return np.array([math.isfinite(d) and sequential.out_of_reach(float(d), float(c), target, n, end[0],
                                                                   float(lv), end[1])
                     for d, c, lv in zip(size, change, level)])


def _look(x: np.ndarray, alpha: float, family: int, truth: dict[str, np.ndarray],
          end: tuple[int, float] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One look at every simulated run: (settled, covered, decided), each runs x rows.
    x: runs x n reps x rows (the throughput first); alpha: the look's; truth: each row's
    mean ("paired-t") and pseudo-median ("signed-rank")."""
    runs, n, rows = x.shape
    level = np.full((runs, rows), 1 - alpha)
    methods = [_method(n, 1 - alpha)] + [_method(n, 1 - alpha / max(family, 1))] * (rows - 1)
    if rows > 1:        # the focus family: Holm at q = alpha over `family` rows
        p = np.column_stack([_p(x[:, :, c], methods[c]) for c in range(1, rows)])
        steps = alpha / (family - np.arange(rows - 1))
        called = np.cumprod(np.sort(p, axis=1) <= steps, axis=1).sum(axis=1)
        level[:, 1:] = (1 - alpha / np.maximum(family - called, 1))[:, None]
    settled, covered, decided = (np.zeros((runs, rows), bool) for _ in range(3))
    for c in range(rows):
        low, high = _interval(x[:, :, c], level[:, c], methods[c])
        # a draw with no spread (every rep one recorded value) has no interval: the comparison
        # prints "insufficient data" (stats._no_spread), neither decided nor at its target;
        # counted as a miss if the run stops there
        some = x[:, :, c].std(axis=1) > 0
        decided[:, c] = some & ((low > 0) | (high < 0))
        covered[:, c] = some & (low <= truth[methods[c]][c]) & (truth[methods[c]][c] <= high)
        target = TARGET_THROUGHPUT if c == 0 else TARGET_FOCUS
        size = _detectable(x[:, :, c], level[:, c], methods[c])
        settled[:, c] = decided[:, c] | (some & (size <= target))
        if end is not None and c > 0:      # a focus row out of reach by the plan's end: not
            # waited for (the throughput row is, to the plan's end: row_targets.open_rows)
            settled[:, c] |= some & ~decided[:, c] & _futile(x[:, :, c], size, level[:, c], target, end)
    return settled, covered, decided


def population(rec: Recording, aa: bool) -> np.ndarray:
    """The values a simulated run draws its reps from: the recorded reps, or for an A/A run
    each rep's deviations from the recorded mean with both signs (one build on both sides:
    a rep's ratios and their inverses are equally likely), so every row's truth is 0."""
    if not aa:
        return rec.x
    d = rec.x - rec.x.mean(axis=0)
    return np.vstack([d, -d])


def simulate(rec: Recording, rule: str, runs: int, planned: int = TARGET_UNITS, aa: bool = False,
             seed: int = 1) -> dict[str, object]:
    """`runs` resampled runs of `rec` under `rule`: each row's coverage at the look that
    stopped the run, the share of runs with a decided row (throughput, focus family, either;
    aa: every one false), the mean reps, and the share stopped before the plan's end."""
    rng = np.random.default_rng([seed, len(rec.x), rec.x.shape[1], RULES.index(rule), aa])
    x = population(rec, aa)
    truth = {"paired-t": x.mean(axis=0),
             "signed-rank": np.array([pseudo_median(x[:, c]) for c in range(x.shape[1])])}
    draws = x[rng.integers(0, len(x), (runs, planned))]
    counts = sequential.looks(planned) if rule != "fixed" else [planned]
    alphas = sequential.spending(counts) if rule == "spending" else [0.05] * len(counts)
    stopped = np.zeros(runs, bool)
    covered = np.zeros((runs, x.shape[1]), bool)
    decided = np.zeros((runs, x.shape[1]), bool)
    reps = np.full(runs, planned)
    for j, (n, a) in enumerate(zip(counts, alphas)):
        end = (planned, 1 - alphas[-1]) if rule == "spending" else None
        settled, cov, dec = _look(draws[:, :n], a, rec.family, truth, end)
        stop = ~stopped & (settled.all(axis=1) | (j == len(counts) - 1))
        covered[stop], decided[stop], reps[stop] = cov[stop], dec[stop], n
        stopped |= stop
    return {"coverage": dict(zip(rec.cols, covered.mean(axis=0))),
            "decided": {"throughput": float(decided[:, 0].mean()),
                        "focus": float(decided[:, 1:].any(axis=1).mean()),
                        "any": float(decided.any(axis=1).mean())},
            "reps": float(reps.mean()), "early": float((reps < planned).mean())}


def table(recs: list[Recording], runs: int, planned: int) -> list[tuple[str, str, dict, dict]]:
    """(recording, rule, as recorded, as an A/A run) for every recording and rule."""
    return [(rec.name, rule, simulate(rec, rule, runs, planned), simulate(rec, rule, runs, planned, True))
            for rec in recs for rule in RULES]


def lowest(recs: list[Recording], runs: int, planned: int) -> tuple[float, str]:
    """The lowest coverage of any printed row under the shipped rule at `planned` reps, as
    recorded or as an A/A run, and where it was."""
    found = [(v, f"{rec.name}: {col}{' (A/A)' if aa else ''}")
             for rec in recs for aa in (False, True)
             for col, v in simulate(rec, "spending", runs, planned, aa)["coverage"].items()]
    return min(found)


def short_table(recs: list[Recording], runs: int) -> None:
    print(f"figure 16, short plans: the lowest coverage of a printed row by planned reps, "
          f"{runs} resampled runs each (floor {sequential.FLOOR_REPS})")
    for planned in range(4, TARGET_UNITS + 1):
        v, where = lowest(recs, runs, planned)
        print(f"  {planned:>2} planned: {v:.1%}  {where}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--planned", type=int, default=TARGET_UNITS, help="paired reps planned (default 13)")
    ap.add_argument("--short", action="store_true", help="the lowest coverage by planned reps, 4 to 13")
    args = ap.parse_args(argv)
    if args.short:
        short_table([r for r in (recording(n) for n in RUNS) if r is not None], args.runs)
        return 0
    counts = sequential.looks(args.planned)
    alphas = sequential.spending(counts)
    print(f"figure 16: stop when answered, {args.runs} resampled runs of {args.planned} planned paired "
          f"reps per recording; looks at {counts}, alpha {alphas} (levels "
          + ", ".join(f"{1 - a:.2%}" for a in alphas) + ")")
    print(f"{'recording':<40}{'rule':<9}{'lowest':>8}{'tput':>7}{'reps':>6}{'early':>6} |"
          f"{'A/A lowest':>11}{'tput':>7}{'false: tput':>12}{'focus':>7}{'any':>7}{'reps':>6}")
    recs = [r for r in (recording(n) for n in RUNS) if r is not None]
    pooled: dict[str, list[float]] = {r: [] for r in RULES}
    for name, rule, rec, aa in table(recs, args.runs, args.planned):
        cov, aacov, false = rec["coverage"], aa["coverage"], aa["decided"]
        pooled[rule] += list(cov.values()) + list(aacov.values())
        print(f"{name:<40}{rule:<9}{min(cov.values()):>8.1%}{cov['throughput']:>7.1%}"
              f"{rec['reps']:>6.1f}{rec['early']:>6.0%} |{min(aacov.values()):>11.1%}"
              f"{aacov['throughput']:>7.1%}{false['throughput']:>12.1%}{false['focus']:>7.1%}"
              f"{false['any']:>7.1%}{aa['reps']:>6.1f}")
    for rule, covs in pooled.items():
        print(f"  {rule:<9} every printed row: mean coverage {np.mean(covs):.1%}, lowest {min(covs):.1%} "
              f"({len(covs)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
