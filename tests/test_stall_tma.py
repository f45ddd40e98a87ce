"""TMA's DRAM_Bound beside the out-of-cache cost (analysis/compare/stall_tma.py): on real
recordings (the demo's stall section, tests/data/runs/mset-demo-stalls-xeon480, and a real
comet lake perf stat pair, one run a side: no interval, so nothing can be told), then the
rule's four cases on that recorded DRAM_Bound row given an interval."""
from __future__ import annotations

import dataclasses

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.stall_tma import agreement
from analysis.inputs.rundir import load_run
from analysis.tma.formats import parse_file
from analysis.tma.funnel import compare
from tests.conftest import FIXTURES, REPO

PF = FIXTURES / "tma" / "perf"
RUN = REPO / "tests" / "data" / "runs" / "mset-demo-stalls-xeon480"


@pytest.fixture(scope="module")
def recorded():
    sec = analyse(load_run(RUN), CompareOptions()).stalls
    funnel = compare([parse_file(PF / "perf_stat_M_TopdownL1-L3_cometlake_runA.txt")],
                     [parse_file(PF / "perf_stat_M_TopdownL1-L3_cometlake_runB.txt")]).doc()
    return sec, funnel


def test_one_run_a_side_cannot_tell(recorded):
    sec, funnel = recorded
    text, verdict = agreement(sec, funnel)
    assert verdict == "cannot tell" and "too few runs" in text
    assert "DRAM_Bound 47.0% → 34.0%" in text and "L3_Bound" in text


def test_no_funnel_says_nothing(recorded):
    sec, _ = recorded
    assert agreement(sec, None) == ("", "")


@pytest.mark.parametrize("delta, significant, want", [
    (-13.0, True, "agree"),          # the demo's stall fell, DRAM_Bound fell
    (+13.0, True, "disagree"),       # DRAM_Bound rose
    (-1.0, False, "cannot tell"),    # DRAM_Bound's interval holds 0, the stall fell
])
def test_the_rule(recorded, delta, significant, want):
    sec, funnel = recorded
    rows = [dataclasses.replace(r, delta_pp=delta, ci_pp=[delta - 2, delta + 2] if significant else [delta - 3, delta + 3],
                                significant=significant) if r.node.endswith("DRAM_Bound") else r
            for r in funnel.rows]
    total = next(x for x in sec.rows if x.kind == "total")
    assert total.removed.decided and total.removed.value > 0      # the recorded demo's stall fell
    assert agreement(sec, dataclasses.replace(funnel, rows=rows))[1] == want


def test_neither_moving_agrees(recorded):
    """The fourth case: DRAM_Bound's interval holds 0 and so does the out-of-cache cost's
    removed stall (the recorded total row given an interval across 0)."""
    sec, funnel = recorded
    rows = [dataclasses.replace(r, delta_pp=-1.0, ci_pp=[-3.0, 1.0], significant=False)
            if r.node.endswith("DRAM_Bound") else r for r in funnel.rows]
    still = [dataclasses.replace(x, removed=dataclasses.replace(x.removed, low=-1.0, high=1.0))
             if x.kind == "total" else x for x in sec.rows]
    text, verdict = agreement(dataclasses.replace(sec, rows=still), dataclasses.replace(funnel, rows=rows))
    assert verdict == "agree" and "neither moved" in text
