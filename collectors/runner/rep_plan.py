"""The whole plan of a run that decides: how many paired reps, how many windows in each, and
in what share of those windows perf samples, made together from what a rep costs here in
seconds and the budget (docs/statistics.md, "One plan for reps, windows and perf's share").

A paired rep spends most of its time outside its windows: the servers start, load their
dataset and settle (on the demo's host ~60 s of a ~95 s rep), and only the windows measure.
A plan of reps alone (collectors/runner/targets.planned_units) asked for 13 reps of 96
windows wherever the throughput needed them, and a budget that fitted 9 stopped the run
with its function rows short of what the rate had been chosen for. Here every choice is
priced in the same seconds:

- **windows per rep** (WINDOWS: multiples of abba.WHOLE, so every share is whole ABBA
  periods): more windows give each rep more samples for the same start and load;
- **reps**: at most what the budget holds at this host's recorded seconds a rep
  (RepCost: its fixed part and its windows), at least MIN_REPS (13, the looks' plan). A
  budget that holds fewer gets as many as it holds, of SHORT_WINDOWS (one whole ABBA period)
  where those reach FLOOR_REPS and the fewest windows would not: reps, not samples, keep a
  skewed function row's interval at its level (analysis/sequential.FLOOR_REPS); below the
  floor either way, of TARGET_WINDOWS unless the throughput needs the reps (_short), and the
  run says before it starts what its intervals keep;
- **perf's share of the blocks** (abba.SHARES): samples grow with it, and perf's cost
  still cancels in the paired ratios (both servers are sampled alike); the perf-off blocks
  are left to check that (analysis/compare/perf_blocks.py, equivalence within +-TILT) and
  to measure the overhead. The share is the largest whose predicted tilt interval keeps
  within TILT_ROOM of the line (TILT_SD: the tilt's per-rep spread in recorded runs).

Among the plans the budget holds, the one kept reaches the throughput target (or comes
closest), then brings the function rows nearest theirs (the worst row's detectable size
over its target, at the highest rate perf may run here), then takes the least time.
Without a recorded rep cost (the host's first run of the case) the plan is the targets'
reps of TARGET_WINDOWS windows at the share the tilt allows there, made again from the
first paired rep's cost (collectors/runner/replan.py). None of this reads the run's values:
the reps are fixed before the first look, as the looks need (analysis/sequential.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from scipy import stats as sps

from analysis.inputs.option_specs import TARGET_MAX_UNITS, TARGET_MIN_UNITS, TARGET_UNITS, TARGET_WINDOWS
from analysis import run_spread
from analysis.power import planned_change
from analysis.sequential import FLOOR_REPS, short_coverage
from analysis.compare.perf_blocks import TILT
from collectors.abba import SHARES, WHOLE
from collectors.host.noise import Noise
from collectors.runner import targets as tg
from collectors.runner.progress import duration

WINDOWS = tuple(range(TARGET_WINDOWS, 6 * WHOLE + 1, WHOLE))     # 96, 144, ..., 288
MIN_REPS = TARGET_MIN_UNITS
# a budget that holds fewer than MIN_REPS of the fewest windows: one whole ABBA period a rep
# where that holds more reps (FLOOR_REPS of them keep every interval's level)
SHORT_WINDOWS = WHOLE
# The per-rep sd of log(ratio over the perf-on blocks / ratio over the perf-off blocks) at
# 96 windows and share 1/2: the median of the 12 recorded paired runs of 96-128 windows
# (tests/data/runs: 0.009-0.030; tests/test_rep_plan.py reads them again).
TILT_SD = 0.0125
# The predicted tilt interval's half-width, at most this much of TILT: at 0.6 an A/A's
# interval, centred within its sd of 0, lies inside +-TILT (the blocks "agree") ~88% of the time
TILT_ROOM = 0.6


@dataclass(frozen=True)
class RepCost:
    """What a paired rep costs here: seconds outside its windows, and per window."""
    fixed_s: float
    window_s: float

    def rep_s(self, windows: int) -> float:
        return self.fixed_s + windows * self.window_s

    @classmethod
    def of(cls, spread: Noise | None) -> RepCost | None:
        if spread is None or not spread.fixed_s or not spread.window_wall_s:
            return None
        return cls(spread.fixed_s, spread.window_wall_s)


@dataclass(frozen=True)
class RepPlan:
    reps: int
    windows: int
    share: Fraction
    rep_s: float | None       # predicted seconds a rep (None: no recorded cost)
    why: str

    def text(self) -> str:
        each = f" of about {duration(self.rep_s)} each" if self.rep_s else ""
        return (f"{self.reps} paired reps of {self.windows} windows{each}, perf on in {self.share} "
                f"of their blocks: {self.why}")


def tilt_half_width(reps: int, windows: int, share: Fraction) -> float:
    """The predicted half-width of the perf-blocks interval (95%, t over reps): the tilt's
    per-rep variance goes as 1/(share (1 - share)) and as 1/windows."""
    scale = math.sqrt((0.25 / (share * (1 - share))) * (TARGET_WINDOWS / windows))
    return float(sps.t.ppf(0.975, reps - 1)) * TILT_SD * scale / math.sqrt(reps)


def best_share(reps: int, windows: int) -> Fraction:
    """The largest share whose predicted tilt interval stays within TILT_ROOM of the line."""
    ok = [s for s in SHARES if tilt_half_width(reps, windows, s) <= TILT_ROOM * TILT]
    return max(ok, default=SHARES[0])


def throughput_reach(spread: Noise | None, reps: int) -> float | None:
    """What the throughput row could see in `reps` at its last look's level (None: no spread)."""
    if spread is None or spread.sd <= 0:
        return None
    return planned_change(reps, spread.sd, 1 - tg.final_alpha(reps), between=between_sd(spread))


def between_sd(spread: Noise | None) -> float:
    """The spread between runs recorded for the case here (or, without enough A/A runs,
    another host's: analysis/run_spread.default), as the plan adds it (0.0 without a spread)."""
    return run_spread.planned_sd(spread.between if spread is not None else None)


def _score(p: RepPlan, spread: Noise | None, t: tg.Targets, hz: float, window_s: float,
           focus_rows: int) -> tuple[float, float, float]:
    thr = throughput_reach(spread, p.reps)
    got = tg.reach(t, hz, p.reps, p.windows, window_s, focus_rows, tg.final_alpha(p.reps), float(p.share))
    want = {"movers": t.movers, "focus": t.focus}
    worst = max(got[k] / want[k] for k in got)
    return (max((thr or 0) / t.throughput, 1.0), max(worst, 1.0), p.reps * (p.rep_s or 0))


def plan(spread: Noise | None, budget_s: float | None, t: tg.Targets, hz: float, window_s: float,
         focus_rows: int, cost: RepCost | None = None, made: int = 0, spent_s: float = 0.0) -> RepPlan:
    """The plan the budget holds that serves the targets best (the module's docstring);
    `budget_s` the seconds for the reps (the control's already taken out), `hz` the highest
    rate perf may run at here. `cost` (default: the host's recorded one), `made` and `spent_s`:
    a plan made again during a run (collectors/runner/replan.py) knows what a rep costs from
    its own first reps, `made` of them in `spent_s` seconds of the budget."""
    cost = cost or RepCost.of(spread)
    if cost is None or budget_s is None:
        first = tg.planned_units(spread, t)
        share = best_share(first.units, TARGET_WINDOWS)
        why = first.why + ("; this host has not recorded what a rep of the case costs: the plan is "
                           "made again after the first paired rep" if budget_s is not None and cost is None else "")
        return RepPlan(first.units, TARGET_WINDOWS, share, None, why)
    plans = []
    for w in WINDOWS:
        fit = _fit(budget_s, cost.rep_s(w), made, spent_s)
        for n in range(MIN_REPS, fit + 1):
            plans.append(RepPlan(n, w, best_share(n, w), cost.rep_s(w), ""))
    score = lambda p: _score(p, spread, t, hz, window_s, focus_rows)    # noqa: E731
    if not plans:
        return _short(budget_s, cost, score, made, spent_s)
    best = min(plans, key=score)
    return RepPlan(best.reps, best.windows, best.share, best.rep_s,
                   _why(best, spread, t, budget_s, cost))


def _fit(budget_s: float, rep_s: float, made: int, spent_s: float) -> int:
    """The reps the budget holds at `rep_s` seconds each, `made` of them already made in `spent_s`."""
    return min(made + int(max(budget_s - spent_s, 0.0) // rep_s), TARGET_MAX_UNITS)


def _short(budget_s: float, cost: RepCost, score: Callable[[RepPlan], tuple], made: int = 0,
           spent_s: float = 0.0) -> RepPlan:
    """Not even MIN_REPS of the fewest windows fit: as many reps as do, of TARGET_WINDOWS
    where they reach FLOOR_REPS, else of SHORT_WINDOWS where those do; at least 4. Where
    neither reaches the floor, the intervals keep about the same below it
    (sequential.SHORT_COVERAGE: 88-94% at 4-8 reps), and of the plans that reach the first
    look TARGET_WINDOWS unless the throughput comes nearer its target with the other's reps
    (`score`'s first part): a look decides with the samples of the reps it has, and the
    demo's first run, planned again at 6 reps of 48 windows, left lookupKey open at its
    first look and ran to 6 (12 min 03 s) where 96 windows answered at 4."""
    fits = {w: _fit(budget_s, cost.rep_s(w), made, spent_s) for w in (TARGET_WINDOWS, SHORT_WINDOWS)}
    # the plans that reach the first look (4 reps); of none, the one that holds more reps
    looked = [x for x in fits if fits[x] >= 4]
    if fits[TARGET_WINDOWS] >= FLOOR_REPS or fits[SHORT_WINDOWS] >= FLOOR_REPS:
        w = TARGET_WINDOWS if fits[TARGET_WINDOWS] >= FLOOR_REPS else SHORT_WINDOWS
    elif looked:
        w = min(looked, key=lambda x: (score(RepPlan(fits[x], x, best_share(fits[x], x), cost.rep_s(x), ""))[0],
                                       x != TARGET_WINDOWS))
    else:
        w = TARGET_WINDOWS if fits[TARGET_WINDOWS] >= fits[SHORT_WINDOWS] else SHORT_WINDOWS
    fit = fits[w]
    n = max(fit, 4)
    why = _short_why(w, fits)
    wanted = f" ({why}at least {MIN_REPS} were wanted)"
    holds = (f"the {duration(budget_s)} budget holds {n} reps of {w} windows{wanted}" if fit >= 4 else
             f"the {duration(budget_s)} budget holds {fit} reps of {w} windows{wanted}; 4 are planned "
             "(the first look's) and the budget may stop them sooner")
    return RepPlan(n, w, best_share(n, w), cost.rep_s(w), holds)


def _short_why(w: int, fits: dict[int, int]) -> str:
    """Why a short plan takes its windows, where the other would have held more reps."""
    if w == SHORT_WINDOWS and fits[w] > fits[TARGET_WINDOWS]:
        why = ("reps, not samples, keep a skewed row's interval at its level" if fits[w] >= FLOOR_REPS
               else "below the floor either way, the throughput needs the reps more"
               if fits[TARGET_WINDOWS] >= 4 else "fewer than the first look's 4")
        return f"{fits[TARGET_WINDOWS]} of {TARGET_WINDOWS}: {why}; "
    if fits[SHORT_WINDOWS] > fits[w] and fits[w] < FLOOR_REPS:
        return (f"{fits[SHORT_WINDOWS]} of {SHORT_WINDOWS} would stay below the {FLOOR_REPS} a skewed "
                f"row's interval needs too, with fewer samples a rep; ")
    return ""


def _why(p: RepPlan, spread: Noise | None, t: tg.Targets, budget_s: float, cost: RepCost) -> str:
    thr = throughput_reach(spread, p.reps)
    sees = f"the throughput could see ±{thr:.1%}" if thr is not None else "no throughput spread recorded"
    if between_sd(spread):
        sees += f" with {run_spread.whose(spread.between)} (sd {spread.between.sd:.2%}) in it"
    return (f"the plan the {duration(budget_s)} budget holds that best serves the targets, at "
            f"{cost.fixed_s:.0f} s a rep outside its windows and {cost.window_s:.2f} s a window here; "
            f"{sees} (target ±{t.throughput:.0%})")


def short_of(p: RepPlan, spread: Noise | None, t: tg.Targets, control_s: float) -> list[str]:
    """The throughput target this plan cannot reach, and why, and a plan of fewer reps than
    a skewed function row's interval needs to keep its level (FLOOR_REPS), with the budgets
    that would hold those and MIN_REPS (`control_s`: what the budget keeps for the in-cache
    control, 0 without one; the function targets are judged with the rate:
    targets.out_of_reach)."""
    out = []
    thr = throughput_reach(spread, p.reps)
    if thr is not None and thr > t.throughput:
        out.append(f"throughput ±{t.throughput:.0%} is out of reach: it could see ±{thr:.1%} in the "
                   f"{p.reps} paired reps the budget holds (sd {spread.sd:.4f} of the log ratio recorded here"
                   + (f", {spread.between.sd:.2%} between runs{' on another host' if spread.between.borrowed else ''}, "
                      "which no reps narrow" if between_sd(spread) else "")
                   + ")")
    kept = short_coverage(p.reps)
    if kept is not None and p.rep_s:
        more = (f" (a --budget of {duration(FLOOR_REPS * p.rep_s + control_s)} holds {FLOOR_REPS}, "
                f"{duration(MIN_REPS * p.rep_s + control_s)} {MIN_REPS})")
        out.append(f"{p.reps} paired reps are fewer than the {FLOOR_REPS} a skewed function row's "
                   f"interval needs to keep its level: simulated on recorded reps, a plan of "
                   f"{p.reps} kept {kept:.1%} on the worst printed row, and the report marks every "
                   f"row with a target so (docs/statistics.md){more}")
    return out
