"""The sweep's lookup column (analysis/sweep/point_rows.py): which function and which measure,
on real recorded runs."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from analysis.sweep.point_rows import lookup_cost

RUNS = Path(__file__).parent / "data" / "runs"


def _lookup(run: str, names=None):
    return lookup_cost(analyse(load_run(RUNS / run), CompareOptions()), names)


@pytest.mark.heavy
def test_redis_lookup_is_its_flat_cost():
    lc = _lookup("mset-demo-paired")
    assert (lc.function, lc.measure, lc.command) == ("dictFindByHash", "flat", "MSET")
    # 25.4 -> 6.97 µs per MSET. This recorded run profiled 3 separate reps a side (before
    # profiles came from the paired windows): judged together with every top-mover candidate
    # at 99.9%, 3 unpaired reps cannot establish even a 73% fall (its row says what they
    # could see); the paired profiles of newer runs can (tests/test_known_effects.py).
    assert lc.cand.median < 0.3 * lc.base.median and lc.change.p_value < 0.01
    assert lc.change.verdict in ("improvement", "unstable") and lc.change.detectable is not None


def test_an_inlined_valkey_lookup_is_its_cumulative_cost_and_new_paths_are_not_the_lookup():
    # GET with io-threads: hashtableFind is inlined (flat ~0); processClientsCommandsBatch
    # exists only with prefetching on and must not be taken for the lookup
    lc = _lookup("valkey-get-p1-default")
    assert (lc.function, lc.measure, lc.command) == ("hashtableFind", "cumulative", "GET")
    assert lc.cand.median < lc.base.median
    # 6-44 samples of it a rep: the statistic's "unstable" is counting noise, and the cell
    # says so as the point's report does
    assert lc.change.verdict == "unstable" and lc.verdict == "undersampled"
    from analysis.sweep.cells import lookup
    from analysis.sweep.results import PointRow
    cell = lookup(PointRow(id="p1", index=1, lookup=lc))
    assert "too few samples" in cell and "unstable" not in cell


@pytest.mark.heavy
def test_a_named_lookup_is_used_and_a_missing_one_says_so():
    lc = _lookup("valkey-get-p1-default", ["lookupKey"])
    assert lc.function == "lookupKey" and lc.measure == "cumulative"
    lc = _lookup("valkey-get-p1-default", ["noSuchFunction"])
    assert lc.function == "" and "noSuchFunction: not in the profiles" in lc.reason
