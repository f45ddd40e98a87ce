"""Many comparisons at once: the false discovery rate of a table's verdicts.

A report judges dozens of functions (focus functions flat and cumulative, top movers, CPU
time per operation, thread groups). At 95% each, an A/A run's table of 15 movers shows about
one "regression" by chance (docs/statistics.md measured it). So the verdicts of one family
of rows are controlled together at q = 1 - confidence (5%), by one of three rules:
Benjamini-Hochberg ("bh": the expected share of false verdicts among the rows called a
change at most q; with no real change anywhere, the chance of any false verdict at most q),
Holm's step-down ("holm": the chance of any false verdict at most q whatever else moved,
the function tables' rule: analysis/compare/families.py says why) or Bonferroni.

The verdict still comes from an interval, the one printed (pyperf's rule: estimator and
interval agree): every row of the family is re-computed at one level, for BH the
false-coverage-rate level of Benjamini and Yekutieli (2005), 1 - q * R / m, with R the rows
BH calls changed out of m (1 - q / m when R = 0); for Holm 1 - q / (m - R) (rule_level). By
the duality of each method's test and interval, a row's interval at that level excludes 0
exactly when the rule calls it changed, so the verdict rules of analysis/stats.py apply to
it unchanged, waterlines included.

BH's p-values are those of each row's own method (analysis/intervals.py, p_value); scipy's
`false_discovery_control` does the procedure. One method per row, chosen before its p-value:
the method is the one that can reach the family's strictest level 1 - q/m (a rank interval
when its widest one gets there, else Welch / paired t), chosen before BH runs, and both the
p-value BH ranks and every interval the row prints come from it. (Choosing at 95% and
switching at the FCR level broke the duality: a clearly separated 5+5 row among 23 null
rows had BH reject nothing, adjusted p 0.19 from Mann-Whitney, while a Welch interval at
99.79% printed "improvement".)
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from scipy.stats import false_discovery_control

from analysis.compare.options import CompareOptions
from analysis.compare.results import ChangeOut, FdrFamily
from analysis.intervals import level_text
from analysis.power import on_grid

RULES = {"bh": "Benjamini-Hochberg", "holm": "Holm", "bonferroni": "Bonferroni"}
STATISTICAL = ("improvement", "regression", "minor improvement", "minor regression", "no change",
               "unstable")


@dataclass
class Member:
    """One verdict of the family: its current change, and how to compute it again at
    another confidence (and where to put the result)."""
    name: str
    change: ChangeOut
    recompute: Callable[[CompareOptions], ChangeOut]
    store: Callable[[ChangeOut], None]
    # its share of the family's error, in a family weighted by share (`control(weighted=True)`):
    # the function's own share of the samples; 1 (all alike) otherwise
    weight: float = 1.0


def control(family: str, members: list[Member], opts: CompareOptions,
            display: list[Member] = (), rule: str = "bh", weighted: bool = False) -> FdrFamily | None:
    """Re-compute every member at the family's level (module docstring, rule_level): rule "bh"
    at the false-coverage-rate level of Benjamini-Hochberg's discoveries, "holm" at
    1 - q/(m - R), "bonferroni" at 1 - q/m; at that level a row's interval excludes 0
    exactly when the rule calls it changed.
    Members without a p-value (too few reps for any interval) are left as they are and
    do not count. `display`: intervals printed beside the family's verdicts that are not
    verdicts themselves, re-computed at the same level. None when fewer than two members:
    one comparison needs no correction."""
    if rule not in RULES:
        raise ValueError(f"multiplicity rule {rule!r}: one of {', '.join(RULES)}")
    tested = [m for m in members if m.change.p_value is not None and m.change.verdict in STATISTICAL]
    if len(tested) < 2:
        return None
    q, m = 1 - opts.confidence, len(tested)
    if weighted:
        return weighted_control(family, tested, opts, display)
    # Each row's method is fixed for the strictest level the family can ask (R = 1): its
    # p-value is taken again with that method before the rule ranks it.
    chosen = replace(opts, method_level=1 - q / m)
    for t in tested:
        t.change = t.recompute(chosen)
    p = np.clip(np.array([t.change.p_value for t in tested], dtype=float), 0.0, 1.0)
    adjusted = adjusted_p(p, rule)
    found = int((adjusted <= q).sum())
    level = rule_level(rule, q, m, found)
    at_level = replace(chosen, confidence=level)
    name = RULES[rule]
    for t, adj in zip(tested, adjusted):
        ch = t.recompute(at_level)
        ch.reason = (f"{ch.reason} ({name} over {m} {family} comparisons, "
                     f"q = {level_text(q)}: adjusted p = {adj:.3g}; interval at {level_text(level)})")
        t.store(ch)
    for d in display:
        if d.change.p_value is not None:
            d.store(d.recompute(at_level))
    return FdrFamily(family=family, comparisons=m, discoveries=found, q=q, level=level,
                     method=METHOD_TEXT[rule], rule=rule)


def weighted_holm(p: np.ndarray, w: np.ndarray, q: float) -> tuple[np.ndarray, float | None]:
    """Holm's sequentially rejective procedure with weights (Holm 1979): while rows are left,
    every row left whose p is at most its share of q, alpha_i(S) = q x w_i / W_S rounded down
    to the grid of power.on_grid (W_S: the weights of the rows left), is called changed.
    alpha_i(S) grows as S shrinks and sums to at most q over S, so the chance of any false
    verdict stays at most q whatever else moved. Returns (called, W of the rows left; None
    when every row was called)."""
    left = np.ones(len(p), bool)
    while left.any():
        new = left & (p <= row_alpha(q, w, float(w[left].sum())))
        if not new.any():
            break
        left &= ~new
    return ~left, (float(w[left].sum()) if left.any() else None)


def row_alpha(q: float, w: np.ndarray, w_left: float | None) -> np.ndarray:
    """Each row's share of q when the rows left weigh w_left (None: none left, each its q):
    the level its interval is printed at is 1 minus it, at which that interval clears 0
    exactly when weighted_holm called the row."""
    if w_left is None:
        return np.full(len(w), q)
    return np.array([q * on_grid(min(x / w_left, 1.0)) for x in w])


def weighted_control(family: str, tested: list[Member], opts: CompareOptions,
                     display: list[Member] = ()) -> FdrFamily:
    """`control` for a family weighted by share (families.py: the top movers): each row
    judged at its own level, 1 - alpha_i (row_alpha), each row's method chosen for the
    strictest level it can be asked (nothing called: its share of q over all the weights)."""
    q = 1 - opts.confidence
    w = np.array([t.weight for t in tested], float)
    first = row_alpha(q, w, float(w.sum()))
    for t, a in zip(tested, first):
        t.change = t.recompute(replace(opts, method_level=1 - a))
    p = np.clip(np.array([t.change.p_value for t in tested], dtype=float), 0.0, 1.0)
    called, w_left = weighted_holm(p, w, q)
    alpha = row_alpha(q, w, w_left)
    for t, a0, a, pi in zip(tested, first, alpha, p):
        ch = t.recompute(replace(opts, method_level=1 - a0, confidence=1 - a))
        ch.level = 1 - a
        ch.reason = (f"{ch.reason} (Holm weighted by each function's own share over {len(tested)} "
                     f"{family} comparisons, q = {level_text(q)}: weight {t.weight:.3g}, p = "
                     f"{pi:.3g} against its {a:.3g}; interval at {level_text(1 - a)})")
        t.store(ch)
    for d in display:
        if d.change.p_value is not None:
            a = float(row_alpha(q, np.array([d.weight]), w_left)[0])
            ch = d.recompute(replace(opts, confidence=1 - a))
            ch.level = 1 - a
            d.store(ch)
    return FdrFamily(family=family, comparisons=len(tested), discoveries=int(called.sum()), q=q,
                     level=float(1 - alpha.min()), method=METHOD_TEXT["weighted"], rule="holm",
                     weights="own share", weight_left=w_left)


METHOD_TEXT = {
    "weighted": "Holm weighted by each function's own share of the samples; a row's interval "
                "at 1 - q x its share / the shares of the rows not called changed (rounded to "
                "20 steps a decade; the chance of any false verdict in the family at most q)",
    "bh": "Benjamini-Hochberg; intervals at the false coverage rate level 1 - q·R/m "
          "(Benjamini-Yekutieli 2005)",
    "holm": "Holm; intervals at 1 - q/(m - R), R rows called changed (the chance of any false "
            "verdict in the family at most q)",
    "bonferroni": "Bonferroni; every interval at 1 - q/m (the chance of any false verdict in the "
                  "family at most q)"}


def adjusted_p(p: np.ndarray, rule: str) -> np.ndarray:
    """Each row's adjusted p-value under the rule (called changed when at most q); also the
    history's function series (analysis/history/function_series.py) use it."""
    m = len(p)
    if rule == "bonferroni":
        return np.minimum(p * m, 1.0)
    if rule == "holm":
        order = np.argsort(p, kind="stable")
        steps = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
        out = np.empty(m)
        out[order] = steps
        return out
    return false_discovery_control(p, method="bh")


def rule_level(rule: str, q: float, m: int, found: int) -> float:
    """The one level at which every row's interval clears 0 exactly when the rule calls it
    changed. Holm: the R rows it calls changed have p_(k) <= q/(m-k+1) <= q/(m-R), the
    first it does not has p_(R+1) > q/(m-R), so 1 - q/(m-R) (1 - q when every row moved)."""
    if rule == "bonferroni":
        return 1 - q / m
    if rule == "holm":
        return 1 - q / max(m - found, 1)
    return 1 - q * max(found, 1) / m
