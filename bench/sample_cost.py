"""`make bench` figure 11: the sampling rate's cost bound, replayed on recorded stores.

collectors/host/sample_cost.py picks perf's rate from a one-sided 90% upper bound of what a
sample costs the server. Two rules for that bound, replayed on the recorded stores of this
project's KVM guest (tests/data/sample-cost: each finished run's measured cost per sample
and its standard error, oldest first, per host):

  fixed  the rule before: all of the host's runs and the starting cost pooled by inverse variance,
         the bound of a common mean, mu_F + z * SE(mu_F)
  next   the rule now: the case's own runs (from MIN_CASE_RUNS of them, else the host's)
         and the starting cost pooled by random effects (DerSimonian-Laird tau^2), the bound of the
         next run's cost, mu + z * sqrt(SE(mu)^2 + tau^2)

Before each recorded run, each rule is computed from the runs before it. Scoring: the run
measured y_i with its own standard error se_i, so y_i above the bound is no evidence the
bound was wrong (the noise alone carries half the runs whose cost sits on it above it).
What a rule predicts for the next run's measurement is its cost prediction plus that noise,
mean mu and variance SE(mu)^2 + tau^2 + se_i^2 (tau = 0 for the fixed rule). A run
EXCEEDS a rule when (y_i - mu) / sqrt(SE(mu)^2 + tau^2 + se_i^2) > z (z = 1.2816): a rule
whose prediction is right is exceeded by 10% of runs, one that is too narrow by more.

Also printed: the rate each rule would have chosen, its predicted overhead (rate x bound),
and per case, the overhead of the chosen rates at the case's cost in hindsight (all of its
runs in the store pooled by inverse variance, ± its standard error).

Forty recorded runs, most of them noisy (se 30-500 µs a sample for the short CI runs), can
tell a rule's 10% from 20% only roughly. So the same replay also runs on simulated stores
drawn from the recorded ones (--hosts, 11b): the cases the first store measured within
±MAX_SE µs, each at its hindsight cost, each run a draw of its case's cost plus the noise
of one of that case's recorded standard errors, STORE_RUNS runs in a random order of cases.
There the costs are known, so a rule's rate is over the budget when rate x the case's cost
exceeds 1%.

  .venv/bin/python bench/sample_cost.py [--store FILE ...] [--min-case-runs N]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy import stats as sps

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collectors.host import sample_cost as sc  # noqa: E402

DATA = REPO / "tests" / "data" / "sample-cost"
STORES = (DATA / "home-cache.json", DATA / "ci-cache.json")
RULES = ("fixed", "next")
MAX_SE = 10.0          # µs: a case's hindsight cost known this well is used in the simulation
STORE_RUNS = 20        # runs a simulated store holds (sample_cost.MAX_KEPT)


@dataclass(frozen=True)
class Step:
    """One recorded run, predicted by one rule from the runs before it."""
    case: str
    y: float            # the run's measured cost (µs a sample)
    se: float           # its standard error
    hz: int             # the rate the rule would have chosen for it
    bound: float        # the rule's bound (µs a sample)
    z: float            # (y - mu) / sqrt(SE(mu)^2 + tau^2 + se^2)
    pooled: str | None  # the case whose own runs were pooled; None: the host's

    @property
    def exceeded(self) -> bool:
        return self.z > sc.UPPER_Z

    @property
    def predicted(self) -> float:
        return self.hz * self.bound * 1e-6


def entries(path: Path) -> list[list[dict[str, Any]]]:
    """Each host's usable entries in one store, oldest first."""
    doc = json.loads(Path(path).read_text())
    return [sc.usable(es) for es in doc["hosts"].values()]


def replay(es: list[dict[str, Any]], rule: str, min_case_runs: int = sc.MIN_CASE_RUNS
           ) -> list[Step]:
    out = []
    for i, e in enumerate(es):
        before, case = es[:i], sc.entry_case(e)
        used, whose = sc.pick(before, case, min_case_runs) if rule == "next" else (before, None)
        p = sc.pool([(b["us_per_sample"], b["se_us"]) for b in used], random=rule == "next")
        y, se = float(e["us_per_sample"]), float(e["se_us"])
        z = (y - p.mean) / math.sqrt(p.se ** 2 + p.tau ** 2 + se ** 2)
        out.append(Step(case, y, se, sc.rate_for(p.bound), p.bound, z, whose))
    return out


def hindsight(es: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """case -> (its cost pooled over all its runs in the store, the pool's SE), no starting cost."""
    out = {}
    for case in dict.fromkeys(sc.entry_case(e) for e in es):
        w = [(1 / e["se_us"] ** 2, e["us_per_sample"]) for e in es if sc.entry_case(e) == case]
        tot = sum(x for x, _ in w)
        out[case] = (sum(x * y for x, y in w) / tot, 1 / math.sqrt(tot))
    return out


def heterogeneity(es: list[dict[str, Any]]) -> tuple[float, int, float, float]:
    """Cochran's Q of the runs (no starting cost) around their fixed-effect mean, its degrees of
    freedom, its p-value (chi-square) and DerSimonian-Laird's tau (µs a sample)."""
    w = [1 / e["se_us"] ** 2 for e in es]
    y = [e["us_per_sample"] for e in es]
    m = sum(a * b for a, b in zip(w, y)) / sum(w)
    q = sum(a * (b - m) ** 2 for a, b in zip(w, y))
    c = sum(w) - sum(a * a for a in w) / sum(w)
    df = len(es) - 1
    return q, df, float(sps.chi2.sf(q, df)), math.sqrt(max(0.0, (q - df) / c))


def exceedance(steps: list[Step]) -> tuple[int, int, float, float]:
    """(exceeded, runs, and the exact 90% interval of the share)"""
    k, n = sum(s.exceeded for s in steps), len(steps)
    lo = sps.beta.ppf(0.05, k, n - k + 1) if k else 0.0
    hi = sps.beta.ppf(0.95, k + 1, n - k) if k < n else 1.0
    return k, n, float(lo), float(hi)


def case_overheads(steps: list[Step], cost: dict[str, tuple[float, float]]
                   ) -> dict[str, tuple[int, float, float]]:
    """case -> (runs, mean overhead of the chosen rates at the case's hindsight cost, ± SE)"""
    out = {}
    for case, (us, se) in cost.items():
        hz = [s.hz for s in steps if s.case == case]
        if hz:
            m = sum(hz) / len(hz)
            out[case] = (len(hz), m * us * 1e-6, m * se * 1e-6)
    return out


def simulate(es: list[dict[str, Any]], hosts: int, seed: int = 1,
             min_case_runs: int = sc.MIN_CASE_RUNS
             ) -> tuple[dict[str, list[Step]], dict[str, float]]:
    """Both rules replayed on `hosts` simulated stores drawn from the recorded entries `es`
    (the module's docstring), and the cases' costs they were drawn at."""
    cost = {c: us for c, (us, se) in hindsight(es).items() if se <= MAX_SE}
    ses = {c: [e["se_us"] for e in es if sc.entry_case(e) == c] for c in cost}
    rng = random.Random(seed)
    out: dict[str, list[Step]] = {r: [] for r in RULES}
    for _ in range(hosts if len(cost) > 1 else 0):
        store = []
        for _ in range(STORE_RUNS):
            case = rng.choice(sorted(cost))
            se = rng.choice(ses[case])
            store.append({"run": f"00000000-000000-{case}", "se_us": se,
                          "us_per_sample": rng.gauss(cost[case], se)})
        for r in RULES:
            out[r] += replay(store, r, min_case_runs)
    return out, cost


def over_budget(steps: list[Step], cost: dict[str, float]) -> float:
    """The share of runs whose rate costs more than the budget at their case's known cost."""
    return sum(s.hz * cost[s.case] * 1e-6 > sc.BUDGET for s in steps) / max(1, len(steps))


def _print_simulation(path: Path, hosts: int, min_case_runs: int) -> None:
    steps, cost = simulate(entries(path)[0], hosts, min_case_runs=min_case_runs)
    if not steps["next"]:
        print(f"Figure 11b: {path.name} has fewer than two cases known within ±{MAX_SE:.0f} µs")
        return
    known = ", ".join(f"{c} {us:+.1f} µs" for c, us in cost.items())
    print(f"Figure 11b: {hosts} simulated stores of {STORE_RUNS} runs from {path.name} ({known})")
    for r in RULES:
        share, half = per_store(steps[r])
        print(f"  {r:5s}  exceeded {share:.1%} ± {half:.1%} of {len(steps[r])} runs (nominal 10%; "
              f"± the 90% interval over the stores); rate over the 1% budget at the case's cost "
              f"for {over_budget(steps[r], cost):.1%}; mean rate " + ", ".join(
                  f"{c} {mean_hz(steps[r], c):.0f} Hz" for c in cost))


def mean_hz(steps: list[Step], case: str) -> float:
    hz = [s.hz for s in steps if s.case == case]
    return sum(hz) / max(1, len(hz))


def per_store(steps: list[Step]) -> tuple[float, float]:
    """The share of runs exceeded, and its 90% half-width over the simulated stores (the runs
    of one store share their history: they are not independent)."""
    shares = [sum(s.exceeded for s in steps[i:i + STORE_RUNS]) / STORE_RUNS
              for i in range(0, len(steps), STORE_RUNS)]
    m = sum(shares) / len(shares)
    sd = math.sqrt(sum((x - m) ** 2 for x in shares) / max(1, len(shares) - 1))
    return m, 1.645 * sd / math.sqrt(len(shares))


def _print_store(path: Path, es: list[dict[str, Any]], min_case_runs: int) -> dict[str, list[Step]]:
    steps = {r: replay(es, r, min_case_runs) for r in RULES}
    cost = hindsight(es)
    q, df, p, tau = heterogeneity(es)
    print(f"{path.name}: {len(es)} runs, {es[0]['at']} .. {es[-1]['at']}; their spread beyond "
          f"their errors: Q = {q:.1f} on {df} df (p = {p:.3f}), tau = {tau:.1f} µs a sample")
    for r in RULES:
        k, n, lo, hi = exceedance(steps[r])
        hz = [s.hz for s in steps[r]]
        pred = [s.predicted for s in steps[r]]
        own = sum(s.pooled is not None for s in steps[r])
        print(f"  {r:5s}  exceeded {k}/{n} = {k / n:.0%} [90%: {lo:.0%}, {hi:.0%}] (nominal 10%); "
              f"rate median {sorted(hz)[n // 2]} Hz ({min(hz)}-{max(hz)} Hz); predicted overhead "
              f"mean {sum(pred) / n:.2%} (max {max(pred):.2%}); case's own pool {own}/{n}")
    co = {r: case_overheads(steps[r], cost) for r in RULES}
    for case, (us, se) in sorted(cost.items(), key=lambda kv: -kv[1][0]):
        row = "; ".join(f"{r} {co[r][case][1]:.2%} ± {co[r][case][2]:.2%}" for r in RULES)
        print(f"    {case}: {co['next'][case][0]} runs, {us:+.1f} ± {se:.1f} µs a sample in "
              f"hindsight; overhead of the chosen rates at it: {row}")
    return steps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, action="append", help="sample_cost.json (repeatable)")
    ap.add_argument("--min-case-runs", type=int, default=sc.MIN_CASE_RUNS)
    ap.add_argument("--hosts", type=int, default=200, help="simulated stores (figure 11b)")
    a = ap.parse_args(argv)
    print(f"Figure 11: perf's rate from a 90% bound of the cost per sample, replayed on recorded "
          f"stores (budget {sc.BUDGET:.0%}, starting cost {sc.START_US:.0f} ± {sc.START_SE:.0f} µs, "
          f"case pool from {a.min_case_runs} runs)")
    total: dict[str, list[Step]] = {r: [] for r in RULES}
    for path in a.store or STORES:
        for es in entries(path):
            for r, s in _print_store(path, es, a.min_case_runs).items():
                total[r] += s
    for r in RULES:
        k, n, lo, hi = exceedance(total[r])
        print(f"  all    {r:5s} exceeded {k}/{n} = {k / n:.0%} [90%: {lo:.0%}, {hi:.0%}]")
    _print_simulation((a.store or STORES)[0], a.hosts, a.min_case_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
