"""The default run's targets: what `stallscope run` with no --reps, --precision or --quick
aims at, and the plan that gets there (docs/statistics.md, "A run that decides").

A run is worth its time when its "no change" says something: the throughput row able to see
±2%, each focus function's CPU time per operation ±5% (at the level its family judges it),
every function holding 5% of the samples or more ±10%. The reps and the rate reach them,
set before the run from what it knows then, so that no interval's reps depend on its own
data (the windows a rep and perf's share of them are planned with the reps:
collectors/runner/rep_plan.py):

- **The reps** (`planned_units`): the paired reps this host's recorded spread for the case
  (collectors/host/noise.py: the sd of earlier runs' per-rep log ratios) says the throughput
  row needs for ±2%; TARGET_UNITS before the host has recorded any. The wall-time budget
  (15 min) stops the run early when a rep no longer fits, which reads the clock, not the
  values; inside the plan the run looks at itself and stops once it has answered
  (collectors/runner/looks.py), which reads the values and is paid for by each look's
  stricter level (analysis/sequential.py; the plan is made at the last look's). Planning
  the reps from the run's own first reps instead (Stein's two-stage design) keeps
  the throughput row's coverage but not the function rows': the N that a first stage without
  a rare rep asks is small exactly when the functions' first reps miss it too, and their
  skewed per-rep costs then miss the truth (bench/targets.py, `make bench` figure 12).
- **The rate** (`rate_need`): the samples a 5%-share function needs for ±10% at the level
  the top movers judge it (analysis/power.row_reach) in the planned reps. Counting noise falls with the samples, and both servers are
  sampled at one rate in the same blocks, so perf's cost cancels in every ratio; the rate
  is held to the perturbation budget (collectors/host/sample_cost.py: a rate whose predicted
  cost, a 90% bound on the next run's, stays within 5% of the server's CPU; about one run in
  ten costs more) and to perf's ceiling of 1,999 Hz, and the run checks that its perf-on
  and perf-off blocks agree (analysis/compare/perf_blocks.py).

Each row's "could see" in the report says whether it reached its target: before the run
`out_of_reach` names each target no rate perf is run at reaches in the planned reps, and
why; after it the rows that missed are marked (analysis/compare/row_targets.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from analysis import run_spread, sequential
from analysis.compare.row_targets import function_rows
from analysis.inputs.option_specs import (TARGET_FOCUS, TARGET_MAX_UNITS, TARGET_MIN_UNITS, TARGET_MOVERS,
                                          TARGET_SHARE, TARGET_THROUGHPUT, TARGET_UNITS)
from analysis.power import row_reach, units_to_detect
from collectors.host.noise import Noise
from collectors.host.sample_cost import CEILING, Rate

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


def sampled_seconds(windows: int, window_s: float, share: float = 0.5) -> float:
    """Seconds perf samples one server in a paired rep: half the windows are its own, perf is
    on in `share` of the ABBA blocks of them (collectors/abba.py)."""
    return windows * window_s / 2 * share


def final_alpha(reps: int) -> float:
    """The alpha of a run's last look (analysis/sequential.py): the level a row that runs to
    the end of the plan is judged at is 1 - this (0.028-0.041), not 95%."""
    return sequential.spending(sequential.looks(reps))[-1]


def _reach(share: float, samples: float, reps: int, focus_rows: int | None, alpha: float):
    # a mover's level at the strictest the family can ask: each function's flat and cumulative
    # row both carry its share, so the shares left weigh up to 2 (analysis/compare/families.py)
    return row_reach(share, samples, reps, focus_rows=focus_rows, q=alpha,
                     weight_left=1.0 if focus_rows is not None else 2.0)


def samples_needed(share: float, change: float, reps: int, focus_rows: int | None = None,
                   alpha: float = 0.05) -> float | None:
    """Samples a rep a side that give a row of `share` a detectable `change` over `reps`
    paired reps, at the level its family judges it (analysis/power.row_reach) when the run's
    error is `alpha` (a run that decides: its last look's, final_alpha): a top mover
    (focus_rows None: the movers' weighted Holm and moderated t) or a focus row (a family of
    `focus_rows`, Holm). Counting noise, 1/n_base + 1/n_cand a rep (the recorded A/A's
    dispersion against it 0.84). None below the reps an interval needs."""
    probe = _reach(share, 1000.0, reps, focus_rows, alpha)
    if not math.isfinite(probe.detectable) or probe.se <= 0:
        return None
    k = math.log1p(probe.detectable) / probe.se        # the level's multiplier, in units of se
    return 2 * k * k / (share * reps * math.log1p(change) ** 2)


def rate_need(targets: Targets, reps: int, windows: int, window_s: float,
              focus_rows: int = 0, alpha: float = 0.05, share: float = 0.5) -> float | None:
    """The rate (Hz) that gives a function of `targets.share` its target in `reps` paired
    reps of `windows` windows: `targets.movers` as a top mover, `targets.focus` as a focus
    row of a family of `focus_rows` (0: no focus rows); None when no rate can. (A focus
    function of 5% at ±5% asks more than any rate perf runs at gives in 13 reps: the rate
    is then the highest the budget allows, `out_of_reach` says so before the run, and the
    rows that missed are marked after it.)"""
    needs = [samples_needed(targets.share, targets.movers, reps, alpha=alpha)]
    if focus_rows:
        needs.append(samples_needed(targets.share, targets.focus, reps, focus_rows, alpha))
    if any(n is None for n in needs):
        return None
    return max(needs) / sampled_seconds(windows, window_s, share)


def reach(targets: Targets, hz: float, reps: int, windows: int, window_s: float,
          focus_rows: int = 0, alpha: float = 0.05, share: float = 0.5) -> dict[str, float]:
    """What a function of `targets.share` could see (80% power) at `hz` in `reps` paired
    reps, perf on in `share` of their windows: {"movers": ..., "focus": ...} (focus only
    with focus rows), fractions."""
    samples = hz * sampled_seconds(windows, window_s, share)
    out = {"movers": _reach(targets.share, samples, reps, None, alpha).detectable}
    if focus_rows:
        out["focus"] = _reach(targets.share, samples, reps, focus_rows, alpha).detectable
    return out


def out_of_reach(targets: Targets, rate: Rate, reps: int, windows: int, window_s: float,
                 focus_rows: int = 0, alpha: float = 0.05, share: float = 0.5) -> list[str]:
    """Before the run: each function target the chosen rate cannot reach in the planned
    reps, with the reason that binds: the highest rate perf is run at (RATES, 1,999 Hz),
    where even it falls short in these reps, else the perturbation budget (empty when
    every target is within reach)."""
    words = {"movers": f"every function of {targets.share:.0%} of the samples ±{targets.movers:.0%}",
             "focus": f"each focus function of {targets.share:.0%} of the samples ±{targets.focus:.0%}"}
    want = {"movers": targets.movers, "focus": targets.focus}
    now = reach(targets, rate.hz, reps, windows, window_s, focus_rows, alpha, share)
    top = reach(targets, CEILING, reps, windows, window_s, focus_rows, alpha, share)
    out = []
    for k, got in now.items():
        if got <= want[k]:
            continue
        if top[k] > want[k] and rate.hz >= CEILING:
            why = (f"no rate perf is run at reaches it in {reps} paired reps: {CEILING:,} Hz is the "
                   "highest (collectors/host/sample_cost.py)")
        elif top[k] > want[k]:
            why = (f"no rate perf is run at reaches it in {reps} paired reps: at {CEILING:,} Hz, the "
                   f"highest (collectors/host/sample_cost.py), it could see ±{top[k]:.1%}, and the "
                   f"{rate.budget:.0%} budget of the server's CPU holds perf to {rate.hz:,} Hz "
                   f"({rate.us_per_sample:.1f} µs a sample)")
        else:
            why = (f"the {rate.budget:.0%} budget of the server's CPU holds perf to {rate.hz:,} Hz "
                   f"({rate.us_per_sample:.1f} µs a sample); {CEILING:,} Hz would reach ±{top[k]:.1%}")
        out.append(f"{words[k]} is out of reach: it could see ±{got:.1%} at {rate.hz:,} Hz in "
                   f"{reps} paired reps; {why}")
    return out


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
    # at the level its last look judges (analysis/sequential.py), which depends on the plan
    between = run_spread.planned_sd(spread.between)
    need = units_to_detect(targets.throughput, spread.sd, 0.95, limit=TARGET_MAX_UNITS,
                           between=between)
    for _ in range(3):
        if need is None:
            break
        again = units_to_detect(targets.throughput, spread.sd,
                                1 - final_alpha(max(need, TARGET_MIN_UNITS)), limit=TARGET_MAX_UNITS,
                                between=between)
        if again is not None and again <= need:
            break
        need = again
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
    for r, k in function_rows(results.profile.focus):
        b, c = getattr(r, f"base_{k}_ns"), getattr(r, f"cand_{k}_ns")
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
