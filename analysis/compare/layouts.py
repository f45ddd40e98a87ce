"""The change across code layouts (`stallscope run --layouts N`): layouts as a random effect.

Link order moves every function's address, so a build's throughput carries a layout
effect that stays the same for every rep of that build: reps of one layout, however
many, cannot average it out. A change measured on one layout answers "is this binary
faster than that one"; a user who asks whether the *patch* is faster wants the change
averaged over layouts, and an interval that holds the layout-to-layout spread.

The unit is therefore the layout: each layout's change is the mean of its reps' log
ratios (cand/base, each rep its window pairs' geometric means, pair_clusters.py), and the
change over layouts is the mean of those, with a Student t-interval over layouts (N - 1
degrees of freedom). For a balanced design this is the two-level interval: the variance of
a layout's mean is the layout variance plus the rep variance over its reps, so both are
inside it. With 2 layouts the interval has 1 degree of freedom (t = 12.7 at 95%): wide,
and honestly so; 3-5 layouts are what a claim about a patch needs (docs/statistics.md,
"Code layout").

The line: "holds across N layouts" when every layout's own interval (t over its reps)
excludes 0 on the same side, or, with too few reps a layout to decide each alone, when every
layout's change is on one side and the interval over layouts excludes 0; "depends on layout:
+a% … −b%" (the largest and smallest layout's change) when the layouts' changes differ in
sign and some layout's interval excludes 0; "cannot tell" otherwise (a layout with one rep
has no interval; or neither each layout's interval nor the one over layouts excludes 0).
"""
from __future__ import annotations

import math

from analysis.compare import pair_clusters
from analysis.compare.values import LayoutChange, LayoutSpread
from analysis.intervals import paired_t_interval
from analysis.inputs.rundir import RunDir

MIN_LAYOUT_REPS = 2          # fewest reps of a layout that give it an interval


def rep_layouts(run: RunDir) -> dict[int, int]:
    """Paired rep number -> its layout seed, for the reps that ran one."""
    return {r.rep: int(r.layout) for r in run.manifest.reps(kind="paired") if r.layout is not None}


def group(units: list[pair_clusters.Unit], layouts: dict[int, int]) -> dict[int, list[pair_clusters.Unit]]:
    """Rep units by layout seed (units of reps without a layout left out), seeds in order."""
    out: dict[int, list[pair_clusters.Unit]] = {}
    for u in units:
        if u.rep in layouts:
            out.setdefault(layouts[u.rep], []).append(u)
    return dict(sorted(out.items()))


def layout_units(by_layout: dict[int, list[pair_clusters.Unit]]) -> list[pair_clusters.Unit]:
    """One unit per layout: the geometric means of its reps' base and cand values (the
    layout's mean log ratio is their log ratio); `rep` holds the seed."""
    def gmean(xs: list[float]) -> float:
        return math.exp(sum(math.log(x) for x in xs) / len(xs))
    return [pair_clusters.Unit(seed, gmean([u.base for u in us]), gmean([u.cand for u in us]))
            for seed, us in by_layout.items()]


def _t(logs: list[float], confidence: float) -> tuple[float | None, float | None]:
    if len(logs) < 2:
        return None, None
    lo, hi, _ = paired_t_interval(logs, confidence)
    return math.expm1(lo), math.expm1(hi)


def _pct(x: float) -> str:
    return f"{x:+.1%}".replace("-", "\u2212")


def _verdict(per: list[LayoutChange], lo: float | None, hi: float | None, changes: str,
             over: str) -> tuple[bool | None, str]:
    """holds (True), depends on layout (False) or cannot tell (None), and the line."""
    n = len(per)
    up = [p for p in per if p.ci_low is not None and p.ci_low > 0]
    down = [p for p in per if p.ci_high is not None and p.ci_high < 0]
    if len(up) == n or len(down) == n:
        return True, f"holds across {n} layouts ({changes}; {over})"
    same_sign = all(p.change > 0 for p in per) or all(p.change < 0 for p in per)
    if same_sign and lo is not None and hi is not None and (lo > 0 or hi < 0):
        # each layout's own reps too few to decide alone, but every layout on one side and
        # the interval over layouts (the layout spread inside it) excludes 0
        return True, (f"holds across {n} layouts on the interval over layouts ({changes}, all "
                      f"on one side; {over})")
    if not same_sign and (up or down):
        top, bottom = max(p.change for p in per), min(p.change for p in per)
        return False, f"depends on layout: {_pct(top)} \u2026 {_pct(bottom)} (per layout {changes}; {over})"
    thin = [p.seed for p in per if p.ci_low is None]
    why = (f"layout(s) {', '.join(map(str, thin))} have fewer than {MIN_LAYOUT_REPS} reps" if thin else
           "no layout's interval and not the interval over layouts excludes 0")
    return None, f"cannot tell whether it holds across {n} layouts: {why} (per layout {changes}; {over})"


def spread(log_ratios: dict[int, list[float]], confidence: float = 0.95) -> LayoutSpread | None:
    """log_ratios: layout seed -> its reps' log ratios (cand/base). None for fewer than two
    layouts (nothing to spread over)."""
    per = []
    for seed, logs in sorted(log_ratios.items()):
        if not logs:
            continue
        lo, hi = _t(logs, confidence) if len(logs) >= MIN_LAYOUT_REPS else (None, None)
        per.append(LayoutChange(seed, len(logs), math.expm1(sum(logs) / len(logs)), lo, hi))
    if len(per) < 2:
        return None
    means = [math.log1p(p.change) for p in per]
    lo, hi = _t(means, confidence)
    n = len(per)
    changes = ", ".join(_pct(p.change) for p in per)
    over = f"over layouts {_pct(math.expm1(sum(means) / n))}"
    if lo is not None and hi is not None:
        over += f" [{_pct(lo)}, {_pct(hi)}]"
    holds, line = _verdict(per, lo, hi, changes, over)
    return LayoutSpread(n, per, math.expm1(sum(means) / n), lo, hi, holds, line)


def of_run(run: RunDir, units: list[pair_clusters.Unit], confidence: float) -> LayoutSpread | None:
    """The run's layout spread from its paired rep units (None without --layouts)."""
    by = group(units, rep_layouts(run))
    return spread({s: [math.log(u.cand / u.base) for u in us] for s, us in by.items()}, confidence)
