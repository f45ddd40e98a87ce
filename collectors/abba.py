"""ABBA schedules of on/off states: each state meets each position equally often, so a drift
over the rep hits both alike. Used by the profile reps' windows (profilers/perf/windows.py:
perf sampling every other window) and by the paired reps' windows (runner/paired.py,
runner/paired_servers.py: perf on for every other block of windows)."""
from __future__ import annotations

BLOCK = 4            # windows per ABBA block of a paired rep (A B B A)


def schedule(units: int) -> list[bool]:
    """off on on off off on on off ...: each state takes each position equally often."""
    out: list[bool] = []
    for i in range(units):
        block, pos = divmod(i, 2)
        out.append(bool((block + pos) % 2))
    return out


def block_schedule(windows: int) -> list[bool]:
    """perf on (True) or off for each window of a paired rep: whole ABBA blocks, scheduled
    as above. A rep of fewer than two blocks switches per pair of windows (A B | B A: each
    variant one window of each); fewer than four windows are all sampled (no cost measured
    then)."""
    if windows < 4:
        return [True] * windows
    unit = BLOCK if windows >= 2 * BLOCK else 2
    per_unit = schedule((windows + unit - 1) // unit)
    return [per_unit[i // unit] for i in range(windows)]
