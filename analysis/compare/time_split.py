"""Where the time went: the change in CPU time per operation of one thread view, split by
function (its own, flat cost), the largest moves first, with "everything else" after them,
so that the rows add up to the whole view's change.

Each row is a difference of means over reps: mean(cand) − mean(base), which for paired
reps is the mean of the reps' differences. Means add (the listed rows and the rest sum to
the total exactly), where the estimators of the function tables do not (a Hodges-Lehmann
shift of a sum is not the sum of the shifts), so the table's rows are differences of means
and say so. "Everything else" in a rep is the rep's total minus its listed rows. Each row's
interval is the t interval of its mean over reps (analysis/intervals.py: paired t for
paired reps, as the paired intervals are, else Welch), at the comparison's confidence, each
on its own: the rows are picked by size and carry no verdict (the function tables' verdicts
are judged as families, analysis/compare/families.py). Intervals do not add up; estimates do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analysis.intervals import METHODS, method_text
from analysis.power import MIN_N

ROWS = 6                       # functions listed before "everything else"
EVERYTHING_ELSE = "everything else"
TOTAL = "all samples"


@dataclass
class SplitRow:
    """One function's (or the rest's, or the whole view's) CPU time per operation."""
    name: str
    base: float                  # mean over the side's reps, ns/op
    cand: float
    delta: float                 # cand − base: a difference of means (TimeSplit.estimator), ns/op
    ci_low: float | None = None  # its interval over reps (None: fewer than MIN_N reps, or no spread)
    ci_high: float | None = None
    functions: int = 1           # the functions the row holds ("everything else": how many)


@dataclass
class TimeSplit:
    """results.json `profile.time_split` (docs/results-json.md): `rows` (largest |delta|
    first) + `rest` = `total`, each a difference of means in ns/op."""
    available: bool
    reason: str = ""
    thread: str = "all"          # the thread view (the profile section's)
    unit: str = "ns/op"
    estimator: str = ""          # "mean pair difference" (paired reps) | "difference of means"
    method: str = ""             # the interval, in words
    confidence: float | None = None
    rows: list[SplitRow] = field(default_factory=list)
    rest: SplitRow | None = None
    total: SplitRow | None = None


# variant -> per rep, in rep order: function -> its own CPU time per operation (ns/op)
PerRep = dict[str, list[dict[str, float]]]


def _row(name: str, b: list[float], c: list[float], paired: bool, confidence: float,
         functions: int = 1) -> SplitRow:
    bb, cc = np.asarray(b, float), np.asarray(c, float)
    delta = float(cc.mean() - bb.mean())         # = the mean pair difference when paired
    lo = hi = None
    if min(len(bb), len(cc)) >= MIN_N:
        est = METHODS["paired-t" if paired else "welch"][1](bb, cc, confidence, 0)
        if est.high > est.low:                   # no spread: no interval (docs/statistics.md)
            lo, hi = est.low, est.high
    return SplitRow(name, float(bb.mean()), float(cc.mean()), delta, lo, hi, functions)


def time_split(per_rep: PerRep, totals: dict[str, list[float]], base: str, cand: str,
               paired: bool, confidence: float, thread: str) -> TimeSplit:
    """The split of the view's change in CPU time per operation. `per_rep`: each rep's
    functions' own CPU time per operation; `totals`: each rep's whole view per operation
    (profile.per_op_total's values), both in rep order."""
    for v in (base, cand):
        if len(per_rep[v]) != len(totals[v]):
            raise ValueError(f"{v}: {len(per_rep[v])} profile reps but {len(totals[v])} totals")
    if paired and len(per_rep[base]) != len(per_rep[cand]):
        raise ValueError("paired profile reps of unequal count")
    names = sorted({fn for v in (base, cand) for rep in per_rep[v] for fn in rep})

    def values(v: str, fn: str) -> list[float]:
        return [rep.get(fn, 0.0) for rep in per_rep[v]]

    moves = {fn: float(np.mean(values(cand, fn)) - np.mean(values(base, fn))) for fn in names}
    listed = sorted(names, key=lambda fn: (-abs(moves[fn]), fn))[:ROWS]
    rows = [_row(fn, values(base, fn), values(cand, fn), paired, confidence) for fn in listed]

    def rest(v: str) -> list[float]:
        return [t - sum(rep.get(fn, 0.0) for fn in listed) for t, rep in zip(totals[v], per_rep[v])]

    n = len(per_rep[base])
    key = "paired-t" if paired else "welch"
    method = (method_text(key, n, len(per_rep[cand]), confidence, confidence, False)
              + " per row, each on its own (the rows are picked by size)")
    return TimeSplit(
        True, thread=thread, estimator=METHODS[key][0], method=method, confidence=confidence,
        rows=rows, rest=_row(EVERYTHING_ELSE, rest(base), rest(cand), paired, confidence,
                             functions=len(names) - len(listed)),
        total=_row(TOTAL, totals[base], totals[cand], paired, confidence, functions=len(names)))


def absent(reason: str) -> TimeSplit:
    return TimeSplit(False, reason=reason)
