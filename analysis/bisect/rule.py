"""The three-way rule a bisection step is decided by: is the probe commit *different* from the
good end, the *same*, or is it *not yet* known (more paired reps)?

A step compares the probe with the good end in paired reps (each rep a unit: the log ratio
probe/good of its windows, as `stallscope run` measures it) and looks at its units after
fixed numbers of them, LOOKS (3, 6, 12 by default), never past the last. At each look the
t-interval of the mean log ratio is taken at level 1 - alpha / K (K looks: Bonferroni over
the looks, so the chance that *any* look's interval misses the truth is at most alpha, however
the step ends), and, for a declared minimum change m (log scale, d = log(1 + m)):

    different   the interval lies wholly beyond d/2 on one side (it excludes every change
                of half the minimum or less)
    same        the interval lies wholly inside (-d, +d) (it excludes every change of the
                minimum or more)
    not yet     neither: take the next look's reps, or, after the last, stay undecided

So a step whose true change is 0 is called "different" with probability at most alpha, and a
step whose true change is m or more is called "same" with probability at most alpha: a
wrong call needs an interval that misses the truth. Changes between d/2 and d may go either
way (the indifference zone every such test has). The naive rule (a 95% interval at every
look, "different" when it excludes 0) spends its 5% once per look and calls a change
where there is none far more often: tests/test_bisect_rule.py shows both on recorded reps,
and docs/bisect.md gives the figures.

A bisection of a range makes about log2(n) + 1 steps and names a wrong culprit only if one of
them is called wrong, so the search gives each step alpha = ALPHA / steps (Bonferroni again):
`step_alpha`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

ALPHA = 0.05            # the chance that a bisection names a wrong culprit (or a wrong "none")
LOOKS = (3, 6, 12)      # units (paired reps) after which a step looks; 3: the fewest with a spread
# The default minimum change gives each step 95% power by its last look: a bisection has
# about three steps that must each find the change (the ends, and the probes at or after the
# culprit), so 95% a step is ~85% for the whole search (80% a step was 57%: bench figure 15b).
POWER_Z = 1.6449

DIFFERENT, SAME, NOT_YET = "different", "same", "not yet"


@dataclass(frozen=True)
class Decision:
    """One look of a step: its interval (as a relative change) and what it decided."""
    verdict: str           # different | same | not yet
    n: int                 # units the interval is over
    change: float          # exp(mean log ratio) - 1
    low: float
    high: float
    level: float           # the interval's confidence, 1 - alpha / looks

    def text(self) -> str:
        return (f"{self.change:+.1%} [{self.low:+.1%}, {self.high:+.1%}] over {self.n} paired "
                f"rep(s) at {self.level:.2%}: {self.verdict}")


def step_alpha(commits: int, alpha: float = ALPHA) -> float:
    """Each step's share of the bisection's error: the ends' check and ~log2(n) probes."""
    steps = 1 + max(1, math.ceil(math.log2(max(commits, 2))))
    return alpha / steps


def next_look(n: int, looks: Sequence[int] = LOOKS) -> int | None:
    """How many units the step needs before it looks again (None: past its last look)."""
    return next((k for k in looks if k > n), None)


def decide(log_ratios: Sequence[float], min_change: float, alpha: float,
           looks: Sequence[int] = LOOKS) -> Decision:
    """The step's decision at its current number of units. Units past a look that has not
    been reached yet are not used: the rule looks only at the planned looks (its error
    bound counts them), so n is the largest look the units have reached."""
    x = np.asarray(log_ratios, dtype=float)
    reached = [k for k in looks if k <= len(x)]
    level = 1 - alpha / len(looks)
    if not reached or reached[-1] < 2:
        return Decision(NOT_YET, len(x), math.nan, math.nan, math.nan, level)
    n = reached[-1]
    x = x[:n]
    mean = float(x.mean())
    half = float(sps.t.ppf(1 - (1 - level) / 2, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    lo, hi = mean - half, mean + half
    d = math.log1p(min_change)
    if lo > d / 2 or hi < -d / 2:
        verdict = DIFFERENT
    elif -d < lo and hi < d:
        verdict = SAME
    else:
        verdict = NOT_YET
    return Decision(verdict, n, math.expm1(mean), math.expm1(lo), math.expm1(hi), level)


MAX_LAST_LOOK = 48      # a step past this many paired reps is a sign to ask for a larger change


def plan_looks(min_change: float, unit_sd: float, alpha: float) -> tuple[int, ...]:
    """The looks that give a step 95% power at `min_change` on a host whose paired rep spreads
    by unit_sd: LOOKS when they suffice, else (3, 6, N/2, N) with the smallest N (up to
    MAX_LAST_LOOK) that does. Fixed before the step's first rep (from the host's earlier runs,
    never from this step's), so the error bound counts every look (four). The look at 6 is
    kept: a change far above the minimum decides there (a look at 3, t at 2 degrees of
    freedom, rarely decides anything), where (3, N/2, N) made every such step run N/2 reps."""
    for last in (LOOKS[-1], 16, 24, 32, MAX_LAST_LOOK):
        looks = LOOKS if last == LOOKS[-1] else (*LOOKS[:2], last // 2, last)
        if default_min_change(unit_sd, alpha, looks) <= min_change:
            return looks
    return (*LOOKS[:2], MAX_LAST_LOOK // 2, MAX_LAST_LOOK)


def default_min_change(unit_sd: float, alpha: float, looks: Sequence[int] = LOOKS) -> float:
    """The smallest minimum change a step calls "different" with 95% power by its last look,
    given the host's spread of one unit (log ratio): the interval's lower end must clear d/2
    while the estimate sits at d, so d = 2 (t + z_0.95) sd / sqrt(n). Rounded up to the next
    half percent."""
    n = looks[-1]
    t = float(sps.t.ppf(1 - alpha / len(looks) / 2, n - 1))
    d = 2 * (t + POWER_Z) * unit_sd / math.sqrt(n)
    return math.ceil(math.expm1(d) * 200) / 200
