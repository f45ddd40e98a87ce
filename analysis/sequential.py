"""A run that decides looks at itself while it runs, and stops when it has answered: the
looks, the confidence of each, and the level a run's report is read at.

A run that decides (collectors/runner/targets.py) plans N paired reps before it starts. It
looks at planned counts of them (`looks`: 4, 6, 10, 13, then about x1.45 each, N last) and
at look j analyses itself with the real comparison at confidence 1 - alpha_j. The alpha_j
come from an alpha-spending function over the planned looks,

    alpha_j = A(n_j / N) - A(n_{j-1} / N),    A(t) = ALPHA * t^RHO,

so they add up to ALPHA (0.05). Whatever rule stops the run, the interval it prints is one
of those made at the looks (or, when the budget stops it between looks, one made with the
alpha the looks left: `alpha_left`), and by the union bound the chance that any interval
made at any look misses its truth is at most the sum of their alphas: at most 5%, however
the run chose where to stop (a row's family splits its look's alpha further, by its own
rule, which the same bound covers). That is what lets the rule look at the values: stop
when every row is decided, has reached its target, or is out of the run's reach
(`out_of_reach`; analysis/compare/row_targets.py).

Why RHO = 3: the early looks get little (at N = 13: 0.0014 at 4 reps, 0.0035 at 6, 0.017
at 10) and the last most (0.0281, a 97.19% interval at 13). With 3 degrees of freedom at the
first look, Student's t at 1 - 0.0014/2 is 11.5 (2.18 at 95% and 12): an early look stops only
a change many standard errors from 0, which a large change is (the demo's +43% at 4 reps,
sd 1.7% a rep), and costs the rows that run to the end about a tenth of width (t 2.51 at
97.19% against 2.18 at 95%). Why 10, not 9: docs/statistics.md ("Stop when answered"). Looks after 13 come about x1.45 apart, and a look within x1.3 of N is dropped, so
the last one keeps 0.028-0.041 whatever N (a look every 4 reps to 40 would leave the last
0.010). `make bench` figure 16 (bench/sequential.py) proves the coverage by simulation on
recorded reps, and the naive rule (95% at every look) failing; docs/statistics.md, "Stop
when answered".
"""
from __future__ import annotations

import math
from typing import Any

from scipy import special

ALPHA = 0.05            # the run's error, spent over its looks
RHO = 3                 # the spending function's power: ALPHA * (n / N)^RHO
FIRST_LOOKS = (4, 6, 10, 13)
# The fewest planned reps whose every printed interval kept 94% or more under the looks,
# resampled from the recorded runs (`bench/sequential.py --short`, 2,000 runs each,
# 2026-12-06): the lowest of 136 rows 96.0% at 9, 95.9% at 10 and 11, 94.8% at 12, 97.5% at
# 13. Below it a skewed function row (two reps in ten far from the rest: a layout the servers
# start with now and then) falls short: seven draws miss both rare reps one time in five.
# From 9 reps a focus family of up to 9 rows (the recorded runs': 6-8) is judged by the
# signed-rank interval, whose pseudo-median the rare reps barely move; a larger family is
# judged by the paired t there too, and this floor is not proven for it. SHORT_COVERAGE: the
# lowest below the floor, by planned reps.
FLOOR_REPS = 9
# (5: its looks at 4 and 5 leave its last at 97.5%: 94.0%, where the last look alone at 95%
# kept 87.7%)
SHORT_COVERAGE = {4: 0.903, 5: 0.940, 6: 0.885, 7: 0.883, 8: 0.888}
GROWTH = 1.45           # later looks: about this factor apart
LAST_GAP = 1.3          # an interior look closer than this factor to N is dropped


def looks(planned: int) -> list[int]:
    """The paired-rep counts at which a run of `planned` reps looks; the last is `planned`."""
    if planned < 1:
        raise ValueError(f"looks: {planned} planned reps")
    counts = [n for n in FIRST_LOOKS if n < planned]
    n = FIRST_LOOKS[-1]
    while (n := round(n * GROWTH)) < planned:
        counts.append(n)
    # the first look stays (a plan of 5 looked only at 5, and a change answered at 4 ran on)
    return [n for i, n in enumerate(counts) if i == 0 or n * LAST_GAP <= planned] + [planned]


def short_coverage(planned: int | None) -> float | None:
    """The lowest simulated coverage of a printed interval in a run of `planned` reps below
    FLOOR_REPS (a budget that holds no more); None at FLOOR_REPS or more, or no plan."""
    if planned is None or planned >= FLOOR_REPS:
        return None
    return SHORT_COVERAGE.get(planned, min(SHORT_COVERAGE.values()))


def _down(x: float) -> float:
    """x rounded down to two significant digits (a level that prints plainly; never more
    alpha than the function gives)."""
    if x <= 0:
        return 0.0
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return round(math.floor(x / scale + 1e-9) * scale, 12)


def spending(counts: list[int], alpha: float = ALPHA, rho: float = RHO) -> list[float]:
    """Each look's alpha (module docstring); every look but the last rounded down to two
    significant digits, the last takes what is left, so they add up to `alpha`."""
    if not counts:
        return []
    total = counts[-1]
    out, spent = [], 0.0
    for n in counts[:-1]:
        a = _down(alpha * (n / total) ** rho - spent)
        out.append(a)
        spent += a
    return out + [round(alpha - spent, 9)]


def alpha_left(plan: Any, alpha: float = ALPHA) -> float:
    """The alpha the looks made so far have not spent (manifest.json `precision`: `alphas`,
    `made`): what a run stopped between looks, by its budget, is read at."""
    return round(alpha - sum((plan.alphas or [])[: plan.made or 0]), 9)


def run_level(plan: Any) -> float | None:
    """The confidence a run's report is read at (CompareOptions.confidence): the level of
    the look or stop that ended it (`level`), or, in a run still looking, the alpha its
    looks have left; None for a run that made no looks (every other run: the comparison's
    own confidence)."""
    if plan is None or not getattr(plan, "looks", None):
        return None
    if plan.level is not None:
        return plan.level
    return 1 - alpha_left(plan)


def _k(m: int, level: float, power: float) -> tuple[float, float]:
    """(t of the level, t of the power) on m - 1 degrees of freedom."""
    return float(special.stdtrit(m - 1, 1 - (1 - level) / 2)), float(special.stdtrit(m - 1, power))


def projected(detectable: float, n: int, n_end: int, level: float, level_end: float,
              power: float = 0.8) -> tuple[float, float]:
    """(the detectable size, the interval's half-width, both fractions of the ratio) that a
    row which could see `detectable` at `n` reps and `level` would have at `n_end` reps and
    `level_end`, its spread staying what it is: on the log scale the size is K x sd/sqrt(n),
    K = t(1 - (1 - level)/2) + t(power) on n - 1 degrees of freedom, the half-width the
    first term."""
    a, p = _k(n, level, power)
    se = math.log1p(detectable) / (a + p)            # sd / sqrt(n) on the log scale
    if n_end > n:
        se *= math.sqrt(n / n_end)
        a, p = _k(n_end, level_end, power)
    return math.expm1((a + p) * se), math.expm1(a * se)


def out_of_reach(detectable: float, change: float | None, target: float, n: int, n_end: int,
                 level: float, level_end: float) -> bool:
    """A row a look need not wait for: at the run's last reachable reps its size would still
    miss its target, and its change as it stands would still sit inside its interval (so it
    would be neither at its target nor decided). Stopping for it spends no alpha. Judged only
    over a horizon no longer than the reps done (n_end <= 2n): from 4 reps a row's size at the
    strict first level is rough (an exact rank interval at 99.86% on 4 pairs says little), and
    9 more reps could change it."""
    if n < 2 or n_end > 2 * n:
        return False
    size, half = projected(detectable, n, max(n_end, n), level, level_end)
    return size > target and (change is None or abs(math.log1p(change)) <= math.log1p(half))
