"""The seams are typed end to end (issue 19): recorded run directories read through the
records and back to the same JSON; results.json read back typed gives the same file;
paired.json's one model keeps each writer's keys; the one converter checks case values."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.results import Results, load_results
from analysis.inputs.case import Case
from analysis.inputs.paired import PairedWindows, read_paired
from analysis.inputs.records import RecordError, convert
from analysis.inputs.rundir import load_run
from analysis.tma.funnel_doc import FunnelDoc
from tests.conftest import FIXTURES, REPO

RUNS = REPO / "tests" / "data" / "runs"


@pytest.mark.heavy
@pytest.mark.parametrize("run", ["mset-demo-paired", "valkey-rdb-load-1m", "mset-demo-small-v1"])
def test_results_json_read_back_typed_is_the_same_file(run, tmp_path):
    r = analyse(load_run(RUNS / run), CompareOptions())
    (tmp_path / "results.json").write_text(r.dumps())
    back = load_results(tmp_path / "results.json")
    assert back.dumps() == r.dumps()
    rows = back.paired or back.throughput
    assert rows and rows[0].change.verdict == (r.paired or r.throughput)[0].change.verdict
    assert back.case.label == r.case.label and back.case.label   # the case read by attribute


def test_the_manifest_case_is_a_case_that_keeps_unknown_fields(tmp_path):
    d = json.loads((RUNS / "mset-demo-paired" / "manifest.json").read_text())
    d["case"]["workload"]["a_newer_knob"] = 7
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    m = load_run(tmp_path).manifest
    assert isinstance(m.case, Case) and m.case.workload.command[0] == "MSET"
    assert m.to_json()["case"]["workload"]["a_newer_knob"] == 7
    assert m.to_json()["case"] == d["case"]


def test_paired_json_round_trips_with_each_writers_keys():
    files = sorted(RUNS.glob("*/paired/*/paired.json"))
    assert files
    modes = set()
    for f in files:
        d = json.loads(f.read_text())
        doc = read_paired(f)
        assert doc.to_json() == d and list(doc.to_json()) == list(d), f
        modes.add(doc.mode)
        assert all(w.rate is not None for w in doc.windows)
    assert modes == {None, "servers"}       # both writers' files are among the recordings


@pytest.mark.heavy
def test_the_funnel_is_typed_in_results_json():
    from analysis.tma.formats import parse_file
    from analysis.tma.funnel import compare
    top = FIXTURES / "tma" / "toplev"
    f = compare([parse_file(top / "toplev_spr8488c_l2_veb_nomux_v.txt")],
                [parse_file(top / "toplev_spr8488c_l2_eytzinger_nomux_v.txt")])
    doc = f.doc()
    assert asdict(doc) == f.to_json()
    r = analyse(load_run(RUNS / "mset-demo-paired"), CompareOptions())
    r.tma.status, r.tma.funnel = "measured", doc
    back = Results.from_json(json.loads(r.dumps()))
    assert isinstance(back.tma.funnel, FunnelDoc) and back.tma.funnel.rows[0].node == doc.rows[0].node
    assert back.dumps() == r.dumps()


def test_the_one_converter_is_strict_for_case_files():
    assert convert(3, float, "workload.duration_s", strict=True) == 3.0
    with pytest.raises(RecordError, match=r"workload.clients: expected an integer, got 'x'"):
        convert("x", int, "workload.clients", strict=True)
    with pytest.raises(RecordError, match=r"focus: expected a list"):
        convert("dictFind", list[str], "focus", strict=True)
    assert convert("x", int, "workload.clients") == "x"      # JSON reads stay lenient
