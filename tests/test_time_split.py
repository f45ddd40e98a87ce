"""Where the time went (analysis/compare/time_split.py, results.json `profile.time_split`):
the change in CPU time per operation split by function's own cost. On recorded runs the
rows and "everything else" add up to the total, each row is the difference of the per-rep
means, and its interval is the t interval the comparison already uses (Welch for separate
profile reps, paired t for profiles of paired reps), checked against scipy directly."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from scipy import stats as sps

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.results import Results
from analysis.compare.time_split import ROWS, time_split
from analysis.inputs.rundir import load_run
from analysis.report import lead, markdown as report_md
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "runs"


@pytest.fixture(scope="module")
def demo() -> Results:
    """Redis vs the MSET prefetch patch: 3 separate profile reps a side (unpaired)."""
    return analyse(load_run(RUNS / "mset-demo-paired"), CompareOptions())


@pytest.fixture(scope="module")
def aa_paired() -> Results:
    """An A/A run whose profiles come from its 10 paired reps."""
    return analyse(load_run(RUNS / "mset-aa-paired-small"), CompareOptions())


def _adds_up(s) -> None:
    total = sum(r.delta for r in s.rows) + s.rest.delta
    assert total == pytest.approx(s.total.delta, rel=1e-9, abs=1e-6)
    assert sum(r.base for r in s.rows) + s.rest.base == pytest.approx(s.total.base, rel=1e-9)
    assert sum(r.cand for r in s.rows) + s.rest.cand == pytest.approx(s.total.cand, rel=1e-9)


def test_the_demo_splits_into_rows_that_add_up(demo):
    s = demo.profile.time_split
    assert s.available and s.estimator == "difference of means" and s.unit == "ns/op"
    assert len(s.rows) == ROWS and [abs(r.delta) for r in s.rows] == sorted((abs(r.delta) for r in s.rows), reverse=True)
    _adds_up(s)
    first = s.rows[0]
    assert first.name == "dictFindByHash" and first.delta < -15_000          # the lookup the patch prefetches
    assert {r.name for r in s.rows if r.base == 0 and r.delta > 0} == {"dictPrefetchBucket", "dictPrefetchBucketEntry"}
    assert s.rest.name == "everything else" and s.total.functions == s.rest.functions + ROWS
    # the total is the whole view's CPU time per operation, the per-op table's all-samples row
    t = demo.profile.per_op_total
    assert s.total.base == pytest.approx(np.mean(t.base.values)) and s.total.cand == pytest.approx(np.mean(t.cand.values))


def test_a_row_is_its_mean_difference_with_welchs_interval(demo):
    """dictFindByHash's row, from the per-rep values of its focus row (flat, ns/op): the
    difference of means and scipy's Welch interval, at the comparison's 95%."""
    row = next(r for r in demo.profile.time_split.rows if r.name == "dictFindByHash")
    f = next(r for r in demo.profile.focus if r.name == "dictFindByHash")
    b, c = np.asarray(f.base_flat_ns.values), np.asarray(f.cand_flat_ns.values)
    assert row.delta == pytest.approx(c.mean() - b.mean(), rel=1e-12)
    ci = sps.ttest_ind(c, b, equal_var=False).confidence_interval(0.95)
    assert (row.ci_low, row.ci_high) == (pytest.approx(ci.low, rel=1e-9), pytest.approx(ci.high, rel=1e-9))


@pytest.mark.heavy
def test_paired_profiles_get_the_paired_t_interval(aa_paired):
    s = aa_paired.profile.time_split
    assert aa_paired.profile.paired and s.estimator == "mean pair difference"
    assert s.method.startswith("paired t-interval of the mean difference, n=10 pairs, 95%")
    _adds_up(s)
    # A/A: the same build on both sides; the whole view's change is nothing, its interval says so
    assert s.total.ci_low < 0 < s.total.ci_high
    row = next(r for r in s.rows if r.name == "dictFindByHash")
    f = next(r for r in aa_paired.profile.focus if r.name == "dictFindByHash")
    d = np.asarray(f.cand_flat_ns.values) - np.asarray(f.base_flat_ns.values)
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert row.delta == pytest.approx(d.mean(), rel=1e-12)
    assert (row.ci_low, row.ci_high) == (pytest.approx(ci.low, rel=1e-9), pytest.approx(ci.high, rel=1e-9))


def test_few_reps_give_no_interval_and_still_add_up():
    per_rep = {"a": [{"f": 10.0, "g": 5.0}, {"f": 12.0, "g": 4.0}], "b": [{"f": 6.0, "h": 1.0}, {"f": 7.0, "h": 2.0}]}
    s = time_split(per_rep, {"a": [20.0, 21.0], "b": [15.0, 14.0]}, "a", "b", True, 0.95, "main")
    assert [r.name for r in s.rows] == ["f", "g", "h"] and s.rows[0].delta == pytest.approx(-4.5)
    assert all(r.ci_low is None for r in s.rows + [s.rest, s.total])     # 2 reps: no interval
    _adds_up(s)
    with pytest.raises(ValueError, match="2 profile reps but 1 totals"):
        time_split(per_rep, {"a": [20.0], "b": [15.0, 14.0]}, "a", "b", True, 0.95, "main")


def test_results_json_keeps_it_and_older_results_read_without_it(demo):
    doc = demo.to_json()
    assert Results.from_json(doc).to_json()["profile"]["time_split"] == doc["profile"]["time_split"]
    split = doc["profile"]["time_split"]
    assert all(isinstance(r["delta"], float) and math.isfinite(r["delta"]) for r in split["rows"])
    old = copy.deepcopy(doc)
    del old["profile"]["time_split"]                  # results.json written before the view
    r = Results.from_json(old)
    assert r.profile.time_split is None and lead.split(r) is None and lead.split_caption(r) == ""
    md = report_md.render(r)
    assert "Where the time went" not in md and "**Paired throughput +32.0%" in md


def test_without_cpu_time_per_operation_it_says_why(demo):
    """No operation counts (weights that are not CPU time, an rdb-load case ...): the view
    is absent with the reason, and the lead says so in one line."""
    from analysis.compare.per_op import PerOp
    from analysis.compare.profiles import _time_split
    s = _time_split({}, PerOp(None, "weights are samples, not cpu-clock ns"), "base", "prefetch", "all", False, 0.95)
    assert not s.available and s.reason == "weights are samples, not cpu-clock ns"
    r = copy.deepcopy(demo)
    r.profile.time_split = s
    assert lead.split(r) is None
    assert lead.split_caption(r) == "Where the time went: not split (weights are samples, not cpu-clock ns)."
    # no profiles at all: the lead says why where its focus table would be
    r = analyse(load_run(RUNS / "valkey-rdb-load-1m"), CompareOptions())
    assert r.profile.time_split is None and lead.focus(r) is None
    assert lead.focus_left_out(r).startswith("No profile comparison: no profile reps")
