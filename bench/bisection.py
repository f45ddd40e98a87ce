"""`make bench` figure 15: the error rates of `stallscope bisect`, by simulation from recorded
per-rep values.

Each simulated paired rep is a real one: a residual (its run's mean taken out) of the paired
reps of three recorded runs of this project's 2-core VM (tests/data/runs: 12 + 8 reps of
MSET 50 keys Redis 8.0 against its prefetch build, 5 reps of an A/A run), drawn with
replacement, plus the true change. Two figures:

  15a one step (analysis/bisect/rule.py) at true changes 0, m/2, m and 2m of the minimum m:
      how often it says different / same / not yet, against the naive rule (a 95% interval
      at every look; different when it excludes 0, same when it lies inside ±m)
  15b whole bisections (analysis/bisect/search.py) of an 8-commit range, the culprit at a
      random commit with a change of m, and of a range without a change: right culprit,
      wrong culprit, no culprit, unresolved; paired reps used; the same with the naive
      rule deciding each step

    .venv/bin/python bench/bisection.py [--sims 4000]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sps

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.bisect import rule  # noqa: E402
from analysis.bisect.search import FUNCTIONS, REST, Bisection, Commit  # noqa: E402
from analysis.compare import pair_clusters  # noqa: E402
from analysis.compare.throughput import paired_units  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

RUNS = ROOT / "tests" / "data" / "runs"
RECORDED = ("noise-paired-12reps-16pairs", "noise-paired-8reps-48pairs", "mset-aa-default")
COMMITS = 8


def residuals() -> np.ndarray:
    """The recorded paired reps' log ratios, each run's mean taken out."""
    out = []
    for name in RECORDED:
        run = load_run(RUNS / name)
        a, b = list(run.manifest.variants)[:2]
        units, _ = pair_clusters.units(paired_units(run, a, b))
        x = np.array([math.log(u.cand / u.base) for u in units])
        out.append(x - x.mean())
    return np.concatenate(out)


def naive_look(y: np.ndarray, m: float) -> str:
    """One look of the naive rule: a 95% interval, different when it excludes 0, same inside ±m."""
    d = math.log1p(m)
    h = float(sps.t.ppf(0.975, len(y) - 1)) * float(y.std(ddof=1)) / math.sqrt(len(y))
    if y.mean() - h > 0 or y.mean() + h < 0:
        return rule.DIFFERENT
    if -d < y.mean() - h and y.mean() + h < d:
        return rule.SAME
    return rule.NOT_YET


def naive(x: np.ndarray, m: float, looks=rule.LOOKS) -> str:
    for n in looks:
        if (v := naive_look(x[:n], m)) != rule.NOT_YET:
            return v
    return rule.NOT_YET


def sequential(x: np.ndarray, m: float, alpha: float, looks=rule.LOOKS) -> tuple[str, int]:
    """The step as the driver runs it: look after each planned number of reps, stop at a decision."""
    for n in looks:
        d = rule.decide(x[:n], m, alpha, looks)
        if d.verdict != rule.NOT_YET:
            return d.verdict, n
    return rule.NOT_YET, looks[-1]


def one_step(res: np.ndarray, m: float, alpha: float, sims: int, seed: int = 20261127) -> dict:
    """figure 15a: {true change: {rule: {verdict: share}}}."""
    rng = np.random.default_rng(seed)
    out = {}
    for mult in (0.0, 0.5, 1.0, 2.0):
        true = math.log1p(m * mult)
        draws = rng.choice(res, size=(sims, rule.LOOKS[-1]), replace=True) + true
        ours = [sequential(x, m, alpha)[0] for x in draws]
        theirs = [naive(x, m) for x in draws]
        out[mult] = {r: {v: sum(1 for y in got if y == v) / sims
                         for v in (rule.DIFFERENT, rule.SAME, rule.NOT_YET)}
                     for r, got in (("three-way", ours), ("naive", theirs))}
    return out


def simulate(res: np.ndarray, effect: list[float], m: float, looks: tuple[int, ...],
             rng: np.random.Generator, naive_steps: bool = False) -> tuple[Bisection, int]:
    """One simulated bisection of the range whose commit i carries `effect[i]` (log scale;
    effect[0] is the good end): the real search, each probe's paired reps drawn from `res`
    plus the true change between the probe and its base. (the ended search, paired reps used)"""
    commits = [Commit(f"{i:040x}", f"c{i}", "") for i in range(len(effect))]
    b = Bisection("sim", "", "good", "bad", commits, m, "", rule.step_alpha(len(effect) - 1),
                  list(looks), 1e9)
    reps = 0
    while (s := b.next_step()) is not None:
        if s.role in (FUNCTIONS, REST):      # the report's comparisons: not part of the search
            s.decision = {"verdict": "same", "n": 0, "change": 0.0, "low": 0.0, "high": 0.0, "level": 0.0}
            continue
        n = (rule.next_look(len(s.log_ratios), b.looks) or b.looks[-1]) - len(s.log_ratios)
        s.log_ratios += list(rng.choice(res, n) + effect[s.probe] - effect[s.base])
        reps += n
        s.decision = rule.decide(s.log_ratios, m, b.alpha, b.looks).__dict__
        if naive_steps:
            s.decision["verdict"] = naive_look(np.array(s.log_ratios), m)
    return b, reps


def bisection(res: np.ndarray, m: float, culprit: int | None, rng: np.random.Generator,
              naive_steps: bool = False) -> tuple[str, int]:
    """One simulated bisection of COMMITS commits: (outcome, paired reps used)."""
    effect = [0.0 if culprit is None or i < culprit else math.log1p(m) for i in range(COMMITS + 1)]
    b, reps = simulate(res, effect, m, rule.LOOKS, rng, naive_steps)
    c = b.culprit()
    if c is not None:
        return ("right culprit" if b.commits.index(c) == culprit else "wrong culprit"), reps
    return b.status, reps


def whole(res: np.ndarray, m: float, sims: int, seed: int = 20261127) -> dict:
    """figure 15b: {(rule, "a change of m" | "no change"): {outcome: share, "reps": mean}}."""
    rng = np.random.default_rng(seed)
    out = {}
    for (name, label, has) in (("three-way", "a change of m", True), ("three-way", "no change", False),
                               ("naive", "a change of m", True), ("naive", "no change", False)):
        got = [bisection(res, m, int(rng.integers(1, COMMITS + 1)) if has else None, rng,
                         naive_steps=name == "naive") for _ in range(sims)]
        shares = {o: sum(1 for g, _ in got if g == o) / sims
                  for o in ("right culprit", "wrong culprit", "no culprit", "unresolved")}
        out[(name, label)] = {**shares, "reps": float(np.mean([r for _, r in got]))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=4000)
    a = ap.parse_args()
    res = residuals()
    sd = float(res.std(ddof=1))
    alpha = rule.step_alpha(COMMITS)
    m = rule.default_min_change(sd, alpha)
    print(f"== 15. bisect: {len(res)} recorded paired reps (sd {sd:.2%} a rep), an {COMMITS}-commit "
          f"range, each step's error {alpha:.2%}, minimum change m = {m:.1%} (the default for that "
          f"spread), looks after {rule.LOOKS}; {a.sims} simulations")
    print("-- 15a. one step: share of steps that end in each decision")
    for mult, rules in one_step(res, m, alpha, a.sims).items():
        for name, v in rules.items():
            print(f"   true change {mult:>3g} m ({m * mult:5.1%})  {name:9s}  different {v['different']:6.1%}"
                  f"  same {v['same']:6.1%}  not yet {v['not yet']:6.1%}")
    print("-- 15b. whole bisections")
    for (name, label), v in whole(res, m, max(a.sims // 4, 200)).items():
        print(f"   {name:9s} {label:14s} right culprit {v['right culprit']:6.1%}  wrong culprit {v['wrong culprit']:6.1%}"
              f"  no culprit {v['no culprit']:6.1%}  unresolved {v['unresolved']:6.1%}  paired reps {v['reps']:.0f}")


if __name__ == "__main__":
    main()
