"""Which runs of a long series a trend plot shows (docs/history.md, "At scale").

A year of nightly runs is a thousand points per series and forty series a page: drawn
whole, the page is slow to write and to open, and the eye sees no more than a few hundred
points across a plot's width anyway. The rule:

- a series of at most `budget` runs is drawn whole;
- otherwise the last `last` runs and the runs at each change point (the first run after
  the shift and the last one before it) are drawn exactly, and the other runs are cut
  into buckets of consecutive runs, two plotted points per bucket: the bucket's lowest and
  its highest value (min/max decimation: a spike or a dip stays visible, where an average
  would hide it), as many buckets as keep the plot within `budget` points;
- each plotted point is a real run (it links to its report), and stands for the runs of
  its bucket, so the band of the plot can cover every run's spread.

The full data is not lost: the trend page links every run's values as JSON beside it, and
`stallscope history series` prints them (CSV or JSON).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

BUDGET = 240           # plotted points per series at most (with few change points)
LAST = 30              # the newest runs, always drawn exactly


@dataclass(frozen=True)
class Decimated:
    keep: list[int]                  # positions of the plotted runs, ascending
    covers: dict[int, list[int]]     # plotted position -> the positions it stands for
    exact: frozenset[int]            # positions drawn as themselves (last runs, change points)
    n: int                           # runs in the series

    @property
    def whole(self) -> bool:
        """Every run is plotted."""
        return len(self.keep) == self.n

    @property
    def buckets(self) -> int:
        """Buckets of runs shown by their lowest and highest run."""
        return len({tuple(v) for k, v in self.covers.items() if k not in self.exact})


def downsample(values: Sequence[float], keep: Iterable[int] = (), budget: int = BUDGET,
               last: int = LAST) -> Decimated:
    """The positions of `values` to plot (module docstring): every position when there
    are at most `budget`; else the last `last` and those in `keep` exactly, and the lowest
    and highest of each bucket of the others, at most `budget` in all unless the exact
    ones alone are more."""
    n = len(values)
    if n <= budget:
        return Decimated(list(range(n)), {i: [i] for i in range(n)}, frozenset(range(n)), n)
    exact = set(range(max(0, n - last), n)) | {i for i in keep if 0 <= i < n}
    rest = [i for i in range(n) if i not in exact]
    buckets = min((budget - len(exact)) // 2, len(rest)) if budget > len(exact) else 0
    covers = {i: [i] for i in exact}
    for b in range(buckets):
        chunk = rest[b * len(rest) // buckets:(b + 1) * len(rest) // buckets]
        lo = min(chunk, key=lambda i: values[i])
        hi = max(chunk, key=lambda i: values[i])
        for i in {lo, hi}:
            covers[i] = chunk
    return Decimated(sorted(covers), covers, frozenset(exact), n)
