"""One plan for a run that decides' reps, windows and perf's share (collectors/runner/rep_plan.py),
priced in the seconds a rep takes here. The rep costs come from recorded runs' phases
(tests/data/runs/*/paired/*/rep.json), the tilt's spread from recorded paired runs; no
server is run here (tests/test_aa.py runs a live A/A at --perf-share 3/4)."""
from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from analysis import sequential
from analysis.compare.perf_blocks import TILT, rep_ratios
from analysis.inputs.host import HostSummary
from analysis.inputs.option_specs import TARGET_UNITS, TARGET_WINDOWS
from analysis.inputs.rundir import load_run
from collectors.abba import SHARES, WHOLE, as_share, block_schedule, schedule, share_period
from collectors.host import noise
from collectors.host.noise import Noise
from collectors.runner import rep_plan, stall_control, targets
from collectors.runner.progress import duration
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "runs"
LOOKS = RUNS / "mset-demo-looks-xeon480"
FOCUS_ROWS = 33      # mset-50keys' 8 focus functions, one thread view


def _recorded_cost(run: Path) -> rep_plan.RepCost:
    """A recorded run's median seconds a paired rep outside its windows, and per window."""
    m = json.loads((run / "manifest.json").read_text())
    fixed, wall = [], []
    for r in m["schedule"]:
        phases = json.loads((run / r["dir"] / "rep.json").read_text())["phases"]
        fixed.append(sum(phases.values()) - phases["windows"])
        wall.append(phases["windows"] / m["options"]["paired_windows"])
    return rep_plan.RepCost(statistics.median(fixed), statistics.median(wall))


def _spread(sd: float, cost: rep_plan.RepCost | None) -> Noise:
    return Noise(sd=sd, unit_s=90, runs=3, source="this case", latest="",
                 fixed_s=cost.fixed_s if cost else None, window_wall_s=cost.window_s if cost else None)


@pytest.mark.parametrize("windows", rep_plan.WINDOWS)
@pytest.mark.parametrize("share", SHARES)
def test_each_share_is_kept_exactly_and_weighs_on_and_off_alike_over_the_rep(share, windows):
    on = block_schedule(windows, share)
    assert sum(on) == share * windows          # whole half-periods (abba.WHOLE) at every share
    blocks = on[::4]
    # a linear drift over each half-period hits "on" and "off" alike when the two halves
    # mirror each other: the mean position of "on" blocks equals that of "off" blocks
    period = share_period(share)
    full = len(blocks) - len(blocks) % len(period)
    mean = lambda state: statistics.fmean(i for i in range(full) if blocks[i] is state)
    assert mean(True) == pytest.approx(mean(False))
    assert not blocks[0]          # the cold first block (pair_clusters.settled drops it) is "off"


def test_share_one_half_is_the_schedule_every_run_had_before():
    for w in (8, 16, 64, 96, 100):
        assert block_schedule(w) == [schedule((w + 3) // 4)[i // 4] for i in range(w)]
    assert as_share(0.666667) == Fraction(2, 3) and as_share(0.75) == Fraction(3, 4)
    with pytest.raises(ValueError, match="perf share 0.9"):
        as_share(0.9)
    assert WHOLE % 16 == 0 and WHOLE % 12 == 0


def test_the_tilt_spread_the_plan_assumes_is_the_recorded_runs():
    """TILT_SD: the median per-rep sd of the on/off tilt, scaled to 96 windows, over the
    recorded paired runs of 96 windows or more at share 1/2 (the planned shares are judged
    by it)."""
    sds = []
    for d in sorted(RUNS.iterdir()):
        if not (d / "manifest.json").is_file():
            continue
        run = load_run(d)
        names, w = run.variant_names, run.manifest.options.paired_windows
        # TILT_SD is the spread at share 1/2 (runs before the share was planned, or planned
        # at 1/2); a run at 3/4 has half as many off windows, its tilt more spread
        if len(names) != 2 or w < TARGET_WINDOWS or run.manifest.options.perf_share not in (None, 0.5):
            continue
        pairs = rep_ratios(run, names[0], names[1])
        if len(pairs) >= 5:
            x = [math.log(on / off) for off, on in pairs]
            sds.append(statistics.stdev(x) * math.sqrt(w / TARGET_WINDOWS))
    assert len(sds) >= 10
    assert statistics.median(sds) == pytest.approx(rep_plan.TILT_SD, abs=0.002)


def test_the_plan_fits_the_budget_at_the_recorded_seconds_a_rep():
    """The demo's host (mset-50keys at 21M keys on a 480 MiB-L3 guest): ~60 s a rep outside its
    windows. 13 reps of 96 windows (the plan of reps alone) would take 20 min; the 12 min the
    budget leaves after the control hold 7 of 96, and 9 of 48: the floor a skewed function
    row's interval needs (analysis/sequential.FLOOR_REPS), so the plan takes those."""
    cost = _recorded_cost(LOOKS)
    assert 50 < cost.fixed_s < 90 and 0.3 < cost.window_s < 0.4
    spread = _spread(0.012, cost)
    old = targets.planned_units(spread, targets.Targets()).units
    assert old * cost.rep_s(TARGET_WINDOWS) > 720          # what the budget used to cut short
    assert int(720 // cost.rep_s(TARGET_WINDOWS)) == 7
    p = rep_plan.plan(spread, 720, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert (p.reps, p.windows) == (sequential.FLOOR_REPS, rep_plan.SHORT_WINDOWS) == (9, 48)
    assert p.reps * p.rep_s <= 720 and p.reps == int(720 // cost.rep_s(p.windows))
    assert "budget holds 9 reps of 48 windows (7 of 96: reps, not samples" in p.text()
    # nine reps reach the floor: nothing said of the intervals' level
    assert not any("fewer than the" in s for s in rep_plan.short_of(p, spread, targets.Targets(), stall_control.CONTROL_S))


def test_a_plan_below_the_floor_says_what_its_intervals_keep():
    """A budget that holds 7 reps even of 48 windows: the run says before it starts that a
    skewed row's interval keeps about 89% (the simulated lowest at 7 planned reps), and which
    budgets would hold 9 and 13 (with the control's 3 min where the run makes one)."""
    cost = _recorded_cost(LOOKS)
    spread = _spread(0.012, cost)
    budget = 7.5 * cost.rep_s(rep_plan.SHORT_WINDOWS)
    p = rep_plan.plan(spread, budget, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert (p.reps, p.windows) == (7, 48)
    short = rep_plan.short_of(p, spread, targets.Targets(), stall_control.CONTROL_S)
    assert short[-1].startswith("7 paired reps are fewer than the 9 a skewed function row's interval needs")
    assert f"kept {sequential.SHORT_COVERAGE[7]:.1%} on the worst printed row" in short[-1]
    nine, thirteen = duration(9 * p.rep_s + stall_control.CONTROL_S), duration(13 * p.rep_s + stall_control.CONTROL_S)
    assert f"a --budget of {nine} holds 9, {thirteen} 13" in short[-1]
    # a run without the in-cache control (--no-stalls) keeps nothing of the budget for it
    bare = rep_plan.short_of(p, spread, targets.Targets(), 0.0)[-1]
    assert f"a --budget of {duration(9 * p.rep_s)} holds 9" in bare and nine not in bare
    # where the fewest windows already hold the floor, a rep keeps them
    at96 = rep_plan.plan(spread, 10 * cost.rep_s(TARGET_WINDOWS), targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert (at96.reps, at96.windows) == (10, TARGET_WINDOWS)


def test_below_the_floor_either_way_the_plan_keeps_the_samples_unless_the_throughput_needs_reps():
    """A budget that holds 7 reps of 96 windows and 8 of 48: neither reaches the floor, and the
    intervals keep about the same at 7 and 8 (sequential.SHORT_COVERAGE). A quiet host's
    throughput reaches ±2% either way: the plan keeps 96 windows, twice the samples a rep for
    the function rows. A loud host's does not: the extra rep narrows it, and the plan takes 48."""
    cost = _recorded_cost(LOOKS)
    budget = 7.2 * cost.rep_s(TARGET_WINDOWS)
    assert int(budget // cost.rep_s(rep_plan.SHORT_WINDOWS)) == 8 < sequential.FLOOR_REPS
    assert sequential.SHORT_COVERAGE[7] == pytest.approx(sequential.SHORT_COVERAGE[8], abs=0.01)
    quiet = rep_plan.plan(_spread(0.004, cost), budget, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert (quiet.reps, quiet.windows) == (7, TARGET_WINDOWS)
    assert "8 of 48 would stay below the 9 a skewed row's interval needs too" in quiet.text()
    loud = rep_plan.plan(_spread(0.012, cost), budget, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert rep_plan.throughput_reach(_spread(0.012, cost), 7) > targets.Targets().throughput
    assert (loud.reps, loud.windows) == (8, rep_plan.SHORT_WINDOWS)
    assert "7 of 96: below the floor either way, the throughput needs the reps more" in loud.text()


def test_the_demo_planned_again_keeps_its_samples_for_the_first_look():
    """The demo's first run on the Xeon guest, planned again after its first rep (50 s outside
    its windows, 0.33 s a window; 2m30s of the 9 min its reps have spent, the dataset's
    preload with it): 5 reps of 96 windows or 6 of 48, both below the floor, and no spread
    recorded for the throughput to need the reps: it keeps 96 windows, its looks at 4 and 5
    (the 48-window plan left lookupKey's own cost open at its first look and ran to 6 reps,
    12 min 03 s)."""
    p = rep_plan.plan(None, 540, targets.Targets(), 999, 0.25, FOCUS_ROWS,
                      cost=rep_plan.RepCost(50.0, 0.333), made=1, spent_s=150.0)
    assert (p.reps, p.windows) == (5, TARGET_WINDOWS) and sequential.looks(p.reps) == [4, 5]
    assert "6 of 48 would stay below the 9" in p.text()


def test_a_short_plan_reaches_the_first_look_where_either_can():
    """310 s at 60 s a rep outside its windows: 3 reps of 96 windows fit, 4 of 48. The plan
    of 48 reaches the first look; 96 would be planned at 4 and stopped by the budget at 3,
    before any look."""
    cost = rep_plan.RepCost(60.0, 0.336)
    p = rep_plan.plan(_spread(0.004, cost), 310, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert (p.reps, p.windows) == (4, rep_plan.SHORT_WINDOWS) and p.reps * p.rep_s <= 310
    assert "3 of 96: fewer than the first look's 4" in p.text()
    # where the fewest windows hold the floor, nothing is said of the other
    ten = rep_plan.plan(_spread(0.004, cost), 10.5 * cost.rep_s(TARGET_WINDOWS), targets.Targets(), 999,
                        0.25, FOCUS_ROWS)
    assert (ten.reps, ten.windows) == (10, TARGET_WINDOWS) and "would stay below" not in ten.text()


def test_a_budget_that_holds_fewer_than_the_first_look_plans_four_and_says_so():
    spread = _spread(0.012, rep_plan.RepCost(60.0, 0.336))
    p = rep_plan.plan(spread, 200, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert p.reps == 4 and "holds 2 reps of 96 windows (at least 13 were wanted); 4 are planned" in p.text()


def test_a_cheap_rep_buys_more_samples_than_the_plan_of_reps_alone():
    """Where a rep costs little outside its windows (15 s), the plan takes the reps the budget
    holds past 13 and raises perf's share: the function rows see smaller changes than the
    plan of reps alone (13 reps of 96 windows at share 1/2) in the same budget."""
    cost = rep_plan.RepCost(15.0, 0.336)
    spread, t = _spread(0.012, cost), targets.Targets()
    p = rep_plan.plan(spread, 720, t, 999, 0.25, FOCUS_ROWS)
    assert p.reps * p.rep_s <= 720 and p.reps > 13 and p.share == Fraction(3, 4)
    assert rep_plan.throughput_reach(spread, p.reps) <= t.throughput
    assert rep_plan.short_of(p, spread, t, stall_control.CONTROL_S) == []
    new = targets.reach(t, 999, p.reps, p.windows, 0.25, FOCUS_ROWS, targets.final_alpha(p.reps), float(p.share))
    old = targets.reach(t, 999, 13, 96, 0.25, FOCUS_ROWS, targets.final_alpha(13), 0.5)
    assert new["movers"] < old["movers"] and new["focus"] < old["focus"]
    # and the tilt check keeps its room at the share chosen
    assert rep_plan.tilt_half_width(p.reps, p.windows, p.share) <= rep_plan.TILT_ROOM * TILT


def test_without_a_recorded_cost_the_plan_is_the_targets_reps_of_96_windows():
    p = rep_plan.plan(None, 720, targets.Targets(), 999, 0.25, FOCUS_ROWS)
    assert (p.reps, p.windows, p.rep_s) == (TARGET_UNITS, TARGET_WINDOWS, None)
    assert p.share == rep_plan.best_share(TARGET_UNITS, TARGET_WINDOWS) == Fraction(3, 4)
    assert "not recorded what a rep of the case costs" in p.text()
    # a loud host: the share falls back to 1/2 where the tilt check would have no room
    assert rep_plan.best_share(4, TARGET_WINDOWS) == Fraction(1, 2)


def test_the_noise_record_keeps_what_a_rep_costs(tmp_path):
    host, store = HostSummary(cpu_model="x"), tmp_path / "noise.json"
    e = noise.entry("r1", "servers", True, [0.01, -0.01, 0.02], [90, 95, 92], fixed_seconds=[60, 62, 58],
                    window_seconds=[0.33, 0.34, 0.35])
    assert (e["fixed_s"], e["window_wall_s"]) == (60, 0.34)
    assert noise.record(host, "mset-50keys", "default", e, store)
    got = noise.lookup(host, "mset-50keys", "default", path=store)
    assert (got.fixed_s, got.window_wall_s) == (60, 0.34)
    assert rep_plan.RepCost.of(got) == rep_plan.RepCost(60, 0.34)
    # another case's rep costs are not this case's (another dataset loads)
    other = noise.lookup(host, "hgetall-big", "default", path=store)
    assert other.source == "other cases on this host" and rep_plan.RepCost.of(other) is None


def test_a_bad_share_is_refused_with_the_flag_named():
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--variant", "a=x",
                        "--variant", "b=x", "--perf-share", "9/10"], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 2 and "--perf-share" in p.stderr and "perf share 9/10" in p.stderr


def test_the_recorded_demo_at_three_quarters_still_measures_perf_from_its_off_blocks():
    """tests/data/runs/mset-demo-plan-xeon480 (`make demo`, perf in 3/4 of the blocks, 4 reps,
    read at its first look's 99.86%): every rep's windows follow the schedule, samples a rep
    are half as many again as at 1/2 (the recorded demo at 1/2: ~6,000 a side), and the
    profiler's cost and the perf-blocks check still come from the off blocks beside the on
    ones. The figures are the README's."""
    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    run = load_run(RUNS / "mset-demo-plan-xeon480")
    assert run.manifest.options.perf_share == 0.75 and run.manifest.precision.look == 1
    for rep in run.manifest.reps(kind="paired"):
        doc = json.loads((run.rep_dir(rep) / "paired.json").read_text())
        assert [w["perf"] for w in doc["windows"]] == block_schedule(96, Fraction(3, 4))
    r = analyse(run, CompareOptions(confidence=run.manifest.precision.level))
    c = r.paired[0].change
    assert (round(100 * c.rel, 1), round(100 * c.rel_ci_low, 1), round(100 * c.rel_ci_high, 1)) == (58.8, 45.1, 73.7)
    cost = r.profiler_cost
    assert cost.available and sum(cost.pairs.values()) == 16          # 2 on-runs a rep and side
    assert cost.pooled.rel_ci_low < 0 < cost.pooled.rel_ci_high
    assert cost.on_off.rel_ci_low < 0 < cost.on_off.rel_ci_high
