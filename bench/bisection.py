"""`make bench` figure 15: the error rates and the cost of `stallscope bisect`, by simulation
from recorded per-rep values.

Each simulated paired rep is a real one: a residual (its run's mean taken out) of the paired
reps of three recorded runs of this project's 2-core VM (tests/data/runs: 12 + 8 reps of
MSET 50 keys Redis 8.0 against its prefetch build, 5 reps of an A/A run), drawn with
replacement, plus the true change. Two figures, each with three rules deciding the steps:

  sequential   the rule (analysis/bisect/rule.py): Wald's test of no change against a change
               of the minimum m, the spread pooled over the bisection's steps, looks after 4
               paired reps and then every 2
  interval     the rule until 2026-12-06: a t interval at 1 - alpha / K after 3, 6 and 12
               reps (K looks; more looks for a minimum below the default), different when it
               lies beyond m/2, same inside ±m
  naive        a 95% interval at every look of the interval rule: different when it excludes 0

  15a one step of the ends (both directions) at true changes 0, m/2, m and 2m: how often it
      says different / same / not yet, and its paired reps
  15b whole bisections (analysis/bisect/search.py) of an 8-commit range, the culprit at a
      random commit with a change of m (or of m/2, below the minimum), and of a range without
      a change: right culprit, wrong culprit, no culprit, unresolved, with 95% intervals;
      paired reps used
  15c one long step of the sequential rule (a minimum of half a rep's spread): its errors

The minimum m is the default for the recorded spread (rule.default_min_change). Figure 5c
(bench/history.py, bench/bisect_findings.py) runs the same search on the history bench's
alerts, with a clock.

    .venv/bin/python bench/bisection.py [--sims 4000]
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from scipy import stats as sps
from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.bisect import rule  # noqa: E402
from analysis.bisect.search import FUNCTION_REPS, FUNCTIONS, REST, Bisection, Commit, Step  # noqa: E402
from analysis.compare import pair_clusters  # noqa: E402
from analysis.compare.throughput import paired_units  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402

RUNS = ROOT / "tests" / "data" / "runs"
RECORDED = ("noise-paired-12reps-16pairs", "noise-paired-8reps-48pairs", "mset-aa-default")
COMMITS = 8
RULES = ("sequential", "interval", "naive")
OLD_LOOKS = (3, 6, 12)


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


# ------------------------------------------------------------------ the rules before
def _interval(y: np.ndarray, level: float) -> tuple[float, float]:
    h = float(sps.t.ppf(1 - (1 - level) / 2, len(y) - 1)) * float(y.std(ddof=1)) / math.sqrt(len(y))
    return float(y.mean()) - h, float(y.mean()) + h


def interval_look(y: np.ndarray, m: float, alpha: float, looks: tuple[int, ...]) -> str:
    """The rule until 2026-12-06 at one look: different beyond m/2, same inside ±m."""
    d = math.log1p(m)
    lo, hi = _interval(y, 1 - alpha / len(looks))
    if lo > d / 2 or hi < -d / 2:
        return rule.DIFFERENT
    return rule.SAME if -d < lo and hi < d else rule.NOT_YET


def naive_look(y: np.ndarray, m: float) -> str:
    """One look of the naive rule: a 95% interval, different when it excludes 0, same inside ±m."""
    d = math.log1p(m)
    lo, hi = _interval(y, 0.95)
    if lo > 0 or hi < 0:
        return rule.DIFFERENT
    return rule.SAME if -d < lo and hi < d else rule.NOT_YET


def old_looks(m: float, sd: float, alpha: float) -> tuple[int, ...]:
    """The interval rule's looks: (3, 6, 12) when they give 95% power at m by the last, else
    (3, 6, N/2, N) with the smallest such N up to 48 (its plan_looks)."""
    for last in (12, 16, 24, 32, 48):
        looks = OLD_LOOKS if last == 12 else (3, 6, last // 2, last)
        t = float(sps.t.ppf(1 - alpha / len(looks) / 2, last - 1))
        if 2 * (t + rule.POWER_Z) * sd / math.sqrt(last) <= math.log1p(m):
            return looks
    return (3, 6, 24, 48)


# ------------------------------------------------------------------ the search, simulated
@dataclass
class Clock:
    """What a bisection costs in wall time (figure 5c): each look is a run of its reps, each
    probe's commit is built once (the range's ends are built already), and the budget is
    checked before every look, as collectors/bisect/driver.py does."""
    rep_s: float
    look_s: float
    build_s: float
    budget_s: float


@dataclass
class Sim:
    """One simulated bisection: the ended search, paired reps used, seconds on the clock at
    its end and when the culprit was proven (None: never)."""
    b: Bisection
    reps: int
    spent: float
    proven_s: float | None


def simulate(res: np.ndarray, effect: list[float], m: float, rng: np.random.Generator,
             how: str = "sequential", hint: int | None = None, sd: float | None = None,
             clock: Clock | None = None) -> Sim:
    """One simulated bisection of the range whose commit i carries `effect[i]` (log scale;
    effect[0] is the good end): the real search, each step's paired reps drawn from `res`
    plus the true change between its commits, decided by `how`. The culprit's parent against
    the culprit is a step like the others (its first look FUNCTION_REPS reps); the culprit
    against the bad end is not simulated (its verdict changes nothing). It ends there, when
    the search does, or when the clock's budget is spent."""
    n = len(effect) - 1
    commits = [Commit(f"{i:040x}", f"c{i}", "") for i in range(n + 1)]
    alpha = rule.step_alpha(n, hinted=hint is not None)
    looks = list(rule.LOOKS) if how == "sequential" else list(old_looks(m, sd or float(res.std(ddof=1)), alpha))
    b = Bisection("sim", "", "good", "bad", commits, m, "", alpha, looks, 1e9, hint=hint)
    reps, spent, built, proven = 0, 0.0, {0, n}, None
    while (s := b.next_step()) is not None:
        if s.role == FUNCTIONS and proven is None:
            proven = spent
        if s.role == REST or s.role == FUNCTIONS and how != "sequential":
            b.status = "culprit"
            break
        if clock is not None and spent >= clock.budget_s:
            b.out_of_budget(spent)
            break
        first = FUNCTION_REPS if s.role == FUNCTIONS and not s.log_ratios else 0
        k = first or (rule.next_look(len(s.log_ratios), b.looks) or b.looks[-1]) - len(s.log_ratios)
        s.log_ratios += list(rng.choice(res, k) + effect[s.probe] - effect[s.base])
        reps += k
        if clock is not None:
            spent += k * clock.rep_s + clock.look_s + (clock.build_s if s.probe not in built else 0.0)
            built.add(s.probe)
        s.decision = _decide(b, s, how)
    return Sim(b, reps, spent, proven)


def _decide(b: Bisection, s: Step, how: str) -> dict:
    if how == "sequential":
        return asdict(b.decide(s))
    y = np.asarray(s.log_ratios[:max(k for k in b.looks if k <= len(s.log_ratios))])
    v = interval_look(y, b.min_change, b.alpha, tuple(b.looks)) if how == "interval" else naive_look(y, b.min_change)
    return {"verdict": v, "n": len(y), "change": math.expm1(float(y.mean())), "low": 0.0, "high": 0.0,
            "level": 0.0}


def outcome(b: Bisection, culprit: int | None) -> str:
    """right culprit | wrong culprit | no culprit | unresolved."""
    lo, hi = b.bounds()
    if b.status == "culprit":
        return "right culprit" if hi == culprit else "wrong culprit"
    return b.status


def bisection(res: np.ndarray, m: float, culprit: int | None, rng: np.random.Generator,
              how: str = "sequential", size: float | None = None) -> tuple[str, int]:
    """One simulated bisection of COMMITS commits, a change of `size` (default m) at
    `culprit`: (outcome, paired reps used)."""
    step = math.log1p(m if size is None else size)
    effect = [0.0 if culprit is None or i < culprit else step for i in range(COMMITS + 1)]
    sim = simulate(res, effect, m, rng, how)
    return outcome(sim.b, culprit), sim.reps


# ------------------------------------------------------------------ one step
def step_run(x: np.ndarray, decide: Callable[[np.ndarray], str], looks) -> tuple[str, int]:
    """A step as the driver runs it: look at each planned count, stop at a decision."""
    for n in looks:
        if (v := decide(x[:n])) != rule.NOT_YET:
            return v, n
    return rule.NOT_YET, looks[-1]


def one_step(res: np.ndarray, m: float, alpha: float, sims: int, seed: int = 20261127) -> dict:
    """figure 15a: {true change: {rule: {verdict: share, "reps": mean, "p95": 95th percentile}}}."""
    rng = np.random.default_rng(seed)
    sd = float(res.std(ddof=1))
    looks = old_looks(m, sd, alpha)
    deciders = {
        "sequential": (lambda y: rule.decide(y, m, alpha).verdict, rule.LOOKS),
        "interval": (lambda y: interval_look(y, m, alpha, looks), looks),
        "naive": (lambda y: naive_look(y, m), looks)}
    out = {}
    for mult in (0.0, 0.5, 1.0, 2.0):
        draws = rng.choice(res, size=(sims, rule.MAX_REPS), replace=True) + math.log1p(m * mult)
        out[mult] = {}
        for name, (decide, lk) in deciders.items():
            got = [step_run(x, decide, lk) for x in draws]
            ns = np.array([n for _, n in got])
            out[mult][name] = {**{v: sum(1 for g, _ in got if g == v) / sims
                                  for v in (rule.DIFFERENT, rule.SAME, rule.NOT_YET)},
                               "reps": float(ns.mean()), "p95": float(np.percentile(ns, 95))}
    return out


def whole(res: np.ndarray, m: float, sims: int, seed: int = 20261127) -> dict:
    """figure 15b: {(rule, "a change of m" | "no change" | "a change of m/2"): {outcome: count,
    "n", "reps": mean}}."""
    rng = np.random.default_rng(seed)
    out = {}
    for how in RULES:
        for label, size in (("a change of m", m), ("no change", None), ("a change of m/2", m / 2)):
            got = [bisection(res, m, int(rng.integers(1, COMMITS + 1)) if size else None, rng, how, size)
                   for _ in range(sims)]
            counts = {o: sum(1 for g, _ in got if g == o)
                      for o in ("right culprit", "wrong culprit", "no culprit", "unresolved")}
            out[(how, label)] = {**counts, "n": sims, "reps": float(np.mean([r for _, r in got]))}
    return out


def long_steps(res: np.ndarray, alpha: float, sims: int, seed: int = 20261206) -> dict:
    """figure 15c: one step at a minimum of half a rep's spread (30-40 reps a step, where the
    bound at nu - 1 is closest to Wald's): {(who, true change): (wrong decisions, reps)} for
    the ends (both directions) and a probe (the bad end's), at no change and at the minimum."""
    rng = np.random.default_rng(seed)
    m = math.expm1(0.5 * float(res.std(ddof=1)))
    out = {}
    for who, side in (("the ends", None), ("a probe", -1)):
        for mult, wrong in ((0.0, rule.DIFFERENT), (-1.0, rule.SAME)):
            draws = rng.choice(res, size=(sims, rule.MAX_REPS)) + mult * math.log1p(m)
            got = [step_run(x, lambda y: rule.decide(y, m, alpha, side=side).verdict, rule.LOOKS) for x in draws]
            out[(who, "m" if mult else "0")] = (sum(1 for g, _ in got if g == wrong),
                                                float(np.mean([n for _, n in got])))
    return out


def ci(k: int, n: int) -> str:
    """k of n as a share with its 95% interval (Clopper-Pearson)."""
    iv = binomtest(k, n).proportion_ci(0.95)
    return f"{k / n:.1%} [{iv.low:.1%}, {iv.high:.1%}]"


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
          f"spread); sequential looks after {rule.FIRST_LOOK} paired reps, then every {rule.EVERY} up to "
          f"{rule.MAX_REPS}; interval looks after {old_looks(m, sd, alpha)}; {a.sims} simulations")
    print("-- 15a. one step (the ends: both directions): share of steps that end in each decision, paired reps")
    for mult, rules in one_step(res, m, alpha, a.sims).items():
        for name, v in rules.items():
            print(f"   true change {mult:>3g} m ({m * mult:5.1%})  {name:10s}  different {v['different']:6.1%}"
                  f"  same {v['same']:6.1%}  not yet {v['not yet']:6.1%}  reps {v['reps']:4.1f} "
                  f"(95th percentile {v['p95']:.0f})")
    print("-- 15b. whole bisections [95% intervals]; the culprit at a random commit")
    for (name, label), v in whole(res, m, max(a.sims // 4, 200)).items():
        n = v["n"]
        print(f"   {name:10s} {label:16s} right culprit {v['right culprit'] / n:6.1%}  wrong culprit "
              f"{ci(v['wrong culprit'], n)}  no culprit {v['no culprit'] / n:6.1%}  unresolved "
              f"{v['unresolved'] / n:6.1%}  paired reps {v['reps']:.0f}")

    sims_c = max(a.sims // 2, 200)
    print(f"-- 15c. one long step: a minimum of half a rep's spread ({math.expm1(0.5 * sd):.1%}); its wrong "
          f"decisions [95% intervals] against its error {alpha:.2%}; {sims_c} simulations")
    for (who, truth), (k, reps) in long_steps(res, alpha, sims_c).items():
        wrong = "different" if truth == "0" else "same"
        print(f"   {who:8s} true change {truth}: {wrong} {ci(k, sims_c)}, paired reps {reps:.0f}")


if __name__ == "__main__":
    main()
