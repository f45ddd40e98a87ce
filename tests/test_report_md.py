"""report.md: shape of the seed tables, escaping of names from files, and GitHub's
65,536-character comment limit (details are given up first)."""
from __future__ import annotations

import copy
import re

import pytest

from analysis.compare import cli, engine as compare
from analysis.compare.summary import summary as build_summary
from analysis.report import markdown as report_md
from analysis.inputs.rundir import load_run
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "runs" / "io-threads-mset"


def results(**over):
    opts = cli.options(cli.parser().parse_args([str(RUN)]))
    for k, v in over.items():
        setattr(opts, k, v)
    return compare.analyse(load_run(RUN), opts)


@pytest.fixture(scope="module")
def res():
    return results()


def test_summary_first_then_seed_tables(res):
    md = report_md.render(res)
    lines = md.splitlines()
    assert lines[0] == "## stallscope: mset-10keys-io-threads: cand vs base"
    summary = next(l for l in lines if l.startswith("**Summary:**"))
    assert lines.index(summary) < lines.index("### Throughput")
    assert ("Throughput MSET (10 × key:\\_\\_rand\\_int\\_\\_ vvvvvvvvvvv…) −85.5% "
            "\\[−92.8, −70.7\\]% **regression**") in summary
    # medians per side, the change and interval of the method (Welch: difference of means)
    assert "dictFind flat (main thread) 29.9% → 5.5% (−23.8 pp \\[−26.3, −21.3\\] pp" in summary
    assert "(+28% \\[+20.3, +35.1\\]%)" in summary          # every interval with its unit
    assert "TMA not collected (no hardware PMU" in summary
    assert "| Test | Baseline (base) | PR (cand) | Change | 95% CI | Verdict |" in lines
    assert "| Function | base (flat) | cand (flat) | Change | 95% CI | Verdict |" in lines
    assert "| Function | base (cum) | cand (cum) | Change | 95% CI | Verdict |" in lines
    # every table row has as many cells as its header
    for l in lines:
        if l.startswith("| Function | base (flat)"):
            i = lines.index(l)
            cells = len(re.findall(r"(?<!\\)\|", l))   # the movers add a per-op column
            assert cells in (7, 8), l
            for row in lines[i + 2: i + 6]:
                assert len(re.findall(r"(?<!\\)\|", row)) == cells, row
    assert md.index("### Environment") > md.index("<details>")
    assert md.rstrip().endswith("```") or "Beside this report" in md


def test_units_everywhere(res):
    md = report_md.render(res)
    assert "23,055 ops/s" in md and "16.127 ms" in md
    assert "−23.79 pp (−81%)" in md and "[−26.27, −21.31] pp" in md   # Welch 95% (3+3 reps)
    assert "% of samples" in md


def test_summary_text_is_inert_markdown(res):
    r = copy.deepcopy(res)
    r.tma.reason = "kernel.perf_event_paranoid <b>is</b> 3: fix it"
    r.summary = build_summary(r)
    summary = next(l for l in report_md.render(r).splitlines() if l.startswith("**Summary:**"))
    assert "perf\\_event\\_paranoid &lt;b&gt;is&lt;/b&gt; 3" in summary


def test_symbol_names_are_inert_markdown(res):
    r = copy.deepcopy(res)
    evil = "<script>alert(1)</script>|x*y_z"
    r.profile.focus[0].name = evil
    md = report_md.render(r)
    assert "<script>" not in md
    assert r"&lt;script&gt;alert(1)&lt;/script&gt;\|x\*y\_z" in md
    row = next(l for l in md.splitlines() if "&lt;script&gt;" in l and l.startswith("| "))
    assert len(re.findall(r"(?<!\\)\|", row)) == 7


def test_esc():
    assert report_md.esc("a|b") == r"a\|b"
    assert report_md.esc("__libc_start_main") == r"\_\_libc\_start\_main"
    assert report_md.esc("<x>&") == "&lt;x&gt;&amp;"


def test_shortened_details_first_when_over_the_limit(res):
    full = report_md.render(res)
    limit = len(full) - 2000
    short = report_md.render(res, limit=limit)
    assert len(short) <= limit
    assert "Shortened to fit a GitHub comment" in short
    # the main tables, environment and reproduce survive; details go first
    for keep in ("**Summary:**", "### Throughput", "| dictFind | 29.9% | 5.5% |",
                 "### Environment", "### Reproduce"):
        assert keep in short, keep
    assert "callers" in short.split("left out", 1)[1].split("\n", 1)[0]


def test_hard_cut_keeps_the_limit(res):
    text = report_md.render(res, limit=3000)
    assert len(text) <= 3000
    assert text.startswith("## stallscope")
    assert text.rstrip().endswith("see report.html / results.json.")


def test_github_limit_with_every_function_listed():
    # All functions of the real run (top = everything), all threads: a long comment.
    r = results(top=100000, thread="all")
    assert len(r.profile.movers) > 100
    md = report_md.render(r)
    assert len(md) <= report_md.GITHUB_COMMENT_LIMIT
    # and the same rows, repeated to go far past the limit, are cut down to fit
    r.profile.movers = r.profile.movers * 20
    md = report_md.render(r)
    assert len(md) <= report_md.GITHUB_COMMENT_LIMIT == 65536
    assert "Shortened to fit a GitHub comment (65,536 characters)" in md
    assert "### Throughput" in md and "### Reproduce" in md
