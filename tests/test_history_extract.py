"""What the history keeps of a results.json (analysis/history/extract.py), read through the
results model: the recorded schema-1 results.json of tests/data/runs/mset-demo-small-v1
gives its series with the numbers the file holds; fields an older document lacks leave
their series out, keys a newer one adds are ignored; a document that does not fit the
model is refused with where it is, and nothing of it is stored."""
from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest

from analysis.compare.results import Results, TmaSection
from analysis.history.extract import Sections, extract
from analysis.history.sources import ingest_path
from analysis.history.store import HistoryStore
from analysis.inputs.records import RecordError, hints
from analysis.tma.funnel_doc import FunnelDoc, FunnelRowDoc, FunnelSide

RECORDED = Path(__file__).parent / "data" / "runs" / "mset-demo-small-v1" / "expected-results.json"
TPUT = "throughput:MSET key:__rand_int__ xxxxxxxxxx"     # the test name, 50 keys of it


@pytest.fixture
def doc() -> dict:
    return json.loads(RECORDED.read_text())


def _by_key(points) -> dict:
    return {(p.series, p.variant): p for p in points}


def test_the_recorded_schema_1_results_json_gives_its_series(doc):
    # the whole model no longer reads a schema-1 document (its summary items were label and
    # text); the sections the history reads are read typed all the same
    with pytest.raises(RecordError, match=r"summary\[0\]"):
        Results.from_json(doc, str(RECORDED))
    points, changes = extract(doc, str(RECORDED))
    pts, chs = _by_key(points), {c.series: c for c in changes}
    assert (len(points), len(changes)) == (104, 52)
    assert {p.variant for p in points} == {"base", "cand"}      # roles, not "prefetch"
    assert {p.series.split(":")[0] for p in points} == {
        "throughput", "p50 latency", "p99 latency", "cpu_per_op", "cum_per_op", "flat_share", "cum_share"}
    tput = next(k for k in pts if k[0].startswith(TPUT) and k[1] == "cand")
    assert (pts[tput].value, pts[tput].low, pts[tput].high, pts[tput].n) == (35616.95, 33724.32, 37719.59, 3)
    assert (pts[tput].unit, pts[tput].higher_is_better, pts[tput].values) == ("ops/s", True, [35616.95, 37719.59, 33724.32])
    assert pts[(tput[0], "base")].value == 26104.23
    p99 = next(p for k, p in pts.items() if k[0].startswith("p99 latency:") and k[1] == "cand")
    assert (p99.value, p99.unit, p99.higher_is_better) == (2.055, "ms", False)
    whole = pts[("cpu_per_op:all", "base")]
    assert (whole.value, whole.low, whole.high, whole.unit) == (35058.3299072, 34664.392313, 35415.0689062, "ns/op")
    assert pts[("cpu_per_op:all", "cand")].value == 24047.9056
    # a focus function: flat and cumulative, per operation and as a share
    assert pts[("flat_share:msetGenericCommand", "base")].value == 0.241080038573
    assert pts[("flat_share:msetGenericCommand", "cand")].value == 0.421545667447
    assert pts[("cum_share:msetGenericCommand", "base")].value == 74.831243973
    assert pts[("cum_per_op:msetGenericCommand", "cand")].value == 14200.5108197
    assert pts[("cpu_per_op:msetGenericCommand", "base")].values == [83.5689303593, 100.597790265, 83.8424926757]
    # a top mover: flat only
    assert pts[("cpu_per_op:dictSdsKeyLen", "cand")].value == 3149.44241541
    assert ("flat_share:dictSdsKeyLen", "base") in pts and ("cum_share:dictSdsKeyLen", "base") not in pts
    # the in-run changes, as the run judged them
    assert (chs["cpu_per_op:all"].rel, chs["cpu_per_op:all"].verdict) == (-0.314060148797, "improvement")
    assert (chs[tput[0]].rel, chs[tput[0]].rel_low, chs[tput[0]].rel_high) == (0.364412970618, 0.236275371986, 0.552076043347)
    assert (chs["cpu_per_op:dictSdsKeyLen"].rel, chs["cpu_per_op:dictSdsKeyLen"].verdict) == (0.332224354384, "regression")
    # schema 1 had no judgement of a mover, so no new:/gone: change
    assert not [c for c in changes if c.series.startswith(("new:", "gone:"))]


def test_the_sections_are_typed_as_the_results_model_declares_them():
    own = hints(Sections)
    assert own == {f.name: hints(Results)[f.name] for f in dataclasses.fields(Sections)}


def test_fields_an_older_document_lacks_leave_their_series_out(doc):
    """Before per-operation costs a results.json had shares only: no cpu_per_op, no
    cum_per_op series; a key a newer writer adds changes nothing."""
    old = copy.deepcopy(doc)
    del old["profile"]["per_op_total"]
    for f in old["profile"]["focus"] + old["profile"]["movers"]:
        for k in ("base_flat_ns", "cand_flat_ns", "flat_ns_change", "base_cum_ns", "cand_cum_ns", "cum_ns_change"):
            f.pop(k, None)
        f["a_later_field"] = {"n": 1}
    old["profile"]["a_later_section"] = [1, 2]
    points, _ = extract(old, "older")
    pts = _by_key(points)
    assert not [p for p in points if p.series.startswith(("cpu_per_op:", "cum_per_op:"))]
    assert pts[("flat_share:msetGenericCommand", "cand")].value == 0.421545667447
    assert pts[("cum_share:msetGenericCommand", "base")].value == 74.831243973
    assert points == [p for p in extract(doc, "recorded")[0]
                      if not p.series.startswith(("cpu_per_op:", "cum_per_op:"))]


def test_a_document_that_does_not_fit_the_model_is_refused_with_where(doc, tmp_path):
    del doc["profile"]["focus"][0]["base_cum"]          # the model requires it
    with pytest.raises(RecordError, match=r"^x/results\.json\.profile\.focus\[0\]: .*base_cum"):
        extract(doc, "x/results.json")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    st = HistoryStore.open(tmp_path / "h.sqlite")
    with pytest.raises(RecordError, match=f"^{re.escape(str(path))}\\.profile\\.focus"):
        ingest_path(st, path, job="demo")
    assert st.runs("demo") == []                          # the run is not stored in part


def test_a_tma_funnel_row_is_a_series(doc):
    side = FunnelSide(n=2, values=[31.0, 33.0], median=32.0, min=31.0, max=33.0)
    row = FunnelRowDoc("Backend_Bound.Memory_Bound", "Memory_Bound", 2, "slots", "%", side,
                       FunnelSide(n=2, values=[40.0, 44.0], median=42.0, min=40.0, max=44.0),
                       10.0, [6.0, 14.0], 0.95, "regression", "", True, True, "up", None, False)
    doc["tma"] = dataclasses.asdict(TmaSection("replay", funnel=FunnelDoc("stallscope.tma-funnel/1", "a", "b", None,
                                                                          rows=[row])))
    points, changes = extract(doc, "tma")
    pts = _by_key(points)
    node = "tma:Backend_Bound.Memory_Bound"
    assert (pts[(node, "base")].value, pts[(node, "cand")].value, pts[(node, "cand")].values) == (32.0, 42.0, [40.0, 44.0])
    assert (pts[(node, "cand")].low, pts[(node, "cand")].high, pts[(node, "cand")].unit) == (40.0, 44.0, "%")
    assert [(c.rel, c.verdict) for c in changes if c.series == node] == [(None, "regression")]


def test_a_runs_identity_is_read_typed_and_a_bad_one_names_its_file_and_field():
    from analysis.history.extract import Identity
    from analysis.inputs.records import RecordError
    who = Identity.of({"run_id": "r1", "created": "2026-11-27T00:00:00Z",
                       "case": {"name": "mset-50keys", "size": "small", "overrides": ["dataset.keys=1M"]},
                       "base": "base", "cand": "cand",
                       "environment": {"variants": {"cand": {"spec": "git:x@abc", "commit": "abc"},
                                                    "base": {"spec": "debsrc:redis@8.0"}}}})
    assert who.commits() == {"cand": "abc"} and who.case.overrides == ["dataset.keys=1M"]
    with pytest.raises(RecordError, match=r"f\.json\.case\.size: expected a string"):
        Identity.of({"run_id": "r1", "case": {"name": "m", "size": ["small"]}}, "f.json")
