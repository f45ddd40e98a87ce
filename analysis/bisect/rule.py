"""The rule a bisection step is decided by: is the probe commit *different* from the good end,
the *same*, or is it *not yet* known (more paired reps)?

A step compares two commits in paired reps, each rep a unit: the log ratio probe/base of its
windows, as `stallscope run` measures it. The step is Wald's sequential probability ratio
test of "no change" (a mean log ratio of 0) against "a change of the minimum" (+d or -d,
d = log(1 + m)). At each look (LOOKS: after 4 paired reps, then every 2, up to MAX_REPS) it
takes, for each direction tested, the log likelihood ratio of that change against none
under normal errors of spread s:

    L+ = (d / s^2) (sum x - n d / 2),    L- = (d / s^2) (-sum x - n d / 2)

and, with the bound A below,

    different   L+ >= A or L- >= A: the change is e^A times as likely as none
    same        L <= -A for every direction tested: none is e^A times as likely as the change
    not yet     neither: another look (after MAX_REPS, or when the budget is spent: undecided)

The step decides at the midpoint: its question is whether the probe is like the good end or
like a commit that changed by m. A change between 0 and m is the indifference zone every
such test has (one of m/2 is called different about as often as same); with the spread
known, a change of 0 is called different, and one of m or more the same, each with
probability at most e^-A (Ville's inequality: e^L is a martingale under the hypothesis it
doubts), however the step ends: at any look, on a spent budget, or resumed with more. That
is why a step may take as many reps as it needs (no planned last look); at a change of m it
decides in less than half the reps of an interval that must exclude m/2 (the rule until
2026-12-06: figure 15).

s^2 is the spread of one rep pooled over the bisection's steps so far, the
current one included, each step's own mean taken out (the same case, host and windows), on
nu degrees of freedom. With s^2 for sigma^2, L_s = (sigma^2 / s^2) L_sigma, and for an s^2
independent of the step's path with nu degrees of freedom E[exp(-A s^2 / sigma^2)] =
(1 + 2A / nu)^(-nu / 2); the bound makes that a:

    A = (nu / 2) (a^(-2 / nu) - 1)      (ln(1 / a) as nu grows; 79 at nu = 2, a = 1.25%)

The step's own reps are in s^2, and a path that crossed early often did so on a spread
that came out small: at nu the simulated error of a long step (minimums of 0.35 and 0.5 of a
rep's spread) reached 1.35% at a = 1.25%, so the bound is taken at nu - 1, where it stays
within a (`make bench` figure 15, bench/bisection.py, on recorded reps).

Directions: the ends and the rest test both, each at a = alpha / 2; a probe (against the
good end, after the ends showed which way the range went) and the culprit against its
parent test the bad end's direction at a = alpha, and the other one at alpha too: a probe
shown different the other way ends the search unresolved (search.py). Each step thus errs
with probability at most alpha; a bisection makes at most `max_steps` steps, so each gets
alpha = ALPHA / max_steps (Bonferroni): a wrong culprit (or a wrong "no culprit") at most 5%
of the time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy import stats as sps

ALPHA = 0.05            # the chance that a bisection names a wrong culprit (or a wrong "none")
FIRST_LOOK, EVERY, MAX_REPS = 4, 2, 96
LOOKS = tuple(range(FIRST_LOOK, MAX_REPS + 1, EVERY))   # paired reps after which a step looks
# The default minimum change is the one a step decides with 95% probability by its 12th
# paired rep, its spread from its own reps alone (the first step's case): DEFAULT_BY reps.
DEFAULT_BY = 12
POWER_Z = 1.6449
LEVEL = 0.95            # the interval printed beside a decision (information; the test decides)
VAR_FLOOR = 1e-8        # a spread of 0.01% a rep: reps that agree exactly do not divide by 0

DIFFERENT, SAME, NOT_YET = "different", "same", "not yet"


@dataclass(frozen=True)
class Decision:
    """One look of a step: its change with an interval, the test's statistic and its verdict."""
    verdict: str           # different | same | not yet
    n: int                 # units looked at
    change: float          # exp(mean log ratio) - 1
    low: float             # the interval at `level`, from the pooled spread
    high: float
    level: float
    llr: float = math.nan  # the log likelihood ratio that decided (the largest tested)
    bound: float = math.nan    # A: different at >= A, same at <= -A

    def text(self) -> str:
        test = "" if math.isnan(self.llr) else \
            f" (log likelihood ratio {self.llr:+.1f}, bounds ±{self.bound:.1f})"
        return (f"{self.change:+.1%} [{self.low:+.1%}, {self.high:+.1%}] over {self.n} paired "
                f"rep(s): {self.verdict}{test}")


def max_steps(commits: int, hinted: bool = False) -> int:
    """The most steps a search of `commits` commits can decide: the ends and a binary search
    (log2 n probes); with a commit to probe first, that probe and a search back from it in
    doubling steps (another log2 n) besides (search.py)."""
    lg = max(1, math.ceil(math.log2(max(commits, 2))))
    return 1 + lg if not hinted else 2 + 2 * lg


def step_alpha(commits: int, alpha: float = ALPHA, hinted: bool = False) -> float:
    """Each step's share of the bisection's error."""
    return alpha / max_steps(commits, hinted)


def next_look(n: int, looks: Sequence[int] = LOOKS) -> int | None:
    """How many units the step needs before it looks again (None: past its last look)."""
    return next((k for k in looks if k > n), None)


def bound(a: float, dof: int) -> float:
    """A: the log likelihood ratio a side's decision needs, at error a with a spread
    estimated on dof degrees of freedom (module docstring)."""
    return dof / 2 * (a ** (-2 / dof) - 1)


def pooled(steps: Iterable[Sequence[float]]) -> tuple[float, int]:
    """(sum of squares about each step's own mean, degrees of freedom) over other steps' units."""
    ss, dof = 0.0, 0
    for x in steps:
        if len(x) >= 2:
            y = np.asarray(x, dtype=float)
            ss += float(((y - y.mean()) ** 2).sum())
            dof += len(y) - 1
    return ss, dof


def decide(log_ratios: Sequence[float], min_change: float, alpha: float,
           looks: Sequence[int] = LOOKS, pool: tuple[float, int] = (0.0, 0),
           side: int | None = None) -> Decision:
    """The step's decision at the last look its units have reached (units past it wait for
    the next look). pool: the other steps' (sum of squares, dof); side: None to test both
    directions (each at alpha / 2), else the bad end's sign (+1 or -1), tested at alpha, and
    the other direction at alpha for a 'different the other way'."""
    x = np.asarray(log_ratios, dtype=float)
    n = max((k for k in looks if k <= len(x)), default=0)
    if n < 2:
        return Decision(NOT_YET, len(x), math.nan, math.nan, math.nan, LEVEL)
    x = x[:n]
    mean = float(x.mean())
    dof = n - 1 + pool[1]
    var = max((float(((x - mean) ** 2).sum()) + pool[0]) / dof, VAR_FLOOR)
    d = math.log1p(min_change)
    a = alpha / 2 if side is None else alpha
    big = bound(a, max(dof - 1, 1))     # nu - 1: the step's own reps are in s^2 (docstring)
    llr = {s: d / var * (s * n * mean - n * d / 2) for s in (1, -1)}
    tested = (1, -1) if side is None else (side,)
    if max(llr.values()) >= big:
        verdict, stat = DIFFERENT, max(llr.values())
    elif all(llr[s] <= -big for s in tested):
        verdict, stat = SAME, max(llr[s] for s in tested)
    else:
        verdict, stat = NOT_YET, max(llr[s] for s in tested)
    half = float(sps.t.ppf(1 - (1 - LEVEL) / 2, dof)) * math.sqrt(var / n)
    return Decision(verdict, n, math.expm1(mean), math.expm1(mean - half), math.expm1(mean + half),
                    LEVEL, round(stat, 3), round(big, 3))


def default_min_change(unit_sd: float, alpha: float) -> float:
    """The smallest minimum change a step decides with 95% probability by DEFAULT_BY paired
    reps on a host whose paired rep spreads by unit_sd, its spread from its own reps (the
    first step; later ones pool more): L at the change's 5% quantile must reach A, so with
    x = d sqrt(n) / sd, x^2 / 2 - z x - A = 0. Rounded up to the next half percent."""
    n = DEFAULT_BY
    big = bound(alpha / 2, n - 2)          # decide's bound at n reps: nu - 1 = n - 2
    d = (POWER_Z + math.sqrt(POWER_Z ** 2 + 2 * big)) * unit_sd / math.sqrt(n)
    return math.ceil(math.expm1(d) * 200) / 200


def expected_reps(min_change: float, unit_sd: float, alpha: float) -> float:
    """About how many paired reps a step of a change of m (or of none) takes with the spread
    known (Wald: A over the log likelihood ratio's drift d^2 / (2 sd^2)); the first step,
    which estimates the spread alone, takes more."""
    d = math.log1p(min_change)
    return math.log(2 / alpha) * 2 * unit_sd ** 2 / d ** 2
