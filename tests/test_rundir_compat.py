"""Old run directories keep giving the same numbers.

tests/data/runs/mset-demo-small-v1 was made by stallscope before the architecture change
(schema-1 manifest and rep.json), and expected-results.json is what that version's
analysis wrote for it. Today's analysis must read the directory and reproduce every side
(values, medians, spreads) and every absolute interval of the change. The printed change
itself may differ where its estimator was made to agree with its interval
(docs/statistics.md), so it is checked to lie inside that interval instead. The function
rows are now judged together (Benjamini-Hochberg, docs/statistics.md "Many comparisons at
once"): their intervals are at the family's level, above 95%, so each must hold the old
95% interval.
"""
from __future__ import annotations

import json

import pytest

from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "runs" / "mset-demo-small-v1"
SIDE_KEYS = ("n", "median", "mean", "stdev", "min", "max", "values", "reps")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    from commands import compare as cli
    out = tmp_path_factory.mktemp("compat")
    assert cli.main([str(RUN), "--out", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads((RUN / "expected-results.json").read_text())


def _same_side(got: dict, want: dict, where: str) -> None:
    for k in SIDE_KEYS:
        assert got[k] == pytest.approx(want[k], rel=1e-9), f"{where}.{k}"


def _same_interval(got: dict, want: dict, where: str) -> None:
    assert got["ci_low"] == pytest.approx(want["ci_low"], rel=1e-9), where
    assert got["ci_high"] == pytest.approx(want["ci_high"], rel=1e-9), where
    assert got["ci_low"] <= got["delta"] <= got["ci_high"], f"{where}: change outside its interval"


def _wider_interval(got: dict, want: dict, level: float, where: str) -> None:
    """The same method at the family's confidence (95% or more; exactly 95% when every row
    of the family is called changed): the old 95% interval inside the new one."""
    assert got["confidence"] >= level - 1e-9 >= 0.95 - 1e-9, where
    assert got["ci_low"] <= want["ci_low"] + 1e-9 and want["ci_high"] - 1e-9 <= got["ci_high"], where
    assert got["ci_low"] <= got["delta"] <= got["ci_high"], f"{where}: change outside its interval"


@pytest.mark.heavy
def test_throughput_and_latency_rows_are_unchanged(results, expected):
    for section in ("throughput", "latency"):
        assert len(results[section]) == len(expected[section]) > 0
        for got, want in zip(results[section], expected[section]):
            where = f"{section} {want['metric']}"
            assert got["test"] == want["test"]
            _same_side(got["base"], want["base"], where + " base")
            _same_side(got["cand"], want["cand"], where + " cand")
            _same_interval(got["change"], want["change"], where)


def test_focus_function_shares_and_costs_are_unchanged(results, expected):
    got_rows = {r["name"]: r for r in results["profile"]["focus"]}
    want_rows = {r["name"]: r for r in expected["profile"]["focus"]}
    assert set(got_rows) == set(want_rows) and "dictFindByHash" in got_rows
    for name, want in want_rows.items():
        got = got_rows[name]
        for side in ("base_flat", "cand_flat", "base_cum", "cand_cum", "base_flat_ns",
                     "cand_flat_ns", "base_cum_ns", "cand_cum_ns"):
            _same_side(got[side], want[side], f"{name}.{side}")
        level = results["profile"]["fdr"]["level"]
        for ch in ("flat_change", "cum_change"):
            _wider_interval(got[ch], want[ch], level, f"{name}.{ch}")
    assert results["profile"]["per_op_command"] == expected["profile"]["per_op_command"] == "MSET"
    assert results["profile"]["ops"] == expected["profile"]["ops"]


def test_notes_and_environment_survive(results, expected):
    assert results["notes"] == expected["notes"]
    assert results["environment"]["host"] == expected["environment"]["host"]
    assert results["environment"]["variants"]["prefetch"]["patches"] == \
        expected["environment"]["variants"]["prefetch"]["patches"]
