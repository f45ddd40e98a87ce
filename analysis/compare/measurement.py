"""How the run measured throughput, in the report's words: paired or not and why
(manifest.json `pairing`), whether it is an A/A run, and what ended a --precision run."""
from __future__ import annotations

import math

from analysis.compare.results import Measurement, MetricRow
from analysis.compare.row_targets import RowTarget, floor_reps
from analysis.inputs.manifest import Manifest, PrecisionPlan
from analysis.intervals import level_text
from analysis.sequential import ALPHA, FLOOR_REPS, short_coverage
from analysis.inputs.option_specs import TARGET_FOCUS, TARGET_MOVERS, TARGET_SHARE, TARGET_THROUGHPUT


def _duration(s: float | None) -> str:
    if s is None:
        return "no limit"
    m = int(round(s / 60))
    return f"{m // 60} h {m % 60:02d} min" if m >= 60 else f"{m} min"


def _half_width(row: MetricRow | None) -> float | None:
    """The reached half-width as a fraction of the ratio (the log-scale half-width)."""
    c = row.change if row is not None else None
    if c is None or c.rel_ci_low is None or c.rel_ci_high is None or c.rel_ci_low <= -1:
        return None
    return math.expm1((math.log1p(c.rel_ci_high) - math.log1p(c.rel_ci_low)) / 2)


def _pairing_sentence(m: Manifest) -> tuple[str, str]:
    if m.pairing is not None:
        return m.pairing.mode, m.pairing.reason
    if m.paired is not None:        # runs from before the choice was recorded
        return m.paired.mode, ("paired windows, two servers loaded at once" if m.paired.mode == "servers"
                               else "paired windows in one server process (CONFIG SET)")
    return "off", "separate reps, a server start each"


def measurement(m: Manifest, main: MetricRow | None, missed: list[RowTarget] = ()) -> Measurement:
    """`main`: the row a --precision run added reps for (the paired row, else the first
    throughput or load-time row); `missed`: a run that decides' rows short of their target."""
    mode, how = _pairing_sentence(m)
    out = Measurement(mode=mode, pairing=how)
    if m.pairing is not None and m.pairing.aa:
        out.aa = ("both sides run the same binary with the same config, so every difference in "
                  "this report is this host's noise: what a comparison on it can and cannot see")
    p = m.precision
    if p is None:
        return out
    unit = "paired rep" if m.paired is not None else "A/B block"
    units = main.base.n if main is not None else 0
    out.target, out.budget_s, out.pilot = m.options.precision, m.options.budget_s, m.pilot
    out.pilot_sd = p.pilot_sd
    out.planned, out.units, out.ended_by = p.planned, units, p.ended_by
    out.half_width = _half_width(main)
    reached = (f"the interval is ±{out.half_width:.1%} of the ratio" if out.half_width is not None
               else "no interval yet")
    if m.options.targets:
        out.looks, out.look, out.alpha, out.level = list(p.looks), p.look, p.alpha, p.level
        out.missed = [t.text() for t in missed]
        out.precision = (_targets_sentence(m, units, unit) + _looks_sentence(p, units, unit, out.missed)
                         + _short_sentence(floor_reps(p, units), unit))
        return out
    asked = f"±{out.target:.1%} of the ratio asked within {_duration(out.budget_s)}"
    spread = (f" from the first {out.pilot} {unit}s' spread (sd {p.pilot_sd:.3f} of the log ratio)"
              if p.pilot_sd is not None else "")
    if p.ended_by == "precision":
        out.precision = f"{asked}; reached with {units} {unit}s as planned{spread}: {reached}"
    elif p.ended_by == "budget":
        out.precision = (f"{asked}; the budget ended the run after {units} of {p.planned} planned "
                         f"{unit}s{spread}: {reached}")
    else:
        out.precision = f"{asked}; the run stopped after {units} {unit}s before its plan ended: {reached}"
    return out


def _targets_sentence(m: Manifest, units: int, unit: str) -> str:
    """A run that decides (collectors/runner/targets.py): what it aimed at, how its reps were
    planned before it (the plan's note), and what ended it. Whether each row got to its
    target is its own "could see" in the tables."""
    p = m.precision
    aims = (f"the run aimed at what a change could be seen to (80% power): throughput ±"
            f"{TARGET_THROUGHPUT:.0%}, each focus function of {TARGET_SHARE:.0%} of the samples or "
            f"more ±{TARGET_FOCUS:.0%} at its family's level, every such function ±{TARGET_MOVERS:.0%} "
            f"(the perf rate), within {_duration(m.options.budget_s)}")
    plan = f"; {p.note}" if p.note else ""
    if p.ended_by == "answered":
        end = f"it answered after {units} of {p.planned} planned {unit}s"
    elif p.ended_by == "precision":
        end = f"{units} {unit}s as planned"
    elif p.ended_by == "budget":
        end = f"the budget ended it after {units} of {p.planned} planned {unit}s"
    else:
        end = f"it stopped after {units} {unit}s before its plan ended"
    return f"{aims}{plan}; {end}: each row says what it could see"


def _short_sentence(reps: int | None, unit: str) -> str:
    """A run planned below FLOOR_REPS, or stopped below it by its budget (row_targets.floor_reps):
    what its intervals keep."""
    kept = short_coverage(reps)
    if kept is None:
        return ""
    return (f". {reps} {unit}s, fewer than the {FLOOR_REPS} a skewed function row's "
            f"interval needs to keep its level: simulated on recorded reps, the printed intervals "
            f"of such a plan covered as little as {kept:.1%}, and every row with a target says "
            f"so (a longer --budget holds more reps)")


def _looks_sentence(p: PrecisionPlan, units: int, unit: str, missed: list[str]) -> str:
    """The looks of a run that decides (analysis/sequential.py): which one ended it, the
    level of every interval and why; then the rows that missed their target (the reports
    end the sentence)."""
    short = (f". Rows that missed their target: {'; '.join(missed)}" if missed
             else ". Every row decided or reached its target")
    if not p.looks:
        return short if missed else ""
    at = ", ".join(str(n) for n in p.looks)
    if p.level is None:
        return f". Looks at {at} {unit}s, {p.made} made so far{short}"
    spent = (f"alpha {p.alpha:.4g} of the run's {ALPHA:g}, spent over looks at {at} {unit}s so "
             f"that every interval the run could have printed holds {1 - ALPHA:.0%} together")
    if p.ended_by == "answered":
        why = (f"look {p.look} of {len(p.looks)} found every row decided, at its target or out of "
               f"its reach, and the run stopped there")
    elif p.ended_by == "budget":
        why = f"the budget stopped it after {p.made} of {len(p.looks)} looks: the alpha they left"
    else:
        why = f"its last look, {p.look} of {len(p.looks)}"
    return f". Every interval of this report is at {level_text(p.level)} ({why}; {spent}){short}"
