"""The memory-stall section on a recorded demo run with its in-cache control
(tests/data/runs/mset-demo-stalls-xeon480: `make demo` from a fresh clone, SOURCES in
tests/data/runs/README.md): every figure of the section is checked against the run's own
per-rep costs and the control's, the lead carries the stall table where TMA is absent, the
PR comment stays within 4 KB, and report.html shows the same table."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.results import Results, load_results
from analysis.inputs.rundir import load_run
from commands import compare as cli
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "runs" / "mset-demo-stalls-xeon480"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("stalls") / "report"
    assert cli.main([str(RUN), "--out", str(out)]) == 0
    return out, load_results(out / "results.json")


def _focus(r: Results, name: str):
    return next(f for f in r.profile.focus if f.name == name)


def test_the_out_of_cache_cost_is_the_run_minus_its_control(report):
    """dictFindByHash's row, by hand from the two runs' own focus rows (ns per MSET a rep)."""
    _, r = report
    ctl = analyse(load_run(RUN / "incache"), CompareOptions())
    row = next(x for x in r.stalls.rows if x.function == "dictFindByHash" and x.kind == "flat")
    big, small = _focus(r, "dictFindByHash"), _focus(ctl, "dictFindByHash")
    for side, v in ((row.base, "base"), (row.cand, "cand")):
        large = getattr(big, f"{v}_flat_ns").values
        little = getattr(small, f"{v}_flat_ns").values
        assert side.large == pytest.approx(np.mean(large)) and side.small == pytest.approx(np.mean(little))
        assert side.out_of_cache.value == pytest.approx(np.mean(large) - np.mean(little))
        assert (side.large_n, side.small_n) == (len(large), len(little))
    pairs = (np.mean(np.subtract(big.base_flat_ns.values, big.cand_flat_ns.values))
             - np.mean(np.subtract(small.base_flat_ns.values, small.cand_flat_ns.values)))
    assert row.removed.value == pytest.approx(pairs)


def test_the_prefetch_removes_most_of_the_lookups_stall(report):
    """The demo's claim, decided: the lookup's out-of-cache cost in base, most of it removed,
    what is left in the candidate smaller; the control's own throughput is on the caption."""
    _, r = report
    s = r.stalls
    assert s.available and s.control_dir == "incache" and s.control_keys < s.keys
    assert s.latency is not None and s.latency.dram_ns > s.latency.llc_ns > 0
    row = next(x for x in s.rows if x.function == "dictFindByHash" and x.kind == "flat")
    assert row.base.out_of_cache.low > 0 and row.removed.low > 0
    assert row.cand.out_of_cache.value < row.base.out_of_cache.value
    assert row.share_removed is not None and 0.5 < row.share_removed.value <= 1.2
    assert row.share_removed.low < row.share_removed.value < row.share_removed.high
    assert row.base_trips == pytest.approx(row.base.out_of_cache.value / s.latency.miss_ns())
    assert 0.95 < s.level < 1 and s.family_level == 0.95
    assert s.control_change is not None and s.control_reps >= 3


def test_results_json_reads_back(report):
    out, r = report
    doc = json.loads((out / "results.json").read_text())
    assert Results.from_json(doc).stalls == r.stalls
    assert doc["stalls"]["rows"][0]["kind"] == "total"


def test_the_lead_and_the_pr_comment_carry_the_stall_table(report, capsys):
    from commands import pr as pr_cli
    from tests.test_report_md import lead_of, table_rows
    out, r = report
    md = (out / "report.md").read_text()
    lead = lead_of(md)
    rows = {x[0]: x for x in table_rows(lead, "| Out-of-cache CPU per MSET |")}
    assert "all samples" in rows and "dictFindByHash (flat)" in rows
    assert rows["dictFindByHash (flat)"][-1].endswith("improvement")
    assert "TMA: not collected" not in lead and "Out-of-cache cost = CPU per MSET" in lead
    assert "### Memory stalls" in md and "| Stall left in prefetch |" in md
    assert pr_cli.main(["comment", str(out), "--dry-run"]) == 0
    body = capsys.readouterr().out
    assert len(body.encode()) <= 4096 and "| Out-of-cache CPU per MSET |" in body


@pytest.mark.heavy
def test_report_html_shows_the_same_stall_tables(report, tmp_path):
    from tests.test_report_html import CHROMIUM, _dom_rows, dump_dom
    from tests.test_report_md import table_rows
    if CHROMIUM is None:
        pytest.fail("chromium not found: `make setup` installs it")
    out, _ = report
    page = tmp_path / "report.html"
    shutil.copy(out / "report.html", page)
    dom, _ = dump_dom(page)
    md = (out / "report.md").read_text()
    full = [[c.replace("\\", "") for c in row[1:-1]]
            for row in table_rows(md.split("### Memory stalls", 1)[1], "| Out-of-cache CPU per MSET |")]
    got = [row[1:-1] for row in _dom_rows(dom, "stalls")]
    assert got == full and len(got) > 2
    assert 'id="stalls-plot"' in dom and len(_dom_rows(dom, "lead-stalls")) >= 2


def test_the_history_keeps_a_stall_series_per_function(report):
    """A scheduled job's history: each function's out-of-cache cost a series of its own
    (analysis/history/extract.py), and the share removed as the run's in-run change."""
    from analysis.history.extract import extract
    out, r = report
    points, changes = extract(json.loads((out / "results.json").read_text()))
    stall = {(p.series, p.variant): p for p in points if p.series.startswith("stall:")}
    row = next(x for x in r.stalls.rows if x.function == "dictFindByHash" and x.kind == "flat")
    p = stall[("stall:dictFindByHash", "base")]
    assert (p.value, p.low, p.high, p.unit) == (row.base.out_of_cache.value, row.base.out_of_cache.low,
                                                row.base.out_of_cache.high, "ns/op")
    assert ("stall:all", "cand") in stall
    ch = next(c for c in changes if c.series == "stall:dictFindByHash")
    assert ch.rel == pytest.approx(-row.share_removed.value) and ch.verdict == "improvement"


@pytest.mark.parametrize("name", ["mset-demo-looks-xeon480", "mset-demo-plan-xeon480"])
def test_a_demo_stopped_at_a_look_keeps_its_comment_within_4_kb(tmp_path, capsys, name):
    """tests/data/runs/mset-demo-looks-xeon480 and mset-demo-plan-xeon480 (perf in 3/4 of the
    blocks): `make demo` that stopped at its first look (4 reps, read at 99.86%, the headline
    saying why): its PR comment carries the stall table and the look's level in at most 4 KB."""
    from commands import pr as pr_cli
    run = REPO / "tests" / "data" / "runs" / name
    assert json.loads((run / "manifest.json").read_text())["precision"]["ended_by"] == "answered"
    out = tmp_path / "report"
    assert cli.main([str(run), "--out", str(out)]) == 0
    r = load_results(out / "results.json")
    assert r.stalls.available and r.measurement.look == 1
    capsys.readouterr()
    assert pr_cli.main(["comment", str(out), "--dry-run"]) == 0
    body = capsys.readouterr().out
    assert len(body.encode()) <= 4096, len(body.encode())
    assert "| Out-of-cache CPU per MSET |" in body and "99.86% CI (look 1 of 4" in body
