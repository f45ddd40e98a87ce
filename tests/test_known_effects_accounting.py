"""Known effects at the default size whose truth needs no trust in the profile, on real
recorded runs of a quiet Intel Xeon guest (2026-11-29; tests/data/runs/*/SOURCES.md).

- **An added cost** (cases/patches/known-cost-mset.patch: a 3.0 µs wait on the TSC, no
  `pause`, in stallscopeKnownCost, once per MSET) and its same-code control (0 ns). The
  wait reads as itself in its own function. Beside it the lookups read slower
  (dictFindByHash 🔸), which the control does not show; that is the wait's real effect on
  this host, not a bias of the rows, and the throughput proves it without perf: the
  servers count their own commands, so the time an MSET took is known from throughput
  alone, and it grew by more than the wait. The profile's total agrees with it.
- **A moved cost** (cases/patches/moved-cost-a-mset.patch against moved-cost-b-mset.patch:
  both binaries call two wait functions once per MSET, a waiting 3.0 µs in
  stallscopeMovedCostA, b in stallscopeMovedCostB): the same work at the same moments, so
  the only true change is the cost's place. The run must find A −3 µs, B +3 µs and nothing
  else decided, throughput included.

docs/statistics.md, "Known effects", gives the figures.
"""
from __future__ import annotations

import json

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from analysis.stats import DECIDED
from tests.conftest import REPO

pytestmark = pytest.mark.heavy
RUNS = REPO / "tests" / "data" / "runs"
WAIT_NS = 3000.0          # the patches' STALLSCOPE_*_NS
CALLERS = {"msetGenericCommand", "call", "processCommand", "processInputBuffer", "readQueryFromClient",
           "callHandler", "connSocketEventHandler", "aeProcessEvents", "aeMain", "main"}


def _results(name: str) -> dict:
    return json.loads(json.dumps(analyse(load_run(RUNS / name), CompareOptions()).to_json()))


@pytest.fixture(scope="module")
def added():
    return {"cost": _results("known-cost-nopause-default-emr"),
            "control": _results("known-cost-nopause-control-default-emr")}


def _split(res: dict, name: str) -> dict:
    ts = res["profile"]["time_split"]
    return ts["total"] if name == "all samples" else next(r for r in ts["rows"] if r["name"] == name)


def _decided(res: dict) -> set[tuple[str, str]]:
    return {(r["name"], k) for r in res["profile"]["focus"] + res["profile"]["movers"] for k in ("flat", "cum")
            if r[f"{k}_verdict"] and r[f"{k}_verdict"]["verdict"] in DECIDED}


def test_the_control_decides_nothing(added):
    ctl = added["control"]
    assert not _decided(ctl)
    assert ctl["paired"][0]["change"]["verdict"] not in DECIDED
    assert ctl["profiler_cost"]["frequency_hz"] == added["cost"]["profiler_cost"]["frequency_hz"] == 1999


def test_the_added_wait_reads_as_itself_in_its_own_function(added):
    wait = _split(added["cost"], "stallscopeKnownCost")
    # the wait and its exit, with perf's handler time inside it (~5% at 1999 Hz)
    assert wait["base"] == 0 and wait["ci_low"] <= 1.1 * WAIT_NS and wait["ci_high"] >= WAIT_NS, wait
    assert wait["ci_low"] > 0.9 * WAIT_NS


def test_the_throughput_proves_the_time_beyond_the_wait_is_real(added):
    """The servers count their commands; the base's main thread was the bottleneck, so an
    MSET took 1/throughput of it. The throughput's interval alone says each MSET took longer
    by more than the wait (as long as the profile saw it, perf's handler inside), and the
    profile's total per MSET, wait included, lies in what the throughput says."""
    cost = added["cost"]
    t = cost["paired"][0]
    assert t["change"]["verdict"] in DECIDED
    mset_ns = 1e9 / t["base"]["median"]
    # a change r of throughput is 1/(1+r) - 1 of time per MSET; the interval's ends swap
    grew_low = mset_ns * (1 / (1 + t["change"]["rel_ci_high"]) - 1)
    grew_high = mset_ns * (1 / (1 + t["change"]["rel_ci_low"]) - 1)
    wait = _split(cost, "stallscopeKnownCost")
    assert grew_low > wait["ci_high"], (grew_low, wait)
    total = _split(cost, "all samples")
    # the profile's total holds perf's handler time (~5%); the throughput's time not quite
    # as much (half its windows are without perf): the two intervals overlap
    assert total["ci_low"] <= 1.05 * grew_high and grew_low <= total["ci_high"], (total, grew_low, grew_high)


def test_what_the_added_cost_shows_beyond_the_wait_is_the_lookups_it_slowed(added):
    """Decided beyond the wait and its callers' cumulative cost: only the lookups (their
    flat cost and the cumulative cost of the function that calls them), which the control
    does not show; in where the time went they hold most of the time beyond the wait."""
    cost = added["cost"]
    extra = {(n, k) for n, k in _decided(cost) if n != "stallscopeKnownCost" and not (k == "cum" and n in CALLERS)}
    assert extra <= {("dictFindByHash", "flat"), ("dictFindByHash", "cum"), ("lookupKey", "cum")}, extra
    look = _split(cost, "dictFindByHash")
    assert look["ci_low"] > 0
    beyond = _split(cost, "all samples")["delta"] - _split(cost, "stallscopeKnownCost")["delta"]
    assert 0.5 * beyond < look["delta"] <= beyond


@pytest.fixture(scope="module")
def moved():
    return _results("moved-cost-default-emr")


def test_a_moved_cost_is_found_where_it_went_and_where_it_left(moved):
    """A's own cost falls by the wait and B's rises by it, each interval holding the wait
    (and perf's handler time inside it, ~5% at this rate)."""
    a, b = _split(moved, "stallscopeMovedCostA"), _split(moved, "stallscopeMovedCostB")
    assert a["ci_low"] <= -WAIT_NS and a["ci_high"] >= -1.1 * WAIT_NS and a["ci_high"] < -0.9 * WAIT_NS, a
    assert b["ci_low"] <= 1.1 * WAIT_NS and b["ci_high"] >= WAIT_NS and b["ci_low"] > 0.9 * WAIT_NS, b


def test_a_moved_cost_moves_nothing_else(moved):
    """The same work at the same moments: no throughput change, no change of the CPU time
    per MSET in all, and no decided row but the two functions' own."""
    assert moved["paired"][0]["change"]["verdict"] not in DECIDED
    total = _split(moved, "all samples")
    assert total["ci_low"] <= 0 <= total["ci_high"], total
    waits = {"stallscopeMovedCostA", "stallscopeMovedCostB"}
    assert {(n, k) for n, k in _decided(moved) if n not in waits} == set()
