"""analysis/inputs: the run-directory contract (manifest and rep.json round trips,
schema migration, unknown fields kept, errors that name the file)."""
from __future__ import annotations

import json
import shutil

import pytest

from analysis.inputs.manifest import (SCHEMA, Calibration, Manifest, PrecisionPlan, Rep, Resume,
                                      RunStatus, Variant)
from analysis.inputs.run_options import RunOptions
from analysis.inputs.collector_facts import CollectorFacts, PerfFacts
from analysis.inputs.repfacts import BenchSummary, PairedFacts, RdbLoadResult, RepFacts, Window
from analysis.inputs.rundir import (RunDirError, load_run, read_rep_facts, save_manifest,
                                    write_rep_facts)
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "runs"


def _manifest(**kw) -> Manifest:
    m = Manifest(run_id="20261121-234500-mset-50keys", created="2026-11-21T23:45:00Z",
                 command=["stallscope", "run", "mset-50keys"], case={"name": "mset-50keys"},
                 size="small", variants={"base": Variant("base", "debsrc:redis", "debsrc"),
                                         "cand": Variant("cand", "debsrc:redis", "debsrc")},
                 schedule=[Rep("base", 1, "warmup", "ok"), Rep("base", 2, "throughput", "ok"),
                           Rep("cand", 1, "throughput", "ok"), Rep("cand", 2, "throughput", "failed",
                                                                   reason="ServerError: boom"),
                           Rep("base", 3, "profile", "ok"), Rep("cand", 3, "profile", "pending")], **kw)
    return m


def test_round_trip_keeps_every_field(tmp_path):
    m = _manifest(status=RunStatus("complete"), calibration={"base": Calibration(requests=1234)},
                  resumes=[Resume("x", ["stallscope", "run", "--resume", "r"], 2)])
    save_manifest(tmp_path, m)
    back = load_run(tmp_path).manifest
    assert back == m
    assert back.schedule[3].reason == "ServerError: boom"
    assert back.calibration["base"].requests == 1234
    assert not list(tmp_path.glob(".manifest.*"))  # no temp file left behind


def test_measured_reps_exclude_warmup_failed_and_pending():
    m = _manifest()
    assert [r.dir for r in m.reps()] == ["base/2", "cand/1", "base/3"]
    assert [r.dir for r in m.reps("base", "throughput")] == ["base/2"]
    assert [r.dir for r in m.reps("cand", measured_only=False)] == ["cand/1", "cand/2", "cand/3"]
    assert m.find_rep("cand", 2).status == "failed"
    with pytest.raises(KeyError, match="no rep cand/9"):
        m.find_rep("cand", 9)


def test_rep_dir_defaults_and_rejects_unknown_kind_and_status():
    assert Rep("paired", 4, "paired").dir == "paired/4"
    with pytest.raises(ValueError, match="rep kind 'bogus'"):
        Rep("base", 1, "bogus")
    with pytest.raises(ValueError, match="rep status 'done'"):
        Rep("base", 1, "throughput", "done")


def test_older_manifest_without_optional_sections_still_loads(tmp_path):
    d = _manifest().to_json()
    d["schema"] = 1
    for k in ("status", "options", "warmup", "calibration", "dataset", "resumes", "tma",
              "placement"):
        d.pop(k)
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    m = load_run(tmp_path).manifest
    assert m.schema == SCHEMA
    assert m.status == RunStatus() and m.calibration == {} and m.resumes == []
    assert m.placement.server_cpus is None and m.tma.backend == "off"
    assert len(m.schedule) == 6


def test_unknown_fields_from_newer_writers_are_kept_on_every_level(tmp_path):
    d = _manifest().to_json()
    d["some_future_block"] = {"x": 1}
    d["variants"]["base"]["pgo"] = True
    d["profiling"]["sampling_cpu"] = 1
    d["schedule"][0]["attempt"] = 2
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    m = load_run(tmp_path).manifest
    assert m.run_id == "20261121-234500-mset-50keys"
    save_manifest(tmp_path, m)          # what a resume does: read, change status, write
    again = json.loads((tmp_path / "manifest.json").read_text())
    assert again["some_future_block"] == {"x": 1}
    assert again["variants"]["base"]["pgo"] is True
    assert again["profiling"]["sampling_cpu"] == 1
    assert again["schedule"][0]["attempt"] == 2


def test_errors_name_the_file_and_line(tmp_path):
    with pytest.raises(RunDirError, match="no manifest.json here"):
        load_run(tmp_path)
    mf = tmp_path / "manifest.json"
    mf.write_text('{\n  "schema": 1,\n  "run_id": "x",\n  oops\n}\n')
    with pytest.raises(RunDirError, match=r"manifest.json:4: malformed JSON"):
        load_run(tmp_path)
    mf.write_text(json.dumps({"run_id": "x"}))
    with pytest.raises(RunDirError, match="not a stallscope manifest"):
        load_run(tmp_path)
    mf.write_text(json.dumps({"schema": SCHEMA + 1}))
    with pytest.raises(RunDirError, match=f"schema {SCHEMA + 1} is newer"):
        load_run(tmp_path)
    d = _manifest().to_json()
    d["schedule"][0]["kind"] = "bogus"
    mf.write_text(json.dumps(d))
    with pytest.raises(RunDirError, match=r"manifest.json: invalid manifest: rep kind 'bogus'"):
        load_run(tmp_path)
    d = _manifest().to_json()
    del d["case"]
    mf.write_text(json.dumps(d))
    with pytest.raises(RunDirError, match="invalid manifest: .*case"):
        load_run(tmp_path)
    d = _manifest().to_json()
    d["variants"]["base"] = "debsrc:redis"
    mf.write_text(json.dumps(d))
    with pytest.raises(RunDirError, match=r"invalid manifest: variants\.base: expected a JSON object"):
        load_run(tmp_path)


def test_rep_facts_round_trip_and_missing_file(tmp_path):
    f = RepFacts(variant="base", rep=1, kind="profile", requests=5000,
                 commands={"bench": ["redis-benchmark", "-n", "5000"]},
                 window=Window(1.0, 3.0, 1.6), bench=BenchSummary(test="MSET", rps=2500.0),
                 collectors={"perf": PerfFacts(event="cpu-clock", frequency_hz=99, window_s=1.6),
                             # a plugin's collector: its own fields kept as they came
                             "custom": CollectorFacts(status="ok", extra={"lines": 3})},
                 rdb_load_result=RdbLoadResult(keys=10, load_seconds_s=0.5),
                 paired=PairedFacts(["base", "cand"], ["io-threads"], "INFO stats"))
    write_rep_facts(tmp_path, f)
    back = read_rep_facts(tmp_path)
    assert back == f
    assert back.perf.event == "cpu-clock" and back.perf.weights_are_ns
    assert type(back.collectors["custom"]) is CollectorFacts and back.collectors["custom"].extra == {"lines": 3}
    # each collector's entry keeps exactly its keys: no status/reason/error left as null
    written = json.loads((tmp_path / "rep.json").read_text())["collectors"]
    assert written["custom"] == {"status": "ok", "lines": 3} and "status" not in written["perf"]
    assert read_rep_facts(tmp_path / "nowhere") == RepFacts()
    (tmp_path / "rep.json").write_text("{\n oops")
    with pytest.raises(RunDirError, match=r"rep.json:2: malformed JSON"):
        read_rep_facts(tmp_path)


def test_schema1_rep_json_hand_recorded_is_migrated_to_facts():
    """tests/data/runs/io-threads-mset was written by hand (record.sh): commands are shell
    strings, the request count exists only as -n, perf bracketed the whole load."""
    run = load_run(RUNS / "io-threads-mset")
    rep = run.manifest.find_rep("base", 4)
    facts = run.facts(rep)
    assert facts.schema == 2
    assert facts.commands["bench"][:2] == ["taskset", "-c"]
    assert facts.requests == 40000
    assert facts.window.perf_covers_load
    assert run.manifest.profiling.event == "cpu-clock"


def test_schema1_rep_json_from_the_runner_is_migrated_to_facts():
    run = load_run(RUNS / "mset-demo-small-v1")
    assert run.manifest.schema == SCHEMA and run.manifest.variants["base"].callgraph == "fp"
    facts = run.facts(run.manifest.find_rep("base", 4))
    assert facts.perf.event == "cpu-clock" and facts.perf.frequency_hz == 999
    assert facts.requests == facts.bench.requests == 63616
    assert not facts.window.perf_covers_load and facts.window.profile_window_s == pytest.approx(2.4)


def test_analysis_never_rewrites_an_old_run_directory(tmp_path):
    src = RUNS / "mset-demo-small-v1"
    before = (src / "manifest.json").read_bytes()
    dst = tmp_path / "run"
    shutil.copytree(src, dst)
    run = load_run(dst)
    for rep in run.manifest.reps():
        run.facts(rep)
    assert (dst / "manifest.json").read_bytes() == before
    assert json.loads((dst / "base" / "4" / "rep.json").read_text()).get("schema") is None


def test_schema2_precision_target_is_stored_once_after_migration(tmp_path):
    """Schema 2 wrote the --precision target twice (precision.target and options.precision);
    it loads with the target in options only, so a resume writes it once."""
    run = load_run(RUNS / "valkey-rdb-load-1m-1000b")
    m = run.manifest
    assert m.schema == SCHEMA and m.options.precision == 0.02
    assert "target" not in m.precision.to_json() and "target" not in m.precision.extra
    # a schema-2 manifest whose options did not hold the precision: the target moves there
    d = json.loads((RUNS / "valkey-rdb-load-1m-1000b" / "manifest.json").read_text())
    d["options"].pop("precision")
    m2 = Manifest.load(d, "old/manifest.json")
    assert m2.options.precision == 0.02 and "target" not in m2.to_json()["precision"]
    assert m2.to_json()["options"]["precision"] == 0.02


ASKED = {"target", "budget_s", "pilot", "on"}    # what schema 2 and 3 wrote in the plan too


def test_older_precision_plans_keep_what_was_asked_in_options_only():
    """Schemas 2 and 3 wrote the budget, the first stage and --on twice (precision.budget_s,
    .pilot, .on and options.budget_s, .reps, .precision_on); the recorded --precision run
    loads with them in options only, read through Manifest.pilot and options."""
    m = load_run(RUNS / "valkey-rdb-load-1m-1000b").manifest
    assert m.schema == SCHEMA == 4
    assert not ASKED & set(m.precision.to_json()) and not ASKED & set(m.precision.extra)
    assert (m.pilot, m.options.reps, m.options.budget_s, m.options.precision_function) == (5, 5, 480.0, None)
    assert (m.precision.pilot_sd, m.precision.planned, m.precision.ended_by) == (0.01329, 5, "precision")


def test_an_older_plan_fills_options_that_lack_them_and_never_overrides_them():
    d = json.loads((RUNS / "valkey-rdb-load-1m-1000b" / "manifest.json").read_text())
    # a schema-3 manifest (the target already in options) whose options lack what the plan has
    d["schema"] = 3
    d["precision"].pop("target")
    d["precision"]["on"] = "dictFind:flat"
    for k in ("reps", "budget_s", "precision_on"):
        d["options"].pop(k, None)
    m = Manifest.load(d, "old/manifest.json")
    assert (m.pilot, m.options.budget_s, m.options.precision_on) == (5, 480.0, "dictFind:flat")
    assert m.options.precision_function == ("dictFind", "flat")
    assert not ASKED & set(m.to_json()["precision"])
    # options given win: the plan's copies are dropped, not moved
    d["options"].update(reps=7, budget_s=60.0, precision_on="dictFind")
    m = Manifest.load(d, "old/manifest.json")
    assert (m.pilot, m.options.budget_s, m.options.precision_function) == (7, 60.0, ("dictFind", "cum"))
    assert not ASKED & set(m.precision.extra)


def test_a_precision_plan_round_trips_its_own_state_only(tmp_path):
    plan = PrecisionPlan(pilot_sd=0.03, planned=12, ended_by="budget", note="n", spent_s=9.5)
    m = _manifest(precision=plan, options=RunOptions(reps=8, precision=0.02, budget_s=600.0))
    save_manifest(tmp_path, m)
    d = json.loads((tmp_path / "manifest.json").read_text())
    looks = {"looks", "alphas", "made", "look", "alpha", "level", "open", "control_s", "replan"}   # a run that decides'
    assert set(d["precision"]) == {"pilot_sd", "planned", "ended_by", "note", "spent_s"} | looks
    back = load_run(tmp_path).manifest
    assert back == m and back.pilot == 8 and back.options.precision_function is None
    # a run that decides keeps its looks: resumed, it goes on from the next one
    plan.looks, plan.alphas, plan.made, plan.open = [4, 6, 10, 13], [0.0014, 0.0035, 0.017, 0.0281], 2, ["x"]
    save_manifest(tmp_path, m)
    assert load_run(tmp_path).manifest.precision == plan
    assert _manifest().pilot is None        # no --precision: no first stage
