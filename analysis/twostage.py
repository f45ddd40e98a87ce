"""Stein's two-stage design: how many paired reps a run needs for an interval of a given
width, and the interval that keeps its confidence when the run stops there.

`stallscope run --precision 2%` adds paired reps until the interval of the throughput change
is that narrow. Re-computing an ordinary t-interval after each rep and stopping when it is
narrow enough does not keep 95%: a run stops early exactly when its reps happen to agree,
which is when their spread understates the truth (tests/test_twostage.py shows that rule
covering the true change 89-90% of the time on this VM's recorded reps).

Stein's design (C. Stein, "A two-sample test for a linear hypothesis whose power is
independent of the variance", Ann. Math. Statist. 16, 1945) fixes that with two stages:
the first n0 reps (the pilot) give the spread s0, and s0 alone sets the total

    N = max(n0, ceil((t * s0 / h)^2)),    t = the t quantile at n0 - 1 degrees of freedom,

for a half-width h; the interval after n reps is mean(x_1..x_n) +- t * s0 / sqrt(n). For
normal observations the mean of any n is independent of s0, and N depends on s0 only (and
on the clock, when a budget ends the run early), so (mean - mu) * sqrt(n) / s0 has
Student's t distribution with n0 - 1 degrees of freedom at whatever n the run stopped:
the coverage is exact, not approximate. The price against a fixed n is the t quantile at
n0 - 1 degrees of freedom (2.36 at n0 = 8 against 2.09 at 20).

Why not a confidence sequence: it is valid even when a run stops because the *change*
looks good, which this rule never does; on the same recorded reps it needed about 1.5x
the reps for the same width (bench/stopping.py, `make bench` figure 6).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

# fewest pilot reps (s0 needs 2 degrees of freedom to mean anything): declared with the options
from analysis.inputs.option_specs import MIN_PILOT  # noqa: F401


def quantile(pilot: int, confidence: float = 0.95) -> float:
    """The interval's multiplier: Student's t at pilot - 1 degrees of freedom."""
    return float(sps.t.ppf(1 - (1 - confidence) / 2, pilot - 1))


def planned_reps(pilot_sd: float, pilot: int, half_width: float, confidence: float = 0.95) -> int:
    """Stein's N: the total reps whose interval is `half_width` wide given the pilot's sd."""
    if half_width <= 0:
        raise ValueError(f"half-width {half_width} must be positive")
    need = (quantile(pilot, confidence) * pilot_sd / half_width) ** 2
    return max(pilot, math.ceil(need - 1e-9))


@dataclass(frozen=True)
class Interval:
    """The two-stage interval of the mean after n observations."""
    n: int
    pilot: int
    mean: float
    low: float
    high: float
    pilot_sd: float
    multiplier: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def interval(x: Sequence[float], pilot: int, confidence: float = 0.95) -> Interval:
    """mean(x) +- t(pilot - 1) * sd(x[:pilot]) / sqrt(len(x)); x in the order measured."""
    a = np.asarray(x, float)
    if pilot < MIN_PILOT or len(a) < pilot:
        raise ValueError(f"a two-stage interval needs a pilot of at least {MIN_PILOT} values and "
                         f"at least the pilot's values (pilot {pilot}, {len(a)} values)")
    sd0 = float(a[:pilot].std(ddof=1))
    q = quantile(pilot, confidence)
    mean = float(a.mean())
    r = q * sd0 / math.sqrt(len(a))
    return Interval(len(a), pilot, mean, mean - r, mean + r, sd0, q)


def p_value(x: Sequence[float], pilot: int) -> float:
    """Two-sided p-value of "mean 0" that belongs to the interval (its interval at level
    1 - p just reaches 0)."""
    a = np.asarray(x, float)
    sd0 = float(a[:pilot].std(ddof=1))
    if sd0 == 0:
        return 1.0 if a.mean() == 0 else 0.0
    t = abs(float(a.mean())) * math.sqrt(len(a)) / sd0
    return float(2 * sps.t.sf(t, pilot - 1))
