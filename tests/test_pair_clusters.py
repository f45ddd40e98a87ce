"""The paired interval's unit is the rep (analysis/compare/pair_clusters.py), on the real
windows of a demo run (tests/data/runs/mset-demo-paired, SOURCES.md there)."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from scipy.stats import kruskal

from analysis import stats
from analysis.compare import pair_clusters, throughput
from analysis.inputs.rundir import load_run

DEMO = Path(__file__).parent / "data" / "runs" / "mset-demo-paired"


def _pairs_by_rep() -> dict[int, list[tuple[float, float]]]:
    """The demo run's window pairs as the comparison reads them."""
    return throughput.paired_units(load_run(DEMO), "base", "prefetch")


def test_window_pairs_are_read_per_rep_in_order_and_the_reps_disagree():
    by_rep = _pairs_by_rep()
    assert list(by_rep) == [1, 2, 3, 4, 5]
    for i, pairs in by_rep.items():
        # the k-th base window with the k-th prefetch window of the same rep, never across
        # reps or variants (the raw file read here independently of the code under test)
        w = json.loads((DEMO / "paired" / str(i) / "paired.json").read_text())["windows"]
        b = [x["calls_per_s"] for x in w if x["variant"] == "base"]
        c = [x["calls_per_s"] for x in w if x["variant"] == "prefetch"]
        assert pairs == list(zip(b, c)) and len(pairs) == 32
    # why the rep is the unit: the reps' log ratios are not one population
    logs = [[math.log(c / b) for b, c in ps] for ps in by_rep.values()]
    assert kruskal(*logs).pvalue < 0.01


def test_enough_reps_each_rep_is_one_unit_of_geometric_means():
    by_rep = _pairs_by_rep()
    units, how = pair_clusters.units(by_rep)
    assert [u.rep for u in units] == [1, 2, 3, 4, 5]
    for u in units:
        ps = by_rep[u.rep]
        assert u.base == pytest.approx(statistics.geometric_mean([b for b, _ in ps]))
        assert u.cand == pytest.approx(statistics.geometric_mean([c for _, c in ps]))
    assert how.startswith("over 5 reps") and "160 pairs in all" in how


def test_the_interval_over_reps_is_wider_than_over_pairs_and_both_see_the_gain():
    by_rep = _pairs_by_rep()
    units, _ = pair_clusters.units(by_rep)
    over_reps = stats.compare([u.base for u in units], [u.cand for u in units], paired=True)
    flat = [p for ps in by_rep.values() for p in ps]
    over_pairs = stats.compare([b for b, _ in flat], [c for _, c in flat], paired=True)
    width = lambda ch: ch.rel_ci_high - ch.rel_ci_low   # noqa: E731
    assert width(over_reps) > 1.5 * width(over_pairs)
    assert over_reps.rel_ci_low > 0 and over_pairs.rel_ci_low > 0       # a gain either way
    assert over_reps.rel_ci_low <= over_reps.rel <= over_reps.rel_ci_high


def test_too_few_reps_fall_back_to_window_pairs_and_say_what_is_left_out():
    by_rep = {r: ps for r, ps in _pairs_by_rep().items() if r <= 2}
    units, how = pair_clusters.units(by_rep)
    assert len(units) == 64 and {u.rep for u in units} == {1, 2}
    assert "over 64 window pairs of 2 rep(s)" in how and "rep-to-rep variation" in how


def test_pairs_without_a_ratio_are_left_out():
    units, how = pair_clusters.units({1: [(100.0, 120.0), (0.0, 50.0)], 2: [], 3: [(90.0, 99.0)]})
    assert [(u.rep, u.base, u.cand) for u in units] == [(1, 100.0, 120.0), (3, 90.0, 99.0)]
    assert "of 2 rep(s)" in how


def test_profiler_cost_is_over_profile_reps_of_their_off_on_pairs():
    from analysis.compare.profiler_cost import profiler_cost, window_pairs
    from analysis.inputs.collector_facts import ProfileWindow
    from analysis.inputs.rundir import load_run
    run = Path(__file__).parent / "data" / "runs" / "mset-99hz-small"   # real, 3 profile reps a side
    rd = load_run(run)
    cost = profiler_cost(rd, "base", "prefetch")
    units, counts = [], {}
    for v in ("base", "prefetch"):
        for rep in rd.manifest.reps(v, "profile"):
            w = json.loads((run / v / str(rep.rep) / "rep.json").read_text())["collectors"]["perf"]["windows"]
            # by hand: neighbouring windows, one off and one on in each block of two
            ps = [(a["ops_per_s"], b["ops_per_s"]) if not a["perf"] else (b["ops_per_s"], a["ops_per_s"])
                  for a, b in zip(w[0::2], w[1::2])]
            assert ps == window_pairs([ProfileWindow.from_json(x) for x in w])
            counts[v] = counts.get(v, 0) + len(ps)
            units.append((statistics.geometric_mean([p[0] for p in ps]),
                          statistics.geometric_mean([p[1] for p in ps])))
    assert cost.available and cost.pairs == counts
    want = stats.compare([u[0] for u in units], [u[1] for u in units], paired=True)
    assert cost.pooled.rel == pytest.approx(want.rel)
    assert (cost.pooled.rel_ci_low, cost.pooled.rel_ci_high) == pytest.approx((want.rel_ci_low, want.rel_ci_high))
    assert "over 6 reps" in cost.pooled.method
    assert set(cost.per_variant) == {"base", "prefetch"}     # 3 reps each: enough for an interval


def test_a_perf_block_is_weighed_against_the_off_blocks_on_both_sides():
    """A rep whose rate rises steadily, perf costing nothing: against the block before
    alone every "on" block reads faster; against both neighbours, exactly even."""
    from analysis.compare.profiler_cost import sandwiches
    states = [False, True, False, True, False, True, False, True]     # runs of one state merged
    blocks = [(on, 1000.0 * 1.01 ** i) for i, on in enumerate(states)]
    pairs = sandwiches(blocks)
    assert len(pairs) == 3                       # the last "on" block has no "off" after it
    assert all(abs(on / off - 1) < 1e-12 for off, on in pairs)
    before_only = [blocks[i][1] / blocks[i - 1][1] - 1 for i in range(1, len(blocks)) if blocks[i][0]]
    assert min(before_only) > 0.009


def test_the_recorded_aa_run_no_longer_reads_perf_as_making_the_server_faster():
    from analysis.compare.profiler_cost import profiler_cost
    cost = profiler_cost(load_run(DEMO.parent / "mset-aa-paired-small"), "a", "b").pooled
    # against the block before alone: +1.65% [+0.92, +2.30] faster with perf on
    assert cost.rel_ci_low < 0 < cost.rel_ci_high and abs(cost.rel) < 0.01
