"""report.html in a real headless Chromium: what a person would see (verdicts, table
values, plots and flame graphs drawn with a size), no script errors, and a symbol name
like <script>alert(1)</script> from a folded line shown as text, never run.

The report itself has no script. To read layout and catch errors the test loads a copy
with a small probe script put first in <head> (it records window errors, replaces
alert() with a marker, and writes element sizes into the DOM after load), then reads the
DOM that Chromium dumps."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from commands import compare as cli
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "runs" / "io-threads-mset"
EVIL = "<script>alert(1)</script>"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.alert = function (m) { document.documentElement.setAttribute('data-alert', String(m)); };
window.addEventListener('load', function () {
  function box(e) { var r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; }
  var out = {
    plots: Array.from(document.querySelectorAll('.plot svg')).map(box),
    flames: Array.from(document.querySelectorAll('img.flamegraph')).map(function (e) {
      return [e.complete, e.naturalWidth, e.naturalHeight].concat(box(e)); }),
    scripts: document.querySelectorAll('script').length,
    errors: window.__errors
  };
  var pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>"""


def dump_dom(page: Path) -> tuple[str, str]:
    profile_dir = tempfile.mkdtemp(prefix="chromium-")
    try:
        r = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile_dir}", "--virtual-time-budget=5000",
             "--window-size=1280,2000", "--enable-logging=stderr", "--v=0",
             "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=90)
    finally:
        shutil.rmtree(profile_dir, ignore_errors=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr


ALERTED = re.compile(r"<html[^>]*data-alert=")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    if CHROMIUM is None:
        pytest.fail("chromium not found: install it with `apt-get install -y chromium` (or `make setup`)")
    tmp = tmp_path_factory.mktemp("html")
    run = tmp / "run"
    shutil.copytree(RUN, run)
    # A real-looking folded line (a frame of the recorded stack shape) with a hostile name,
    # made a focus function so it lands in the tables, plots and flame graphs.
    folded = run / "base" / "4" / "perf.folded"
    folded.write_text(folded.read_text() + "redis-server;__libc_start_call_main;main;aeMain;"
                      f"aeProcessEvents.part.0;{EVIL} 3003003\n")
    mf = json.loads((run / "manifest.json").read_text())
    mf["case"]["focus"] = ["dictFind", EVIL]
    (run / "manifest.json").write_text(json.dumps(mf))
    out = tmp / "report"
    assert cli.main([str(run), "--out", str(out)]) == 0
    page = (out / "report.html").read_text()
    probe = out / "probe.html"
    probe.write_text(page.replace("<head>", "<head>\n" + PROBE, 1))
    dom, stderr = dump_dom(probe)
    m = dom.split('<pre id="probe">', 1)
    assert len(m) == 2, "probe did not run (page never loaded?)"
    data = json.loads(html.unescape(m[1].split("</pre>", 1)[0]))
    return page, dom, data, stderr, out


@pytest.mark.heavy
def test_self_contained_without_scripts(rendered):
    page, _, data, _, _ = rendered
    assert "<script" not in page.lower()
    # nothing that loads: every src/href is a data: URI, an in-page #id or a file beside the report
    # (xmlns="http://www.w3.org/..." in the inline SVGs are names, never fetched)
    import re
    links = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert links and all(l.startswith(("data:", "#")) or re.fullmatch(r"[\w.-]+\.svg", l) for l in links)
    assert re.findall(r"url\((?!#)", page) == [] and "@import" not in page
    assert data["scripts"] == 1            # only the test's probe


def test_verdicts_and_values_visible(rendered):
    _, dom, _, _, _ = rendered
    summary = dom.split('id="summary"', 1)[1].split("</ul>", 1)[0]
    assert '<span class="verdict v-regression">regression</span>' in summary
    tput = dom.split('id="throughput"', 1)[1].split("</table>", 1)[0]
    # medians per side; the change is the log-scale ratio (geometric means at 3 reps)
    assert "23,055 ops/s" in tput and "4,341 ops/s" in tput and "−85.5%" in tput
    flat = dom.split('id="focus-flat"', 1)[1].split("</table>", 1)[0]
    # shares with the samples behind them; the verdict that counts (per MSET: regression)
    assert ('<td class="name">dictFind</td><td>29.9% (556 samples)</td><td>5.5% (709 samples)</td>'
            in flat)
    assert "share down by dilution, cost per op up" in dom.split('id="focus-flat"', 1)[1]
    assert "TMA not collected: no hardware PMU on this host" in dom
    assert "L3 32 MiB" in dom


def test_plots_and_flame_graphs_drawn_with_size(rendered):
    _, _, data, _, out = rendered
    # 1 throughput plot + 2 focus share plots, each drawn at a real size
    assert len(data["plots"]) == 3
    for w, h in data["plots"]:
        assert w > 200 and h > 150
    # diff + one per variant; the SVG decoded (natural size) and laid out full width
    assert len(data["flames"]) == 3
    for complete, nw, nh, w, h in data["flames"]:
        assert complete and nw > 500 and nh > 100 and w > 1000 and h > 100
    assert (out / "flame-diff.svg").is_file()


def test_no_script_errors(rendered):
    _, dom, data, stderr, _ = rendered
    assert data["errors"] == []
    assert "Uncaught" not in stderr


def test_injected_symbol_is_text_not_markup(rendered):
    page, dom, _, _, _ = rendered
    assert not ALERTED.search(dom)                       # alert() never called
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    flat = dom.split('id="focus-flat"', 1)[1].split("</table>", 1)[0]
    assert f'<td class="name">{escaped}</td>' in flat
    assert EVIL not in page
    # in the plot title it is SVG text, escaped by matplotlib's writer
    assert escaped in page.split('class="plot share-plot"', 2)[2].split("</svg>", 1)[0]


@pytest.mark.heavy
def test_probe_would_catch_an_unescaped_script(rendered, tmp_path):
    """Control: the same symbol put in raw does run, and the probe sees it."""
    page, _, _, _, _ = rendered
    bad = tmp_path / "bad.html"
    bad.write_text(page.replace("<head>", "<head>\n" + PROBE, 1)
                   .replace("</body>", f"<p>{EVIL}</p></body>", 1))
    dom, _ = dump_dom(bad)
    assert ALERTED.search(dom)


@pytest.mark.heavy
def test_variant_labels_and_run_id_are_text(tmp_path):
    """Labels and the run id reach the page through autoescaping only (no browser needed):
    in headers, the summary, the funnel and the reproduce block."""
    from analysis.compare import engine
    from analysis.compare.summary import summary
    from analysis.inputs.rundir import load_run
    from analysis.report import html as report_html
    from analysis.tma.formats import parse_file
    from analysis.tma.funnel import compare as funnel
    from tests.conftest import FIXTURES
    r = engine.analyse(load_run(RUN), cli.options(cli.parser().parse_args([str(RUN)])))
    label = "b<img src=x onerror=alert(1)>"
    r.base, r.run_id = label, f"id {EVIL}"
    r.reproduce.run = f"run --variant '{label}'"
    top = FIXTURES / "tma" / "toplev"
    r.tma.status = "measured"
    r.tma.funnel = funnel([parse_file(top / "toplev_spr8488c_l2_veb_nomux_v.txt")],
                          [parse_file(top / "toplev_spr8488c_l2_eytzinger_nomux_v.txt")],
                          base_label=label, cand_label="cand").doc()
    r.summary = summary(r)
    page = report_html.render(r, tmp_path)
    assert "<img" not in page and EVIL not in page
    assert page.count("b&lt;img src=x onerror=alert(1)&gt;") >= 4
    assert "id &lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.heavy
def test_the_detectable_size_sentence_is_at_the_runs_confidence(tmp_path):
    """report.html says at which confidence a quiet verdict's size is, from the settings, as
    report.md does (it said 95% whatever the comparison's confidence was)."""
    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import load_run
    from analysis.report import html as report_html, markdown as report_md
    r = analyse(load_run(RUN), CompareOptions(confidence=0.90))
    said = "could have seen (90% confidence, 80% power, from its own spread)"
    assert said in report_html.render(r, tmp_path) and said in report_md.render(r)


def _dom_rows(dom: str, table_id: str) -> list[list[str]]:
    table = dom.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S) if "<td" in row]


def test_the_page_leads_with_report_mds_tables(rendered):
    """The same lead as report.md (analysis/report/lead.py): headline, throughput, focus
    functions and where the time went, before the summary list; cell for cell the numbers
    of report.md's lead tables."""
    from tests.test_report_md import lead_of, table_rows
    _, dom, _, _, out = rendered
    assert dom.index('id="lead"') < dom.index('id="headline"') < dom.index('id="summary"')
    headline = dom.split('id="headline"', 1)[1].split("</p>", 1)[0]
    assert "Throughput −85.5% [−93.5, −67.3]%" in headline and "v-regression" in headline
    md = lead_of((out / "report.md").read_text())
    for table_id, head in (("lead-throughput", "| Throughput |"), ("time-split", "| Own CPU per "),
                           ("lead-focus", "| Focus function ")):
        want = [[c.replace("\\", "") for c in row[1:]] for row in table_rows(md, head)]
        got = [row[1:] for row in _dom_rows(dom, table_id)]
        # the verdict column: a mark and words in Markdown, words (a colour) in HTML
        assert [r[:-1] for r in got] == [r[:-1] for r in want] and len(got) == len(want) > 0, table_id
        assert all(w[-1].endswith(g[-1]) for g, w in zip(got, want)), table_id
    assert "TMA: not collected" in dom.split('id="lead-tma-line"', 1)[1].split("</p>", 1)[0]
