"""The default run's targets: what `stallscope run` with no --reps, --precision or --quick
aims at, and the plan that gets there (docs/statistics.md, "A run that decides").

A run is worth its time when its "no change" says something: the throughput row able to see
±2%, each focus function's CPU time per operation ±5% (at the level its family judges it),
every function holding 5% of the samples or more ±10%. Two knobs reach them, both set
before the run from what it knows then, so that no interval's reps depend on its own data:

- **The reps** (`planned_units`): the paired reps this host's recorded spread for the case
  (collectors/host/noise.py: the sd of earlier runs' per-rep log ratios) says the throughput
  row needs for ±2%; TARGET_UNITS before the host has recorded any. The wall-time budget
  (15 min) stops the run early when a rep no longer fits, which reads the clock, not the
  values. Every row is then an ordinary interval over a number of reps its data did not
  choose. Planning from the run's own first reps instead (Stein's two-stage design) keeps
  the throughput row's coverage but not the function rows': the N that a first stage without
  a rare rep asks is small exactly when the functions' first reps miss it too, and their
  skewed per-rep costs then miss the truth (bench/targets.py, `make bench` figure 12).
- **The rate** (`rate_need`): the samples a 5%-share function needs for ±10% at the level
  the top movers judge it (analysis/power.row_reach) in the planned reps. Counting noise falls with the samples, and both servers are
  sampled at one rate in the same blocks, so perf's cost cancels in every ratio; the rate
  is capped by the perturbation budget (collectors/host/sample_cost.py: at most ~5% of the
  server's CPU), and the run checks that its perf-on and perf-off blocks agree
  (analysis/compare/perf_blocks.py).

Each row's "could see" in the report says whether it reached its target.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.inputs.option_specs import (TARGET_FOCUS, TARGET_MAX_UNITS, TARGET_MIN_UNITS, TARGET_MOVERS,
                                          TARGET_SHARE, TARGET_THROUGHPUT, TARGET_UNITS)
from analysis.power import row_reach, units_to_detect
from collectors.host.noise import Noise

@dataclass(frozen=True)
class Targets:
    """Detectable sizes (fractions of the ratio, 80% power) the default run aims at."""
    throughput: float = TARGET_THROUGHPUT
    focus: float = TARGET_FOCUS
    movers: float = TARGET_MOVERS
    share: float = TARGET_SHARE          # functions at this share of the samples or more

    def text(self) -> str:
        return (f"throughput ±{self.throughput:.0%}, focus functions ±{self.focus:.0%}, every function "
                f"of {self.share:.0%} of the samples or more ±{self.movers:.0%}")


def sampled_seconds(windows: int, window_s: float) -> float:
    """Seconds perf samples one server in a paired rep: half the windows are its own, perf is
    on in every other ABBA block of them (collectors/abba.py)."""
    return windows * window_s / 4


def samples_needed(share: float, change: float, reps: int, focus_rows: int | None = None) -> float | None:
    """Samples a rep a side that give a row of `share` a detectable `change` over `reps`
    paired reps, at the level its family judges it (analysis/power.row_reach): a top mover
    (focus_rows None: the movers' weighted Holm and moderated t) or a focus row (a family of
    `focus_rows`, Holm). Counting noise, 1/n_base + 1/n_cand a rep (the recorded A/A's
    dispersion against it 0.84). None below the reps an interval needs."""
    # a mover's level at the strictest the family can ask: each function's flat and cumulative
    # row both carry its share, so the shares left weigh up to 2 (analysis/compare/families.py)
    probe = row_reach(share, 1000.0, reps, focus_rows=focus_rows,
                      weight_left=1.0 if focus_rows is not None else 2.0)
    if not math.isfinite(probe.detectable) or probe.se <= 0:
        return None
    k = math.log1p(probe.detectable) / probe.se        # the level's multiplier, in units of se
    return 2 * k * k / (share * reps * math.log1p(change) ** 2)


def rate_need(targets: Targets, reps: int, windows: int, window_s: float,
              focus_rows: int = 0) -> float | None:
    """The rate (Hz) that gives a function of `targets.share` its target in `reps` paired
    reps of `windows` windows: `targets.movers` as a top mover, `targets.focus` as a focus
    row of a family of `focus_rows` (0: no focus rows); None when no rate can. (A focus
    function of 5% at ±5% asks more than the perturbation budget allows: the rate is then
    the budget's, and the focus rows' "could see" says what they reached.)"""
    needs = [samples_needed(targets.share, targets.movers, reps)]
    if focus_rows:
        needs.append(samples_needed(targets.share, targets.focus, reps, focus_rows))
    if any(n is None for n in needs):
        return None
    return max(needs) / sampled_seconds(windows, window_s)


@dataclass(frozen=True)
class UnitsPlan:
    """The paired reps a run that decides takes, and why."""
    units: int
    why: str


def planned_units(spread: Noise | None, targets: Targets) -> UnitsPlan:
    """The reps the throughput row needs for its target at this host's recorded spread for
    the case (collectors/host/noise.lookup), within TARGET_MIN_UNITS..TARGET_MAX_UNITS;
    TARGET_UNITS when the host has recorded none."""
    if spread is None or spread.sd <= 0:
        return UnitsPlan(TARGET_UNITS, f"{TARGET_UNITS} paired reps: this host has recorded no spread for "
                                       "the case yet (this run's is recorded for the next)")
    need = units_to_detect(targets.throughput, spread.sd, 0.95, limit=TARGET_MAX_UNITS)
    units = min(max(need or TARGET_MAX_UNITS, TARGET_MIN_UNITS), TARGET_MAX_UNITS)
    asks = f"asks {need}" if need is not None else f"asks more than {TARGET_MAX_UNITS}"
    floor = f" (at least {TARGET_MIN_UNITS}, the function rows')" if units == TARGET_MIN_UNITS and units != need else ""
    return UnitsPlan(units, f"{units} paired reps{floor}: the throughput's spread recorded on this host "
                            f"(sd {spread.sd:.4f} of the log ratio, {spread.runs} run(s) of {spread.source}) "
                            f"{asks} for ±{targets.throughput:.0%}")


def focus_ratios(results) -> dict[str, list[float]]:
    """Each focus row's per-rep log ratios of CPU time per operation (flat and cumulative,
    the focus view) whose function holds the target share on either side: the rows a run
    that decides aims at (bench/targets.py simulates their coverage)."""
    out: dict[str, list[float]] = {}
    for r in results.profile.focus:
        for k in ("flat", "cum"):
            b, c = getattr(r, f"base_{k}_ns"), getattr(r, f"cand_{k}_ns")
            share = max(getattr(r, f"base_{k}").median or 0, getattr(r, f"cand_{k}").median or 0)
            if b is None or c is None or share < TARGET_SHARE * 100:
                continue
            x = [math.log(cv / bv) for bv, cv in zip(b.values, c.values) if bv > 0 and cv > 0]
            if len(x) >= 2:
                out[f"{r.name} ({k})"] = x
    return out


def focus_family_rows(focus: list[str], io_threads: int) -> int:
    """The rows the focus family judges at most (analysis/compare/families.function_fdr):
    each focus function's flat and cumulative row, in both thread views where io-threads
    split them, each thread group's share, and the whole profile's CPU per operation."""
    views = 2 if io_threads > 1 else 1
    return 2 * len(focus) * views + (2 if io_threads > 1 else 0) + 1
