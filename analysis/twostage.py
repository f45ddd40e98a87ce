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

**A function row (`--precision P --on FUNCTION`) is no normal row.** Its per-rep log ratios
are skewed: the odd rep in another mode (the recorded small A/A's dictFindByHash: two reps of
ten at +10%, the rest at -2%). A first stage of 8 misses a mode of one rep in five in
0.8^8 = 17% of runs, and then s0 understates the spread and the mean sits off the truth
together: Stein's N is small exactly when its interval should be wide (at +-5% it plans
no rep past the first stage), and even where later reps bring the mode back, the width
stays s0's. Resampled from that row (bench/on_skew.py, `make bench` figure 6b), its 95%
interval covered 83%. So a function row's plan takes at least ON_FLOOR reps (a mode of one
rep in five is missed by all 16 in 2.8% of runs), and its interval is the wider of Stein's
and the ordinary t over all its pairs (`whole`): each is a valid 95% interval under
normality (Stein's exactly, whatever N), so the wider one keeps at least Stein's coverage,
and the t over all pairs takes the spread the later reps show. On the same row: 95.0% at
+-2%, 95.3% at +-5% (a fixed 13-rep t interval: 93.6%). The throughput row keeps Stein's
interval alone: its log ratios are near normal (tests/test_twostage.py), and there the wider
interval would end 48% of runs wider than asked, not 22%.

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


# the fewest units a function row's plan takes (--on; module docstring)
ON_FLOOR = 16


def planned_reps(pilot_sd: float, pilot: int, half_width: float, confidence: float = 0.95,
                 floor: int = 0) -> int:
    """Stein's N: the total reps whose interval is `half_width` wide given the pilot's sd,
    and never fewer than `floor` (ON_FLOOR for a function row)."""
    if half_width <= 0:
        raise ValueError(f"half-width {half_width} must be positive")
    need = (quantile(pilot, confidence) * pilot_sd / half_width) ** 2
    return max(pilot, floor, math.ceil(need - 1e-9))


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


def interval(x: Sequence[float], pilot: int, confidence: float = 0.95, whole: bool = False
             ) -> Interval:
    """mean(x) +- t(pilot - 1) * sd(x[:pilot]) / sqrt(len(x)); x in the order measured.
    `whole` (a function row): the wider of that and the t interval over all of x,
    mean(x) +- t(n - 1) * sd(x) / sqrt(n) (module docstring)."""
    a = np.asarray(x, float)
    if pilot < MIN_PILOT or len(a) < pilot:
        raise ValueError(f"a two-stage interval needs a pilot of at least {MIN_PILOT} values and "
                         f"at least the pilot's values (pilot {pilot}, {len(a)} values)")
    sd0 = float(a[:pilot].std(ddof=1))
    q = quantile(pilot, confidence)
    mean = float(a.mean())
    r = q * sd0 / math.sqrt(len(a))
    if whole:
        r = max(r, quantile(len(a), confidence) * float(a.std(ddof=1)) / math.sqrt(len(a)))
    return Interval(len(a), pilot, mean, mean - r, mean + r, sd0, q)


def _t_p(mean: float, sd: float, n: int, df: int) -> float:
    if sd == 0:
        return 1.0 if mean == 0 else 0.0
    return float(2 * sps.t.sf(abs(mean) * math.sqrt(n) / sd, df))


def p_value(x: Sequence[float], pilot: int, whole: bool = False) -> float:
    """Two-sided p-value of "mean 0" that belongs to the interval (its interval at level
    1 - p just reaches 0); `whole`: the wider interval's, the larger of the two p-values."""
    a = np.asarray(x, float)
    p = _t_p(float(a.mean()), float(a[:pilot].std(ddof=1)), len(a), pilot - 1)
    return max(p, _t_p(float(a.mean()), float(a.std(ddof=1)), len(a), len(a) - 1)) if whole else p
