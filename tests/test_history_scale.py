"""The history store at scale (docs/history.md, "At scale"), for correctness: batched
ingest idempotent on SQLite and a real PostgreSQL, also with two writers storing the
same runs at once; the series query against the query it replaced; the downsampling rule
of the trend plots; the trend page's link to the full data; `stallscope history series`.
The speed itself is `make bench` figure 5b (bench/history.py), not a timed test here."""
from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing
import re

import pytest
import sqlalchemy as sa

from analysis.history.changepoints import HEADLINE, detect
from commands.history import main as history_main
from analysis.history.downsample import downsample
from analysis.history.extract import extract
from analysis.history.store import HistoryStore, Incoming
from bench.synthetic_history import Shift, make_job
from analysis.history.trends import write_trend_pages
from tests.test_history import store_url  # noqa: F401  (the fixture: both stores)


def _count(st: HistoryStore, table: str) -> int:
    with st.engine.connect() as c:
        return c.execute(sa.select(sa.func.count()).select_from(st.t[table])).scalar_one()


def test_batched_ingest_is_idempotent(store_url):  # noqa: F811
    runs = make_job("batch", 7, [], seed=3).runs
    st = HistoryStore.open(store_url)
    first = st.ingest_batch([Incoming(r, "batch") for r in runs[:5]])
    assert len({r.id for r in first}) == 5 and [r.run_id for r in first] == [r["run_id"] for r in runs[:5]]
    points, changes = _count(st, "points"), _count(st, "changes")
    # the same five again, one of them twice in the batch, and one new run
    again = st.ingest_batch([Incoming(r, "batch") for r in runs[:5] + runs[2:3] + runs[5:6]])
    assert [r.id for r in again[:5]] == [r.id for r in first] and again[5].id == first[2].id
    assert len(st.runs("batch")) == 6
    new_points, new_changes = extract(runs[5])
    assert _count(st, "points") == points + len(new_points)
    assert _count(st, "changes") == changes + len(new_changes)
    # one run at a time is the same path: still the stored row
    assert st.ingest_results(runs[0], job="batch").id == first[0].id and len(st.runs("batch")) == 6
    # what a batch stores is what extract() reads from the run
    stored = {(p["series"], p["variant"]): p for p in st.points(again[6].id)}
    assert len(stored) == len(new_points)
    for p in new_points:
        s = stored[(p.series, p.variant)]
        assert (s["value"], s["low"], s["high"], s["n"], s["values"]) == (p.value, p.low, p.high, p.n, p.values)
    assert again[6].verdicts == {c.series: c.verdict for c in new_changes}


def _write_shared(url: str, reverse: bool) -> int:
    st = HistoryStore.open(url)
    runs = make_job("shared", 12, [], seed=9).runs
    for _ in range(3):
        st.ingest_batch([Incoming(r, "shared") for r in (runs[::-1] if reverse else runs)])
    return len(st.runs("shared"))


@pytest.mark.heavy
def test_two_writers_store_the_same_batch_at_once_on_postgresql(postgres_url):
    """Both writers insert the same twelve runs at the same time, in opposite orders: each
    run is stored once with its points once, and neither writer fails (no deadlock)."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        counts = pool.starmap(_write_shared, [(postgres_url, False), (postgres_url, True)])
    assert counts == [12, 12]
    st = HistoryStore.open(postgres_url)
    runs = st.runs("shared")
    assert len({r.run_id for r in runs}) == 12
    per_run = len(extract(make_job("shared", 1, [], seed=9).runs[0])[0])
    assert all(len(st.points(r.id)) == per_run for r in runs)


def _old_series(st: HistoryStore, job: str, variant: str) -> dict:
    """The series query before schema version 3, as it was (every column, every series)."""
    runs, p = st.t["runs"], st.t["points"]
    by_id = {r.id: r for r in st.runs(job)}
    out: dict = {}
    q = sa.select(p).join(runs, runs.c.id == p.c.run).where(runs.c.job == job, p.c.variant == variant)
    with st.engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(q)]
    order = {rid: i for i, rid in enumerate(by_id)}
    for row in sorted(rows, key=lambda r: order[r["run"]]):
        out.setdefault(row["series"], []).append((by_id[row["run"]], row))
    return out


def test_the_series_query_returns_the_rows_it_returned_before(store_url):  # noqa: F811
    st = HistoryStore.open(store_url)
    a, b = make_job("a", 6, [], seed=1).runs, make_job("b", 6, [], seed=2).runs
    # stored out of time order and interleaved with another job sharing series names
    st.ingest_batch([Incoming(r, "a") for r in a[3:]] + [Incoming(r, "b") for r in b])
    st.ingest_batch([Incoming(r, "a") for r in a[:3]])
    for variant in ("cand", "base"):
        old = _old_series(st, "a", variant)
        new = st.series("a", variant)
        assert new == old and list(new) == list(old)
        assert [r.run_id for r, _ in new["paired:a"]] == [r["run_id"] for r in a]
        name = "cpu_per_op:lookupKey"
        assert st.series("a", variant, names=[name]) == {name: old[name]}
        lean = st.series("a", variant, reps=False)
        assert lean == {k: [(r, {c: v for c, v in p.items() if c != "values"}) for r, p in pts]
                        for k, pts in old.items()}
    both = st.series_by_variant("a")
    assert both == {"cand": _old_series(st, "a", "cand"), "base": _old_series(st, "a", "base")}


def test_downsampling_keeps_change_points_and_the_last_runs_exact():
    values = [math.sin(i / 7) + 0.01 * (i % 13) for i in range(1000)]
    values[437], values[612] = 10.0, -10.0                   # a spike and a dip between buckets
    keep = {100, 101, 500, 501, 873}
    for budget in (60, 100, 240, 999):
        dec = downsample(values, keep, budget=budget, last=30)
        assert len(dec.keep) <= budget and dec.keep == sorted(set(dec.keep))
        assert keep | set(range(970, 1000)) <= set(dec.keep) <= set(range(1000))
        assert {437, 612} <= set(dec.keep)                    # extremes survive every budget
        assert set().union(*(dec.covers[k] for k in dec.keep)) == set(range(1000))   # every run shown
        for k in dec.keep:
            if k not in dec.exact:                            # each bucket: its lowest and highest
                span = [values[i] for i in dec.covers[k]]
                assert values[k] in (min(span), max(span))
                assert {min(dec.covers[k], key=values.__getitem__),
                        max(dec.covers[k], key=values.__getitem__)} <= set(dec.keep)
    assert downsample(values[:200], keep, budget=240).keep == list(range(200))     # short: whole
    assert downsample(values, set(range(0, 1000, 10)), budget=60, last=30).keep == sorted(
        set(range(0, 1000, 10)) | set(range(970, 1000)))      # exact points alone past the budget


@pytest.fixture(scope="module")
def long_history(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("long")
    st = HistoryStore.open(tmp / "h.sqlite")
    h = make_job("long <job>", 90, [Shift(40, -0.10, "lookupKey")], seed=5)
    st.ingest_batch([Incoming(r, "long <job>", report_url=f"../runs/{i}/report.html")
                     for i, r in enumerate(h.runs)])
    found = detect(st, "long <job>", ("paired:",))
    return st, h, found, tmp


@pytest.mark.heavy
def test_the_trend_page_downsamples_and_links_the_full_data(long_history):
    st, h, found, tmp = long_history
    assert any(c.first_run.run_id == h.runs[40]["run_id"] for c in found)
    index = write_trend_pages(st, tmp / "out", budget=40, last=10)
    page = (index.parent / "long_job_.html").read_text()
    fig = re.search(r'<figure class="series" data-series="paired:long &lt;job&gt;">(.*?)</figure>', page, re.S).group(1)
    hrefs = re.findall(r'<a href="\.\./runs/(\d+)/report\.html">', fig)
    assert len(hrefs) <= 40 and len(set(hrefs)) == len(hrefs)
    ids = {r.id: i for i, r in enumerate(st.runs("long <job>"))}
    exact = {ids[c.first_run.id] for c in found} | {ids[c.last_before.id] for c in found if c.last_before}
    assert exact | set(range(80, 90)) <= {int(x) for x in hrefs}
    assert "90 runs, " in fig and " plotted: the last 10 runs" in fig
    data = re.search(r'<a id="full-data" href="([^"]+)">', page).group(1)
    doc = json.loads((index.parent / data).read_text())
    stored = st.series("long <job>")
    assert doc["runs"]["run_id"] == [r["run_id"] for r in h.runs]
    for name, pts in stored.items():
        if not name.startswith(HEADLINE):         # the page plots (and writes) the headline series
            continue
        assert doc["series"][name]["cand"]["value"] == [p["value"] for _, p in pts]
        assert doc["series"][name]["cand"]["run"] == [r.id for r, _ in pts]
    assert f'href="{data}"' in fig                                  # each plot says where its data is


def test_history_series_command(long_history, capsys):
    st, h, _, tmp = long_history
    db = str(tmp / "h.sqlite")
    assert history_main(["--history", db, "series", "--job", "long <job>", "--series", "paired:long <job>"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 2 * 90 and {r["variant"] for r in rows} == {"cand", "base"}
    cand = [r for r in rows if r["variant"] == "cand"]
    assert [float(r["value"]) for r in cand] == [p["value"] for _, p in st.series("long <job>")["paired:long <job>"]]
    assert cand[-1]["commit"] == h.commits[-1] and cand[0]["report"] == "../runs/0/report.html"
    out = tmp / "s.json"
    assert history_main(["--history", db, "series", "--job", "long <job>", "--variant", "cand",
                         "--format", "json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    reps = doc["series"]["paired:long <job>"]["cand"]["values"]
    assert len(reps) == 90 and all(len(v) == 5 for v in reps) and "base" not in doc["series"]["paired:long <job>"]
    assert history_main(["--history", db, "series", "--job", "long <job>", "--series", "nope"]) == 2
    assert "no series 'nope'" in capsys.readouterr().err
    assert history_main(["--history", db, "series", "--job", "other"]) == 2
