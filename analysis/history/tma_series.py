"""Which of a job's TMA node series shifted, judged together (docs/history.md, "TMA series").

A PMU host's run stores one series per TMA node it measured (`tma:NODE`: Frontend_Bound,
Backend_Bound, Memory_Bound, DRAM_Bound, ... 15-30 of them at level 3 or 4). E-Divisive at
p < 0.05 on each one alone finds a shift in a shift-free 40-run series about one time in
twenty, so a job's history would show a false TMA finding in most jobs. The nodes are one
family, as the report's function rows are:

- the test per node: two-sided, the largest two-sample |t| over every split of the runs
  (function_series.scan, its permutation p-value, on the values and on their negation;
  twice the smaller p, Bonferroni over the two directions). No noise model is assumed;
- the family: Holm's step-down rule at Q over the job's TMA series
  (analysis/compare/multiplicity.py), so the chance of any false TMA finding in the job
  stays at Q whatever else shifted.

A node the family test calls shifted keeps E-Divisive's change points (changepoints.py
places and sizes them as for any series); a node it does not has none.
"""
from __future__ import annotations

import numpy as np

from analysis.compare.multiplicity import adjusted_p
from analysis.history import function_series

PREFIX = "tma:"
Q = 0.05           # the chance of any false TMA finding in a job
RULE = "holm"


def p_value(values: list[float]) -> float:
    """Two-sided permutation p-value of one shift of the mean somewhere in `values`."""
    up = function_series.scan(list(values))[1]
    down = function_series.scan([-v for v in values])[1]
    return min(1.0, 2 * min(up, down))


def shifted(series: dict[str, list]) -> set[str]:
    """The names of the job's TMA series (series: name -> [(run, point)], as
    HistoryStore.series gives them) that the family test calls shifted."""
    tested = {}
    for name, pts in series.items():
        if not name.startswith(PREFIX):
            continue
        values = [float(p["value"]) for _, p in pts if p.get("value") is not None]
        if len(values) >= function_series.MIN_RUNS:
            tested[name] = p_value(values)
    if not tested:
        return set()
    names = sorted(tested)
    adjusted = adjusted_p(np.array([tested[n] for n in names]), RULE)
    return {n for n, a in zip(names, adjusted) if a <= Q}
