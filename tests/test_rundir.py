"""analysis/rundir.py: the run-directory contract (manifest round trip, migration, errors)."""
from __future__ import annotations

import json

import pytest

from analysis.rundir import (SCHEMA, Manifest, Rep, RunDirError, load_run, save_manifest)


def _manifest(**kw) -> Manifest:
    m = Manifest(run_id="20261121-234500-mset-50keys", created="2026-11-21T23:45:00Z",
                 command=["python", "-m", "collectors", "run", "mset-50keys"], case={"name": "mset-50keys"},
                 size="small", variants={"base": {"name": "base"}, "cand": {"name": "cand"}},
                 schedule=[Rep("base", 1, "warmup", "ok"), Rep("base", 2, "throughput", "ok"),
                           Rep("cand", 1, "throughput", "ok"), Rep("cand", 2, "throughput", "failed",
                                                                   reason="ServerError: boom"),
                           Rep("base", 3, "profile", "ok"), Rep("cand", 3, "profile", "pending")], **kw)
    return m


def test_round_trip_keeps_every_field(tmp_path):
    m = _manifest(status={"state": "complete"}, calibration={"base": {"requests": 1234}},
                  resumes=[{"at": "x", "reps": 2}])
    save_manifest(tmp_path, m)
    back = load_run(tmp_path).manifest
    assert back == m
    assert back.schedule[3].reason == "ServerError: boom"
    assert back.calibration["base"]["requests"] == 1234
    assert not list(tmp_path.glob(".manifest.*"))  # no temp file left behind


def test_measured_reps_exclude_warmup_failed_and_pending(tmp_path):
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


def test_older_manifest_without_new_fields_still_loads(tmp_path):
    d = _manifest().to_json()
    for k in ("status", "options", "warmup", "calibration", "dataset", "resumes"):
        d.pop(k)
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    m = load_run(tmp_path).manifest
    assert m.status == {} and m.calibration == {} and m.resumes == []
    assert len(m.schedule) == 6


def test_unknown_fields_from_newer_writers_are_ignored(tmp_path):
    d = _manifest().to_json()
    d["some_future_block"] = {"x": 1}
    (tmp_path / "manifest.json").write_text(json.dumps(d))
    assert load_run(tmp_path).manifest.run_id == "20261121-234500-mset-50keys"


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
