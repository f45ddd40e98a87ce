"""report.md: shape of the seed tables, escaping of names from files, and GitHub's
65,536-character comment limit (details are given up first)."""
from __future__ import annotations

import copy
import re

import pytest

from analysis.compare import engine as compare
from commands import compare as cli
from analysis.compare.summary import summary as build_summary
from analysis.report import markdown as report_md
from analysis.inputs.rundir import load_run
from tests.conftest import FIXTURES, REPO

RUN = REPO / "tests" / "data" / "runs" / "io-threads-mset"
TOPLEV = FIXTURES / "tma" / "toplev"


# ---- what GitHub's Markdown would make of the text (the CommonMark rules we rely on) ----

def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def check_tables(md: str) -> None:
    """Every row of every table has as many cell separators as its header."""
    block: list[str] = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        for row in block[1:]:
            assert unescaped_pipes(row) == unescaped_pipes(block[0]), (block[0], row)
        block = []


def fenced_blocks(md: str) -> list[tuple[str, str]]:
    """(info string, content) of each backtick code fence: a fence closes at the first line
    of at least as many backticks and nothing else (CommonMark)."""
    out, lines, i = [], md.splitlines(), 0
    while i < len(lines):
        m = re.fullmatch(r"(`{3,})([^`]*)", lines[i])
        if m:
            n, body, i = len(m.group(1)), [], i + 1
            while i < len(lines) and not re.fullmatch(rf"`{{{n},}}\s*", lines[i]):
                body.append(lines[i])
                i += 1
            out.append((m.group(2).strip(), "\n".join(body)))
        i += 1
    return out


def code_spans(line: str) -> list[str]:
    """The contents of the code spans of one line: a run of n backticks opens, the next
    run of exactly n closes; one space each side is stripped (CommonMark)."""
    spans, pos = [], 0
    while (m := re.compile(r"`+").search(line, pos)):
        close = next((c for c in re.finditer(r"`+", line[m.end():])
                      if len(c.group()) == len(m.group())), None)
        if close is None:
            break
        text = line[m.end(): m.end() + close.start()]
        if len(text) > 2 and text.startswith(" ") and text.endswith(" "):
            text = text[1:-1]
        spans.append(text)
        pos = m.end() + close.end()
    return spans


def check_ends_with_report_command(md: str, command: str) -> None:
    blocks = fenced_blocks(md)
    assert blocks and blocks[-1] == ("sh", command), blocks[-1:]
    assert re.fullmatch(r"`{3,}", md.rstrip().splitlines()[-1]), "text after the last fence"


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
    # the case in the seed tables' words (keyspace × value size, command shape, pipeline)
    assert lines[0] == ("## stallscope: mset-10keys-io-threads (100K keys × 100 B, 10 keys per "
                        "MSET, pipeline 4): cand vs base")
    summary = next(l for l in lines if l.startswith("**Summary:**"))
    assert lines.index(summary) < lines.index("### Throughput")
    # the interval is at the level of its false-discovery family (96.66%: 2 of 3 rows move; levels are cut, never rounded up)
    assert ("Throughput 100K keys × 100 B, 10 keys per MSET, pipeline 4 −85.5% "
            "\\[−93.5, −67.3\\]% **regression**") in summary
    assert any(l.startswith("| 100K keys × 100 B, 10 keys per MSET, pipeline 4 | ") for l in lines)
    # medians per side, the change and interval of the method (Welch: difference of means)
    # the seed's shape: shares and their ratio (log scale) with its interval
    # (the focus rows' intervals at their family's level, 99.37%: Holm calls 9 of 17 rows
    # changed, 1 - 5%/8; the top-mover candidates are a family of their own)
    assert "dictFind (flat, main thread) 29.9% → 5.5% (−81% \\[−85.6, −74.2\\]%)" in summary
    assert "(+28% \\[+13.9, +42.7\\]%)" in summary          # every interval with its unit
    assert "TMA not collected (no hardware PMU" in summary
    # each table's header names the confidence of its intervals: its family's level
    assert "| Test | Baseline (base) | PR (cand) | Change | 96.66% CI | Verdict |" in lines
    assert "| Function | base (flat) | cand (flat) | Change | 99.37% CI | Verdict |" in lines
    assert "| Function | base (cum) | cand (cum) | Change | 99.37% CI | Verdict |" in lines
    assert any(l.startswith("These 17 focus function verdicts are judged together") for l in lines)
    # the top movers: a family of their own, its sentence under their table
    assert any(l.startswith("These ") and " top mover verdicts are judged together" in l for l in lines)
    # every table row has as many cells as its header
    for l in lines:
        if l.startswith("| Function | base (flat)"):
            i = lines.index(l)
            cells = len(re.findall(r"(?<!\\)\|", l))   # the movers add a per-op column
            assert cells in (7, 8), l
            for row in lines[i + 2: i + 6]:
                assert len(re.findall(r"(?<!\\)\|", row)) == cells, row
    assert md.index("### Environment") > md.index("<details>")
    # analysed without an output directory: no artifacts, so the comment ends with the
    # command that rebuilds the report, fenced
    assert "Beside this report" not in md
    check_ends_with_report_command(md, f"stallscope compare {RUN}")


def test_the_checks_fail_on_wrong_markdown(res):
    """Each check above can fail: fed a wrong comment, it says so."""
    md = report_md.render(res)
    cmd = f"stallscope compare {RUN}"
    for wrong in (md.replace(cmd, cmd + " --oops"), md + "\nBeside this report: x.svg\n",
                  md.replace("```sh\n" + cmd, "```sh\n```\n" + cmd)):
        with pytest.raises(AssertionError):
            check_ends_with_report_command(wrong, cmd)
    with pytest.raises(AssertionError):
        check_tables("| a | b |\n|---|---|\n| x|y | z |\n")
    assert code_spans("Run `a` and ``b`c``") == ["a", "b`c"]
    assert code_spans("Run `a`b`") == ["a"]          # the span a raw backtick label breaks


def test_labels_and_run_ids_cannot_break_out(res):
    """Variant labels and run ids come from the run: in tables, code spans, code fences and
    the funnel they stay text, however many pipes, tags and backticks they hold."""
    r = copy.deepcopy(res)
    base, cand = "b|a`se <img src=x onerror=alert(1)>", "c```and"
    run_id = "run`id``x"
    # a label with a line of backticks ends a naive fence early; what follows is Markdown
    command = f"python -m collectors run mset --variant '{cand}\n```\n<script>alert(1)</script>'"
    r.base, r.cand, r.run_id, r.reproduce.run = base, cand, run_id, command
    for row in r.profile.focus:
        row.name = row.name + "|x"
    from analysis.tma.formats import parse_file
    from analysis.tma.funnel import compare as funnel
    f = funnel([parse_file(TOPLEV / "toplev_spr8488c_l2_veb_nomux_v.txt")],
               [parse_file(TOPLEV / "toplev_spr8488c_l2_eytzinger_nomux_v.txt")],
               base_label=base, cand_label=cand)
    r.tma.status, r.tma.funnel = "measured", f.doc()
    r.summary = build_summary(r)
    md = report_md.render(r)
    check_tables(md)
    # raw HTML nowhere; the command's <script> only as the content of its code block
    outside = md
    for _, content in fenced_blocks(md):
        outside = outside.replace(content, "")
    assert "<img" not in md and "<script>" not in outside
    assert "&lt;img src=x onerror=alert(1)&gt;" in md
    assert [s for s in code_spans(next(l for l in md.splitlines() if l.startswith("Run ")))] \
        == [run_id]
    blocks = fenced_blocks(md)
    assert ("sh", command) in blocks and blocks[-1] == ("sh", r.reproduce.report)
    funnel_head = next(l for l in md.splitlines() if l.startswith("| TMA Metric |"))
    assert r"b\|a\`se &lt;img" in funnel_head and r"c\`\`\`and (n=1)" in funnel_head
    # the same report rendered the old way (a fence of three backticks) loses the command
    naive = md.replace("````sh", "```sh").replace("\n````\n", "\n```\n")
    assert ("sh", command) not in fenced_blocks(naive)


def test_units_everywhere(res):
    md = report_md.render(res)
    assert "23,055 ops/s" in md and "16.127 ms" in md
    # Welch (3+3 reps) at the focus family's level, 99.37%
    assert "−23.79 pp (−81%)" in md and "[−29.87, −17.71] pp" in md
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
    limit = len(full) - 3000        # more than halving the top movers saves
    short = report_md.render(res, limit=limit)
    assert len(short) <= limit
    assert "Shortened to fit a GitHub comment" in short
    # the main tables, environment and reproduce survive; details go first
    for keep in ("**Summary:**", "### Throughput", "| dictFind | 29.9% (556 samples) | 5.5% (709 samples) |",
                 "### Environment", "### Reproduce"):
        assert keep in short, keep
    assert "callers" in short.split("left out", 1)[1].split("\n", 1)[0]


def test_hard_cut_keeps_the_limit(res):
    text = report_md.render(res, limit=3000)
    assert len(text) <= 3000
    assert text.startswith("## stallscope")
    assert text.rstrip().endswith("see report.html / results.json.")


@pytest.mark.heavy
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


# ---- the lead: what report.md starts with and a PR comment posts ----

def lead_of(md: str) -> str:
    from analysis.inputs.layout import REPORT_LEAD_END
    assert md.count(REPORT_LEAD_END) == 1
    return md.split(REPORT_LEAD_END, 1)[0]


def table_rows(md: str, head: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with `head`."""
    lines = md.splitlines()
    i = next(n for n, l in enumerate(lines) if l.startswith(head))
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


_UNIT = {"ns": 1.0, "µs": 1e3, "ms": 1e6}


def ns(cell: str) -> tuple[float, float]:
    """A printed CPU time ('−18.5 µs') in ns, and half of its last printed digit (rounding)."""
    m = re.fullmatch(r"([+−]?)(\d+(?:\.(\d+))?) (ns|µs|ms)", cell)
    assert m, cell
    scale = _UNIT[m.group(4)]
    x = float(m.group(2)) * scale * (-1 if m.group(1) == "−" else 1)
    return x, 0.5 * scale * 10 ** -len(m.group(3) or "")


def split_adds_up(md: str) -> tuple[list[str], float, float]:
    """The where-the-time-went table: (row names, sum of the rows' changes, the total's
    change); asserts they agree within the rounding of the printed numbers."""
    rows = table_rows(md, "| Own CPU per ")
    *parts, total = rows
    assert total[0] == "total (all samples)" and parts[-1][0].startswith("everything else (")
    changes = [ns(r[3]) for r in parts]
    t, t_err = ns(total[3])
    got = sum(x for x, _ in changes)
    assert abs(got - t) <= sum(e for _, e in changes) + t_err, (got, t)
    return [r[0] for r in parts], got, t


def test_report_md_leads_with_the_seed_tables_and_where_the_time_went(res):
    md = report_md.render(res)
    head = lead_of(md)
    lines = head.splitlines()
    assert lines[0].startswith("## stallscope: mset-10keys-io-threads")
    # the headline: the throughput change, its interval and verdict, then the counts
    assert lines[2].startswith("**Throughput −85.5% \\[−93.5, −67.3\\]%** (cand vs base, 100K keys × 100 B, "
                               "10 keys per MSET, pipeline 4; 96.66% CI (adjusted for the 3 throughput "
                               "and latency rows judged together by Benjamini-Hochberg), 3+3 reps): "
                               "❌ regression. Of the ")
    assert re.search(r"Of the \d+ verdicts in this report \(.*\): 0 improved, \d+ regressed", lines[2])
    assert table_rows(head, "| Throughput |")[0][1:4] == ["23,055 ops/s", "4,341 ops/s", "−85.5% [−93.5, −67.3]%"]
    assert "TMA: not collected (no hardware PMU on this host;" in head
    focus = table_rows(head, "| Focus function (main thread), CPU per MSET |")
    assert focus[0] == ["dictFind (flat)", "4.65 µs", "5.83 µs", "+28% [+13.9, +42.7]%", "29.9% → 5.5%", "❌ regression"]
    assert "Not tabulated here: negligible: msetGenericCommand (flat)." in head
    names, _, total = split_adds_up(head)
    assert names[0] == "handleClientsWithPendingReadsUsingThreads (new)" and total > 0
    assert "differences of means over unpaired reps that add up to the total" in head
    # then the report as before: the run, the summary line, the sections
    rest = md.split(lead_of(md), 1)[1]
    assert rest.index("**Summary:**") < rest.index("### Throughput") < rest.index("### Focus functions")


def test_the_split_check_fails_when_rows_do_not_add_up(res):
    md = lead_of(report_md.render(res))
    row = next(l for l in md.splitlines() if l.startswith("| dictFind |"))
    with pytest.raises(AssertionError):
        split_adds_up(md.replace(row, row.replace("| +1.28 µs |", "| +2.28 µs |")))


def test_the_lead_shows_the_tma_memory_path(res):
    from analysis.tma.formats import parse_file
    from analysis.tma.funnel import compare as funnel
    r = copy.deepcopy(res)
    f = funnel([parse_file(TOPLEV / "toplev_spr8488c_l2_veb_nomux_v.txt")],
               [parse_file(TOPLEV / "toplev_spr8488c_l2_eytzinger_nomux_v.txt")], base_label="base", cand_label="cand")
    r.tma.status, r.tma.reason, r.tma.funnel = "replay", "recorded SPR toplev outputs", f.doc()
    r.summary = build_summary(r)
    head = lead_of(report_md.render(r))
    rows = table_rows(head, "| TMA, memory path (REPLAY of recorded files) | base (n=1) | cand (n=1) |")
    assert [x[:4] for x in rows] == [["Backend\\_Bound", "37.4%", "28.9%", "−8.5 pp"],
                                     ["└ Memory\\_Bound", "21.8%", "11.0%", "−10.8 pp"]]
    assert "TMA: not collected" not in head
