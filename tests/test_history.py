"""The history store (analysis/history): real run directories ingested into SQLite and
into a real local PostgreSQL, idempotently, by two writers at once; a store of the old
schema migrated; change points found where synthetic history shifted (generator:
bench/synthetic_history.py, noise at the CVs measured here), with the function that
moved; marks kept across re-detection; the CLI; the alert Markdown."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
import sqlalchemy as sa

from analysis.history.changepoints import detect, in_run
from commands.history import main as history_main
from analysis.history.schema import SCHEMA_VERSION, create_version, stored_version
from analysis.history.sources import ingest_path
from analysis.history.store import HistoryError, HistoryStore, url_of
from bench.synthetic_history import Shift, make_job
from analysis.history.alert_md import render_alert

RUNS = Path(__file__).parent / "data" / "runs"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    url = request.getfixturevalue("postgres_url")
    eng = sa.create_engine(url_of(url))          # each test starts from an empty database
    with eng.begin() as c:
        c.execute(sa.text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    eng.dispose()
    return url


@pytest.mark.heavy
def test_a_recorded_run_is_stored_once(store_url):
    st = HistoryStore.open(store_url)
    a = ingest_path(st, RUNS / "mset-demo-small-v1", job="demo")
    b = ingest_path(st, RUNS / "mset-demo-small-v1", job="demo")      # again: the same row
    assert a.id == b.id and len(st.runs("demo")) == 1
    pts = {(p["series"], p["variant"]): p for p in st.points(a.id)}
    tput = next(k for k in pts if k[0].startswith("throughput:") and k[1] == "cand")
    results = json.loads((RUNS / "mset-demo-small-v1" / "expected-results.json").read_text())
    row = results["throughput"][0]
    assert pts[tput]["value"] == pytest.approx(row["cand"]["median"])
    assert pts[tput]["values"] == pytest.approx(row["cand"]["values"])
    assert ("cpu_per_op:all", "base") in pts and any(k[0].startswith("cum_share:") for k in pts)
    assert a.verdicts and a.base and a.cand


@pytest.mark.parametrize("version", [1, 2])
def test_an_old_schema_is_migrated_and_keeps_its_runs(store_url, version):
    """A real store of an older version (its own table definitions, a run and its points
    in it) opened by this stallscope: migrated step by step, its rows kept, version 3's
    composite indexes in place of the ones they extend."""
    eng = sa.create_engine(url_of(store_url))
    create_version(eng, version)
    with eng.begin() as c:
        c.execute(sa.text("INSERT INTO runs (run_key, job, run_id, started_at, commits, variants, "
                          "environment, meta, ingested_at) VALUES ('k', 'j', 'r1', '2026-01-01T00:00:00Z', "
                          "'{}', '{}', '{}', '{}', '2026-01-01T00:00:00Z')"))
        c.execute(sa.text("INSERT INTO points (run, series, variant, value, low, high, n, unit, "
                          "higher_is_better) VALUES (1, 'paired:j', 'cand', 2.5, 2.0, 3.0, 5, 'ops/s', true)"))
    eng.dispose()
    st = HistoryStore.open(store_url)
    assert st.migrations == [f"migrated to schema version {v}" for v in range(version + 1, SCHEMA_VERSION + 1)]
    with st.engine.connect() as c:
        assert stored_version(c) == SCHEMA_VERSION
        ix = {i["name"]: i["column_names"] for t in ("runs", "points") for i in sa.inspect(c).get_indexes(t)}
    assert ix["ix_runs_job_started"] == ["job", "started_at", "id"]
    assert ix["ix_points_series_run"] == ["series", "variant", "run"]
    assert "ix_runs_job" not in ix and "ix_points_series" not in ix
    (run,) = st.runs("j")
    ((r, p),) = st.series("j")["paired:j"]
    assert (r.run_id, p["value"], p["low"], p["high"], p["n"], p["values"]) == ("r1", 2.5, 2.0, 3.0, 5, None)
    st.mark_run(run.id, "good")
    assert st.last_good("j").run_id == "r1"


def _write(url: str, job: str, seed: int) -> int:
    st = HistoryStore.open(url)
    for r in make_job(job, 8, [], seed=seed).runs:
        st.ingest_results(r, job=job)
        st.ingest_results(r, job=job)      # and the same run twice: still one row
    return len(st.runs(job))


@pytest.mark.heavy
def test_two_writers_at_once_on_postgresql(postgres_url):
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        counts = pool.starmap(_write, [(postgres_url, "a", 1), (postgres_url, "b", 2)])
    assert counts == [8, 8]
    st = HistoryStore.open(postgres_url)
    assert {j: len(st.runs(j)) for j in ("a", "b")} == {"a": 8, "b": 8}


@pytest.mark.heavy
def test_a_shift_is_found_where_it_was_injected_with_its_cause(store_url):
    st = HistoryStore.open(store_url)
    h = make_job("nightly", 24, [Shift(15, -0.10, "lookupKey")], seed=7)
    for r in h.runs:
        st.ingest_results(r, job="nightly")
    found = {c.series: c for c in detect(st, "nightly")}
    tput = found["paired:nightly"]
    assert tput.direction == "regression" and tput.first_run.run_id == h.runs[15]["run_id"]
    assert tput.commit_range == (h.commits[14], h.commits[15])
    assert -0.15 < tput.shift < -0.05 and tput.shift_low < tput.shift < tput.shift_high < 0
    assert tput.movers and tput.movers[0].series == "cpu_per_op:lookupKey" and tput.movers[0].shift > 0
    # marks survive detecting again
    st.mark(tput.id, "acknowledged", "known: lookup refactor")
    again = {c.series: c for c in detect(st, "nightly")}["paired:nightly"]
    assert again.mark == "acknowledged" and again.note.startswith("known")
    with pytest.raises(HistoryError, match="change mark"):
        st.mark(again.id, "whatever")


def test_no_shift_no_change_point(tmp_path):
    """E-Divisive on a shift-free series (the paired signal's false-alert rate, a rate
    rather than one history's count, is tested in tests/test_changepoints.py)."""
    st = HistoryStore.open(tmp_path / "h.sqlite")
    for r in make_job("flat", 24, [], seed=11).runs:
        st.ingest_results(r, job="flat")
    assert [c.series for c in detect(st, "flat") if "change point" in c.signals] == []


def test_in_run_regression_and_the_alert(tmp_path):
    st = HistoryStore.open(tmp_path / "h.sqlite")
    run = ingest_path(st, RUNS / "mset-demo-small-v1", job="demo",
                    commits={"base": "a" * 40, "cand": "b" * 40}, report_url="https://example.invalid/r")
    found = in_run(st, run)
    text = render_alert(found, run)
    assert text.startswith("### stallscope: automated performance analysis summary")
    assert "aaaaaaaaaaaa" in text and "bbbbbbbbbbbb" in text and "https://example.invalid/r" in text
    if found:                                    # the recorded run's candidate regressed?
        assert "| Regressions" not in text and "#### Regressions" in text
    else:
        assert "No regression" in text


@pytest.mark.heavy
def test_cli(tmp_path, capsys):
    db = str(tmp_path / "h.sqlite")
    assert history_main(["--history", db, "ingest", str(RUNS / "mset-demo-small-v1"), "--job", "demo"]) == 0
    assert "stored run 1: job demo" in capsys.readouterr().out
    assert history_main(["--history", db, "ingest", str(tmp_path)]) == 2
    assert "neither a run directory" in capsys.readouterr().err
    assert history_main(["--history", db, "runs"]) == 0
    assert "demo" in capsys.readouterr().out
    assert history_main(["--history", db, "compare", "1", "1"]) == 0
    out = capsys.readouterr().out
    assert "throughput:" in out and "+0.0%" in out
    assert history_main(["--history", db, "alert", "--job", "demo", "--out", str(tmp_path / "a.md")]) == 0
    assert (tmp_path / "a.md").read_text().startswith("### stallscope")


@pytest.mark.heavy
def test_new_code_is_a_mover_of_the_run_that_brought_it(tmp_path):
    """A top mover the run calls new in the candidate (the demo's prefetch helpers) is kept as
    an in-run change, priced against the baseline's whole CPU time per operation, and named
    among the movers of that run's findings."""
    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.history.changepoints import _in_run_movers
    from analysis.history.extract import one_sided
    from analysis.inputs.rundir import load_run
    res = analyse(load_run(Path(__file__).parent / "data" / "runs" / "mset-demo-paired"),
                  CompareOptions()).to_json()
    new = {c.series: c for c in one_sided(res)}
    assert {"new:dictPrefetchBucket", "new:dictPrefetchBucketEntry"} <= set(new)
    row = next(f for f in res["profile"]["movers"] if f["name"] == "dictPrefetchBucket")
    total = res["profile"]["per_op_total"]["base"]["median"]
    assert new["new:dictPrefetchBucket"].rel == pytest.approx(row["cand_flat_ns"]["median"] / total)
    assert new["new:dictPrefetchBucket"].verdict == "new in candidate"
    st = HistoryStore.open(tmp_path / "h.sqlite")
    run = st.ingest_results(res, job="demo")
    assert "new:dictPrefetchBucket" in {m.series for m in _in_run_movers(st, run)}
