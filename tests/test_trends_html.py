"""Trend pages (analysis/history/trends.py) opened in real headless Chromium: the index
links every job; a job page has one plot per headline series, the change point in its
table with the commit range, points that link to run reports, and no scripts or errors."""
from __future__ import annotations

import re

import pytest

from analysis.history.changepoints import detect
from analysis.history.store import HistoryStore
from bench.synthetic_history import Shift, make_job
from analysis.history.trends import write_trend_pages
from tests.test_report_html import CHROMIUM, dump_dom


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    if not CHROMIUM:
        pytest.fail("chromium not found: install it with `apt-get install -y chromium` (or `make setup`)")
    tmp = tmp_path_factory.mktemp("trends")
    st = HistoryStore.open(tmp / "h.sqlite")
    h = make_job("nightly <mset>", 20, [Shift(12, -0.10, "lookupKey")], seed=5)
    for i, r in enumerate(h.runs):
        st.ingest_results(r, job="nightly <mset>", report_url=f"../runs/{i}/report.html")
    detect(st, "nightly <mset>")
    return write_trend_pages(st, tmp / "out"), h


@pytest.mark.heavy
def test_index_and_job_page_render(pages):
    index, h = pages
    dom, _ = dump_dom(index)
    assert "nightly &lt;mset&gt;" in dom and "<mset>" not in dom          # escaped
    href = re.search(r'<a href="([^"]+\.html)">nightly', dom).group(1)
    page = index.parent / href
    dom, err = dump_dom(page)
    assert "<script" not in dom and "Uncaught" not in err
    assert dom.count('<figure class="series"') >= 5                       # throughput + functions
    rows = re.findall(r'<tr class="regression">(.*?)</tr>', dom, re.S)
    assert any("paired:nightly" in r and h.commits[11][:12] in r and h.commits[12][:12] in r
               and "cpu_per_op:lookupKey" in r for r in rows)
    # every candidate point links to its report
    assert dom.count('xlink:href="../runs/') + dom.count('href="../runs/') >= 20
