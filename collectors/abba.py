"""ABBA schedules of on/off states: each state meets each position equally often, so a drift
over the rep hits both alike. Used by the profile reps' windows (profilers/perf/windows.py:
perf sampling every other window) and by the paired reps' windows (runner/paired.py,
runner/paired_servers.py: perf on in a planned share of the blocks of windows)."""
from __future__ import annotations

from fractions import Fraction

BLOCK = 4            # windows per ABBA block of a paired rep (A B B A)
# perf's shares of a paired rep's blocks a plan may ask (collectors/runner/rep_plan.py): a
# share k/m repeats a period of 2m blocks, each half of it k "on" to m - k "off"; WHOLE
# windows hold whole halves at every share. No more than 3/4: the overhead is measured on
# the "on" runs between two "off" blocks (analysis/compare/profiler_cost.py), and a rep's
# cold first block, always "off", is left out, so at 5/6 a 96-window rep kept one such run.
SHARES = (Fraction(1, 2), Fraction(2, 3), Fraction(3, 4))
WHOLE = 48


def schedule(units: int) -> list[bool]:
    """off on on off off on on off ...: each state takes each position equally often."""
    out: list[bool] = []
    for i in range(units):
        block, pos = divmod(i, 2)
        out.append(bool((block + pos) % 2))
    return out


def as_share(x: float | Fraction) -> Fraction:
    """A share as the fraction it stands for (a manifest keeps 0.75, or 0.666667 for 2/3)."""
    f = Fraction(x).limit_denominator(12)
    if f not in SHARES:
        raise ValueError(f"perf share {x}: one of {', '.join(map(str, SHARES))}")
    return f


def share_period(share: Fraction) -> list[bool]:
    """One period of blocks at perf's `share`: off^(m-k) on^k | on^k off^(m-k). Symmetric
    about its middle, so a drift that is linear over the period weighs "on" and "off" alike
    (share 1/2: off on | on off, the schedule above)."""
    k, m = share.numerator, share.denominator
    half = [False] * (m - k) + [True] * k
    return half + half[::-1]


def block_schedule(windows: int, share: float | Fraction = Fraction(1, 2)) -> list[bool]:
    """perf on (True) or off for each window of a paired rep: whole ABBA blocks, on in `share`
    of them (share_period, repeated). A rep of fewer than two blocks switches per pair of
    windows (A B | B A: each variant one window of each), at share 1/2; fewer than four
    windows are all sampled (no cost measured then)."""
    if windows < 4:
        return [True] * windows
    unit = BLOCK if windows >= 2 * BLOCK else 2
    units = (windows + unit - 1) // unit
    period = share_period(as_share(share)) if unit == BLOCK else [False, True, True, False]
    per_unit = [period[i % len(period)] for i in range(units)]
    return [per_unit[i // unit] for i in range(windows)]
