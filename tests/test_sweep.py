"""`stallscope sweep` end to end at CI size: mset-50keys over two axes (dataset.keys × value,
two values each) for Redis 8.0 with and without the MSET prefetch patch, real servers,
real redis-benchmark and perf on 127.0.0.1. The sweep is interrupted (SIGINT) after its
first point and finished with --resume, so the report the tests read is the one a resumed
sweep writes; the HTML is laid out in a real Chromium. Plan, axes and refusal are checked
on the shipped case files without running anything."""
from __future__ import annotations

import dataclasses
import html
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.inputs.host import HostSummary
from analysis.sweep.sweep_options import SweepOptions
from collectors.sweep.axes import parse_axis, points
from collectors.sweep.plan import PlanError, check_fit, make_plan, plan_lines
from collectors.workload.casefile import CaseError
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, CAND_SPEC, base_variant, built, cli_env, descendants, \
    still_alive, wait_for
from tests.test_report_html import CHROMIUM, PROBE, dump_dom

VARIANTS = [f"base={BASE_SPEC}", f"prefetch={CAND_SPEC}"]
HOST = HostSummary(memory_bytes=24 * 2**30, l3_bytes=32 * 2**20)


# ------------------------------------------------------------------ plan (nothing runs)
def test_axes_matrix_and_field_make_the_cartesian_product():
    import yaml
    matrix = yaml.safe_load((REPO / "cases" / "mset-50keys.yaml").read_text())["matrix"]
    keys = parse_axis("dataset.keys=20K,1M", matrix, "mset-50keys")
    value = parse_axis("value=10,1000", matrix, "mset-50keys")
    assert [v.sets for v in keys.values] == [{"dataset.keys": 20000}, {"dataset.keys": 1000000}]
    pts = points("mset-50keys", [keys, value], {"workload.pipeline": 4})
    assert [p.id for p in pts] == ["p01-keys-20K-value-10", "p02-keys-20K-value-1000",
                                   "p03-keys-1M-value-10", "p04-keys-1M-value-1000"]
    assert pts[3].case == "mset-50keys@value=1000"
    assert pts[3].sets == {"workload.pipeline": 4, "dataset.keys": 1000000}
    assert pts[3].x == {"dataset.keys": 1e6, "value": 1000.0}


@pytest.mark.parametrize("text, message", [
    ("value=10,42", "matrix.value of mset-50keys has no value '42' (values: 10, 100, 1000)"),
    ("colour=red", "mset-50keys has no matrix axis 'colour'"),
    ("dataset.keys=lots", "dataset.keys: expected an integer, got 'lots'"),
    ("dataset.keys", "a field axis needs its values"),
    ("value=10,10", "a value is given twice"),
])
def test_bad_axis_is_refused_naming_it(text, message):
    import yaml
    matrix = yaml.safe_load((REPO / "cases" / "mset-50keys.yaml").read_text())["matrix"]
    with pytest.raises(CaseError) as e:
        parse_axis(text, matrix, "mset-50keys")
    assert message in str(e.value) and "--axis" in str(e.value)


def test_plan_prints_points_time_memory_and_refuses_what_does_not_fit():
    plan = make_plan("mset-50keys", "default", VARIANTS, ["keys", "value=10,1000"], {},
                     SweepOptions(), HOST)
    lines = "\n".join(plan_lines(plan))
    assert "4 points over keys (2) × value (2)" in lines
    assert "p04-keys-10M-value-1000" in lines and "10,000,000" in lines
    big = plan.points[3]
    # 10M × 1000 B: about 10 GiB of data; two servers at once would not fit 24 GiB, so that
    # point falls back to interleaved reps while the others are paired.
    assert big.estimate.dataset_bytes > 9 * 2**30 and not big.estimate.paired
    assert plan.points[0].estimate.paired and plan.points[0].estimate.time_s > 60
    assert plan.points[2].estimate.preload_shared_with is None
    check_fit(plan)                        # fits 24 GiB
    small_host = dataclasses.replace(HOST, memory_bytes=8 * 2**30)
    plan = make_plan("mset-50keys", "default", VARIANTS, ["keys", "value=10,1000"], {},
                     SweepOptions(), small_host)
    with pytest.raises(PlanError) as e:
        check_fit(plan)
    msg = str(e.value)
    assert "1 point(s) do not fit this host's memory" in msg and "p04-keys-10M-value-1000" in msg
    assert "--skip-unfit" in msg and "8.0 GiB" in msg
    check_fit(make_plan("mset-50keys", "default", VARIANTS, ["keys", "value=10,1000"], {},
                        SweepOptions(skip_unfit=True), small_host))


def test_points_that_share_a_dataset_share_its_preload():
    plan = make_plan("get-iothreads", "tiny", [
        "pf0=debsrc:valkey+config=prefetch-batch-max-size=0",
        "pf16=debsrc:valkey+config=prefetch-batch-max-size=16"], ["workload.pipeline=1,16"], {},
        SweepOptions(), HOST)
    assert plan.config_only
    a, b = plan.points
    # the same dataset, server config and case name: the runner's snapshot key is the same
    assert b.estimate.preload_shared_with == a.spec.id and a.estimate.preload_shared_with is None
    assert b.estimate.time_s < a.estimate.time_s
    assert "one server process" in a.estimate.method


def test_three_variants_run_interleaved_and_names_stay_distinct():
    three = VARIANTS + [f"hz={BASE_SPEC}+config=hz=50"]
    plan = make_plan("mset-50keys", "tiny", three, ["dataset.keys=20K"], {}, SweepOptions(), HOST)
    (pt,) = plan.points
    # ABBA windows switch between two servers or settings: three run in interleaved reps
    assert not pt.estimate.paired and "3 variants" in pt.estimate.method
    two = make_plan("mset-50keys", "tiny", VARIANTS, ["dataset.keys=20K"], {}, SweepOptions(), HOST)
    assert two.points[0].estimate.paired
    # three variants' reps take longer than two's
    assert pt.estimate.time_s > make_plan("mset-50keys", "tiny", VARIANTS, ["dataset.keys=20K"], {},
                                          SweepOptions(pairing="unpaired"), HOST).points[0].estimate.time_s
    with pytest.raises(PlanError, match="variant name 'base' given twice"):
        make_plan("mset-50keys", "tiny", VARIANTS + [f"base={BASE_SPEC}"], None, {}, SweepOptions(), HOST)


@pytest.mark.heavy
def test_cli_plan_only_and_refusal_exit_codes():
    env = cli_env()
    p = subprocess.run([sys.executable, "-m", "collectors", "sweep", "mset-50keys", "--plan",
                        "--axis", "keys", "--variant", VARIANTS[0], "--variant", VARIANTS[1]],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "plan: mset-50keys, size default: 2 points over keys (2)" in p.stderr
    p = subprocess.run([sys.executable, "-m", "collectors", "sweep", "mset-50keys", "--plan",
                        "--axis", "value=7", "--variant", VARIANTS[0], "--variant", VARIANTS[1]],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no value '7'" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "collectors", "sweep", "mset-50keys", "--plan",
                        "--variant", VARIANTS[0]], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and "give --variant NAME=SPEC at least twice" in p.stderr


# ------------------------------------------------------------------ end to end


def _points(sweep_dir):
    return json.loads((sweep_dir / "sweep.json").read_text())["points"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    base_variant()
    built("prefetch", CAND_SPEC)
    tmp = tmp_path_factory.mktemp("sweep")
    out, rep = tmp / "sweeps", tmp / "report"
    args = [sys.executable, "-m", "collectors", "sweep", "mset-50keys", "--size", "tiny",
            "--axis", "dataset.keys=20K,50K", "--axis", "value=10,100",
            "--reps", "2", "--paired-windows", "4", "--paired-window", "1",
            "--no-progress", "--out", str(out), "--report-out", str(rep),
            "--variant", VARIANTS[0], "--variant", VARIANTS[1]]
    log1 = tmp / "first.log"
    with open(log1, "wb") as f:
        proc = subprocess.Popen(args, cwd=REPO, env=cli_env(), stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    sweep_dir = wait_for(lambda: next(iter(out.glob("*/sweep.json")), None), 300, "sweep.json").parent
    # Interrupt in the second point, once the first is complete and the second has started.
    wait_for(lambda: [p["status"] for p in _points(sweep_dir)][:2] == ["complete", "running"]
             and _points(sweep_dir)[1].get("run_dir"), 600, "the second point to start", poll_s=0.5)
    time.sleep(3)
    kids = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    rc1 = proc.wait(timeout=120)
    first = _points(sweep_dir)
    time.sleep(1)
    left = still_alive(kids)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "collectors", "sweep", "--resume", str(sweep_dir),
                        "--no-progress", "--report-out", str(rep)],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=1500)
    return {"dir": sweep_dir, "report": rep, "rc1": rc1, "log1": log1.read_text(), "first": first,
            "left": left, "rc2": p.returncode, "stderr2": p.stderr, "resume_s": time.monotonic() - t0}


@pytest.mark.slow
def test_interrupted_sweep_keeps_its_work_and_leaves_no_process(sweep):
    assert sweep["rc1"] == 130, sweep["log1"][-3000:]
    assert "stallscope sweep --resume" in sweep["log1"]
    assert [p["status"] for p in sweep["first"]] == ["complete", "interrupted", "pending", "pending"]
    assert sweep["left"] == []


@pytest.mark.slow
def test_resume_finishes_only_what_was_left(sweep):
    assert sweep["rc2"] == 0, sweep["stderr2"][-4000:]
    assert "resuming" in sweep["stderr2"] and "3 of 4 points to run" in sweep["stderr2"]
    m = json.loads((sweep["dir"] / "sweep.json").read_text())
    assert m["status"] == "complete" and len(m["resumes"]) == 1
    assert [p["status"] for p in m["points"]] == ["complete"] * 4
    # the first point's run is the one from before the interruption; the second was resumed
    # in its own run directory, not restarted
    assert m["points"][0]["run_dir"] == sweep["first"][0]["run_dir"]
    assert m["points"][1]["run_dir"] == sweep["first"][1]["run_dir"]
    for p in m["points"]:
        rm = json.loads((sweep["dir"] / p["run_dir"] / "manifest.json").read_text())
        assert rm["status"]["state"] == "complete"
        assert rm["sweep"] == {"sweep_id": m["sweep_id"], "point": p["id"], "index": p["index"],
                               "labels": p["labels"]}
        assert rm["case"]["dataset"]["keys"] == {"20K": 20000, "50K": 50000}[p["labels"]["dataset.keys"]]
        assert rm["case"]["dataset"]["value_size"] == int(p["labels"]["value"])
        assert rm["paired"]["mode"] == "servers"
    # progress across the whole sweep: resumed at the second point, numbered out of all four,
    # each start and each end but the last with the time left
    for i in (2, 3, 4):
        assert f"[{i}/4] point p0{i}" in sweep["stderr2"]
    assert "[1/4]" not in sweep["stderr2"]
    err = sweep["stderr2"]
    assert err.count("; the sweep about ") == 3 and err.count(" left\n") >= 5 and "; last point" in err


def _expected_lookup(point_report: Path) -> str:
    """The lookup column's rule (docs/sweeps.md), read off the point's own results.json:
    Redis 8.0's key lookup dictFindByHash when one of its costs has a verdict of its own
    and a CPU time per operation on both sides, else the generic lookups after it; at CI
    size (20K keys, perf in the two paired reps' windows: a run's default, what the report
    reads even when separate profile reps are asked for too) they may have too few samples
    for one, and the column then shows the focus function the baseline spends most on per
    operation."""
    focus = json.loads((point_report / "results.json").read_text())["profile"]["focus"]
    quiet = ("negligible", "too few samples", "new in candidate", "gone")

    def measure(f):
        for k in ("flat", "cum"):
            if f[f"{k}_verdict"] and f[f"{k}_verdict"]["verdict"] not in quiet:
                return k if f[f"{k}_ns_change"] is not None else None
        return None
    rows = {f["name"]: f for f in focus}
    for name in ("dictFindByHash", "dictFind", "lookupKey"):    # the case's lookups, in that order
        if name in rows and measure(rows[name]):
            return name
    judged = [(f, measure(f)) for f in focus if measure(f)]
    return max(judged, key=lambda t: t[0][f"base_{t[1]}_ns"]["median"])[0]["name"]


@pytest.mark.slow
def test_results_json_has_a_row_per_point_with_change_interval_and_lookup(sweep):
    res = json.loads((sweep["report"] / "results.json").read_text())
    assert res["schema"] == "stallscope.sweep-results/1"
    assert [a["name"] for a in res["axes"]] == ["dataset.keys", "value"]
    assert res["x_axis"] == "dataset.keys" and res["axes"][0]["keyspace"]
    assert len(res["points"]) == 4
    for p in res["points"]:
        m = p["metric"]
        assert m["base"]["n"] == m["cand"]["n"] == 4       # 2 paired reps × 4 ABBA windows: 2 a side
        assert m["base"]["median"] > 100 and m["cand"]["median"] > 100   # ops/s
        c = m["change"]
        assert c["rel_ci_low"] <= c["rel"] <= c["rel_ci_high"]
        # 2 paired reps: the interval over window pairs is shown but decides nothing (2-3x
        # too narrow without the rep-to-rep variation; issue 26 item 6)
        assert c["verdict"] == "insufficient data" and "over window pairs" in c["reason"]
        lk = p["lookup"]
        assert lk["command"] == "MSET" and lk["function"] == _expected_lookup(sweep["report"] / p["report"])
        assert lk["base"]["median"] > 0 and lk["cand"]["median"] > 0      # ns per MSET
        assert (sweep["report"] / p["report"] / "report.html").is_file()
        # the point's own report says what the sweep set over the case file
        keys = {"20K": 20000, "50K": 50000}[p["labels"]["dataset.keys"]]
        md = (sweep["report"] / p["report"] / "report.md").read_text()
        assert f"Set for this run (over the case file): `dataset.keys={keys}`." in md
    # At CI size the keyspace sits in L3 and each side has 4 reps: the prefetch has no DRAM
    # misses to hide, so a point may move either way (CI has seen 2 of 4 points up, and once
    # 20K x 100 B at -8.2% [-13.7, -2.3]%: the prefetch's own cost on cached keys). What must
    # hold at any size is ours: each verdict follows from its interval.
    for p in res["points"]:
        c = p["metric"]["change"]
        if c["verdict"] == "improvement":
            assert c["rel_ci_low"] > 0, p["labels"]
        elif c["verdict"] == "regression":
            assert c["rel_ci_high"] < 0, p["labels"]
        elif c["verdict"] == "unstable":
            assert c["rel_ci_low"] <= 0 <= c["rel_ci_high"], p["labels"]


@pytest.mark.slow
def test_history_keeps_each_point_as_its_own_series(sweep, tmp_path):
    from analysis.history.sources import ingest_path
    from analysis.history.store import HistoryStore
    store = HistoryStore.open(tmp_path / "history.sqlite")
    res = json.loads((sweep["report"] / "results.json").read_text())
    for p in res["points"]:
        ingest_path(store, sweep["report"] / p["report"])
    jobs = store.jobs()
    # the value axis is in the case name (matrix), dataset.keys in the overrides
    assert sorted(jobs) == sorted(f"mset-50keys@value={v} [dataset.keys={k}]"
                                  for k in (20000, 50000) for v in (10, 100))
    assert all(len(store.runs(j)) == 1 for j in jobs)


@pytest.mark.slow
def test_three_variants_each_candidate_against_the_baseline(tmp_path):
    """base, the prefetch build and the base build with another hz: every point runs all
    three (interleaved reps); the report compares prefetch with base, and vs-hz/ compares hz
    with base, each linking the other."""
    base_variant()
    built("prefetch", CAND_SPEC)
    out, rep = tmp_path / "sweeps", tmp_path / "report"
    # 1 s reps (the small size's 3 s set shorter): what is checked is which reps ran and
    # which reports compare and link what, never a measured value beyond "it ran"
    p = subprocess.run([sys.executable, "-m", "collectors", "sweep", "mset-50keys", "--size", "tiny",
                        "--axis", "dataset.keys=20K,50K", "--reps", "2", "--profile", "off",
                        "--set", "workload.duration_s=1",
                        "--no-progress", "--out", str(out), "--report-out", str(rep),
                        *[a for v in VARIANTS + [f"hz={BASE_SPEC}+config=hz=50"] for a in ("--variant", v)]],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "3 variants: pairing takes two" in p.stderr
    first = json.loads((rep / "results.json").read_text())
    other = json.loads((rep / "vs-hz" / "results.json").read_text())
    assert (first["base"], first["cand"], first["others"]) == ("base", "prefetch", {"hz": "vs-hz"})
    assert (other["base"], other["cand"], other["others"]) == ("base", "hz", {"prefetch": ".."})
    for res, where in ((first, rep), (other, rep / "vs-hz")):
        assert len(res["points"]) == 2
        for pt in res["points"]:
            m = pt["metric"]
            assert m["base"]["n"] == m["cand"]["n"] == 2 and m["base"]["median"] > 100
            assert pt["method"] == "interleaved reps, a server start each"
            # the point's own report compares the same two variants
            md = (where / pt["report"] / "report.md").read_text()
            assert f": {res['cand']} vs base" in md.splitlines()[0]
    # one run per point, the same reps read by both reports
    assert [pt["run_dir"] for pt in first["points"]] == [pt["run_dir"] for pt in other["points"]]
    assert [pt["metric"]["base"]["values"] for pt in first["points"]] == \
        [pt["metric"]["base"]["values"] for pt in other["points"]]
    assert "Other candidates against base: [hz](vs-hz/report.md)." in (rep / "report.md").read_text()
    assert 'href="../report.html">prefetch</a>' in (rep / "vs-hz" / "report.html").read_text()


@pytest.mark.slow
def test_the_memory_mountain_is_each_functions_cost_past_the_smallest_point(sweep):
    """A sweep along dataset.keys: each focus function's flat CPU per MSET at 50K keys minus at
    20K, per value (analysis/sweep/mountain.py), equal to the two points' own reps' means."""
    res = json.loads((sweep["report"] / "results.json").read_text())
    m = res["mountain"]
    assert m["available"] and m["reference_keys"] == 20000 and m["command"] == "MSET"
    groups = {r["group"] for r in m["rows"]}
    assert groups == {"value=10", "value=100"}
    row = next(r for r in m["rows"] if r["function"] == "dictFindByHash" and r["group"] == "value=10")
    (cell,) = row["cells"]
    assert cell["keys"] == 50000 and row["reference_keys"] == 20000
    def flat_ns(point_id, side):
        doc = json.loads((sweep["report"] / point_id / "results.json").read_text())
        f = next(f for f in doc["profile"]["focus"] if f["name"] == "dictFindByHash")
        return f[f"{side}_flat_ns"]["values"]
    for side in ("base", "cand"):
        want = (sum(flat_ns(cell["point"], side)) / 2) - (sum(flat_ns(row["reference"], side)) / 2)
        assert cell[side]["value"] == pytest.approx(want)
    md = (sweep["report"] / "report.md").read_text()
    assert "**Memory mountain:**" in md and "| dictFindByHash (value=10; vs 20K keys) |" in md


@pytest.mark.slow
def test_report_md_is_the_seed_shaped_table(sweep):
    md = (sweep["report"] / "report.md").read_text()
    res = json.loads((sweep["report"] / "results.json").read_text())
    found = {(p["lookup"]["function"], p["lookup"]["measure"]) for p in res["points"]}
    # one function at every point names the column; points that differ name it in each cell
    col = (f"{next(iter(found))[0]}, CPU per MSET ({next(iter(found))[1]})" if len(found) == 1
           else "lookup, CPU per operation")
    head = ("| dataset.keys | value | Baseline (base) | PR (prefetch) | Change | 95% CI | Verdict "
            f"| {col} | Report |")
    assert head in md
    rows = [l for l in md.splitlines() if l.startswith("| 20K |") or l.startswith("| 50K |")]
    assert len(rows) == 4
    assert all("ops/s" in r and "µs" in r and "/report.md)" in r for r in rows)
    assert "**Along dataset.keys:**" in md


@pytest.mark.slow
def test_report_html_table_and_crossover_plot_in_chromium(sweep):
    if CHROMIUM is None:
        pytest.fail("chromium not found: install it with `apt-get install -y chromium` (or `make setup`)")
    page = (sweep["report"] / "report.html").read_text()
    probe = sweep["report"] / "probe.html"
    probe.write_text(page.replace("<head>", "<head>\n" + PROBE, 1))
    dom, _ = dump_dom(probe)
    data = json.loads(html.unescape(dom.split('<pre id="probe">', 1)[1].split("</pre>", 1)[0]))
    assert data["errors"] == [] and data["scripts"] == 1
    (w, h), (mw, mh) = data["plots"]        # the crossover plot and the memory mountain, at a real size
    assert w > 400 and h > 200 and mw > 400 and mh > 200
    assert 'id="mountain-1"' in dom and 'id="mountain-head-1"' in dom
    plot = dom.split('id="crossover-1"', 1)[1].split("</div>", 1)[0]
    # one series per value, the L3 line on the keyspace axis, the noise band
    l3 = json.loads((sweep["report"] / "results.json").read_text())["l3_bytes"]   # this host's
    assert l3 and "value=10" in plot and "value=100" in plot and f"L3 {l3 / 2**20:.0f} MiB" in plot
    assert "noise waterline" in plot
    table = dom.split('id="sweep-1"', 1)[1].split("</table>", 1)[0]
    assert table.count('class="point"') == 4
    for p in json.loads((sweep["report"] / "results.json").read_text())["points"]:
        assert f'href="{p["id"]}/report.html"' in table
    assert (sweep["report"] / "crossover.svg").read_text().count("<svg") == 1


@pytest.mark.slow
def test_report_only_rerenders_from_the_sweep_directory(sweep, tmp_path):
    p = subprocess.run([sys.executable, "-m", "collectors", "sweep", "--report", str(sweep["dir"]),
                        "--report-out", str(tmp_path)], cwd=REPO, env=cli_env(),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    a = json.loads((tmp_path / "results.json").read_text())
    b = json.loads((sweep["report"] / "results.json").read_text())
    assert a["points"] == b["points"]
