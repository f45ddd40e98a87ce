"""The PR comment's lead, rendered by the trusted comment job from results.json alone
(collectors/pr/lead_md.py, standard library only), against report.md's lead written by
analysis/report (lead.py, stall_tables.py, markdown._lead) from the same results: line for
line and cell for cell on the recorded demos; planted hostile strings render inert
(cmark-gfm); a malformed results.json is an error naming the file and the field."""
from __future__ import annotations

import itertools

from analysis.intervals import level_text
from analysis.power import POWER
from analysis.report import fmt
from analysis.stats import detectable_text


def test_the_standard_library_numbers_are_the_statistics_own():
    """analysis/report/fmt.py words the level and the detectable size itself (the comment job
    imports it under python3 -S, without numpy): the same text as the statistics' own."""
    levels = [0.8, 0.9, 0.95, 0.96, 0.969, 0.975, 0.99, 0.9964, 0.9979, 0.99999, 0.999984188612,
              0.95 ** (1 / 3), 1 - 0.05 / 7]
    assert [fmt.level(x) for x in levels] == [level_text(x) for x in levels]
    sizes = [None, 0.0, 0.001, 0.0114, 0.0235, 0.148458233496, 0.5, 0.99, 1.0, 1.0001, 3.2]
    for size, points in itertools.product(sizes, (False, True)):
        assert fmt.detectable(size, "pp" if points else "rel") == detectable_text(size, points)
    assert fmt.POWER == POWER


# ------------------------------------------------------------- the lead, line for line and cell for cell
import copy  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402

from analysis.inputs.layout import REPORT_LEAD_END  # noqa: E402
from analysis.report import markdown as report_md  # noqa: E402
from collectors.pr import lead_md, lead_tables  # noqa: E402
from collectors.pr.results_doc import NOTE_CAP, MalformedResults, document  # noqa: E402
from collectors.pr.untrusted import NAME_CAP, inert  # noqa: E402
from commands import compare as compare_cli  # noqa: E402
from commands import pr as pr_cli  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.test_pr_neutralise import CLEAN, _decoded, after, rendered  # noqa: E402
from tests.test_report_md import table_rows  # noqa: E402

RUNS = REPO / "tests" / "data" / "runs"
# the recorded demos (paired; with its in-cache control, whose lead carries the stall table),
# an unpaired Valkey run and an RDB load (the headline is the load time)
DEMOS = ("mset-demo-paired", "mset-demo-stalls-xeon480", "valkey-get-p1-default", "valkey-rdb-load-1m")
NOTHING = {"elements": [], "alerts": [], "mentions": [], "issues": [], "shas": [], "bidi": []}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("artifact") / "reports"
    for name in DEMOS:
        assert compare_cli.main([str(RUNS / name), "--out", str(root / name)]) == 0
    return root


def report_lead(md: str) -> list[str]:
    """report.md's lead as the comment shows it: its lines after the heading, to the end
    line, each made inert as every line of the comment is."""
    lines = md.split("\n")
    assert lines[0].startswith("## stallscope: ") and lines[1] == ""
    return [inert(x) for x in lines[2:lines.index(REPORT_LEAD_END)]]


def comment_lead(doc: dict, where: str = "results.json") -> list[str]:
    return lead_md.lines(document(doc, where))


TABLES = ("| Throughput |", "| TMA, memory path", "| Out-of-cache CPU per ", "| Focus function (", "| Own CPU per ")


def _tables(lines: list[str]) -> dict[str, list[list[str]]]:
    text = "\n".join(lines)
    out = {}
    for head in TABLES:
        line = next((x for x in lines if x.startswith(head)), None)
        if line is not None:
            out[line] = table_rows(text, line)
    return out


@pytest.mark.parametrize("name", DEMOS)
def test_the_lead_from_results_json_is_report_mds(reports, name):
    """The comment job's lead, from the recorded demo's results.json alone, is report.md's
    lead: the headline line, each table cell for cell, every sentence."""
    d = reports / name
    got = comment_lead(json.loads((d / "results.json").read_text()), str(d / "results.json"))
    want = report_lead((d / "report.md").read_text())
    assert got[0] == want[0] and got[0].startswith("**")            # the headline
    assert _tables(got) == _tables(want) and len(_tables(got)) >= (1 if "rdb" in name else 2)    # cell for cell
    assert got == want                                               # and every other line


def test_the_stall_table_leads_where_tma_is_absent(reports):
    got = comment_lead(json.loads((reports / "mset-demo-stalls-xeon480" / "results.json").read_text()))
    rows = {r[0]: r for r in table_rows("\n".join(got), "| Out-of-cache CPU per MSET |")}
    assert rows["dictFindByHash (flat)"][1:5] == ["58.2 µs", "12.3 µs", "45.9 µs \\[43.3 µs, 48.5 µs]",
                                                  "79% \\[76%, 83%]"]
    assert not any(x.startswith("TMA: not collected") for x in got)


def test_the_tma_memory_path_leads_where_tma_was_measured():
    """A run with the TMA funnel (recorded SPR toplev outputs replayed): the memory path's
    rows, cell for cell, from results.json as from the model."""
    from analysis.compare.summary import summary as build_summary
    from analysis.tma.formats import parse_file
    from analysis.tma.funnel import compare as funnel
    from tests.test_report_md import TOPLEV, results
    r = copy.deepcopy(results())
    f = funnel([parse_file(TOPLEV / "toplev_spr8488c_l2_veb_nomux_v.txt")],
               [parse_file(TOPLEV / "toplev_spr8488c_l2_eytzinger_nomux_v.txt")], base_label="base", cand_label="cand")
    r.tma.status, r.tma.reason, r.tma.funnel = "replay", "recorded SPR toplev outputs", f.doc()
    r.summary = build_summary(r)
    got = comment_lead(json.loads(r.dumps()))
    assert got == report_lead(report_md.render(r))
    rows = table_rows("\n".join(got), "| TMA, memory path (REPLAY of recorded files) | base (n=1) | cand (n=1) |")
    assert [x[:4] for x in rows] == [["Backend\\_Bound", "37.4%", "28.9%", "−8.5 pp"],
                                     ["└ Memory\\_Bound", "21.8%", "11.0%", "−10.8 pp"]]


def test_the_constants_are_the_reports():
    from analysis.report import lead, stall_tables
    from analysis.tma.funnel import MEMORY_PATH
    assert lead_tables.MEMORY_PATH == MEMORY_PATH and lead_tables.STALL_ROWS == stall_tables.LEAD_ROWS
    assert lead_md.COUNTED == lead.COUNTED and lead_tables.QUIET == lead.QUIET


def test_the_comment_leads_with_the_headline_in_4_kb(reports, capsys):
    """The comment of the demo with its in-cache control: the headline on the line after the
    marker, the report's lead tables next, what was measured below them, within 4 KB."""
    assert pr_cli.main(["comment", str(reports / "mset-demo-stalls-xeon480"), "--dry-run"]) == 0
    body = capsys.readouterr().out
    lines = body.split("\n")
    want = report_lead((reports / "mset-demo-stalls-xeon480" / "report.md").read_text())
    assert lines[1:1 + len(want)] == want and len(body.encode()) <= 4096
    assert body.index("\n---\n") > body.index("| Own CPU per MSET") and after(body) == CLEAN


# ------------------------------------------------------------- hostile strings in results.json
HOSTILE = ["[x](https://evil.example/) ![i](https://evil.example/i.png) @octocat o/r#2 GH-3",
           "<img src=x onerror=alert(1)> <b>bold</b> **strong** _em_ `code` | pipe",
           "&#x40octocat &#64;bob &commat;dave G&#x48-1 &#x202E;rtl &#91;e](https://evil.example/)",
           "\U000e0041\U000e0042 zw\u200bsp \u200c\u200d\u2060\ufeff\u00ad \u202egnp.exe",
           "$$\\Huge\\color{red}\\text{REGRESSION}$$ $x$ $`y`$ ```math", "> [!CAUTION]", "a5c3785ed8d6a35868bc169f07e40e88"]


def _plant(doc: dict, bad, long: str) -> dict:
    """Every string the lead shows, planted: names, labels, units, notes, reasons, verdicts."""
    d = copy.deepcopy(doc)
    d["base"], d["cand"] = bad(0), bad(1) + long
    d["case"]["label"] = bad(2)
    for item in d["summary"]:
        item["label"], item["note"] = bad(3), bad(4) + long
    for m in d["paired"] + d["throughput"]:
        m["label"], m["unit"] = bad(5) + long, bad(6)
        m["change"]["verdict"] = bad(0)
    p = d["profile"]
    p["per_op_command"], p["thread"], p["missing_focus"] = bad(1), bad(2), [bad(3), long]
    for i, f in enumerate(p["focus"]):
        f["name"] = bad(i % 7) + (long if i == 0 else "")
        for k in ("flat", "cum"):
            if f.get(f"{k}_verdict"):
                f[f"{k}_verdict"]["detectable_unit"] = bad(4)
    for row in p["time_split"]["rows"]:
        row["name"] = bad(5) + long
    s = d["stalls"]
    s["command"], s["tma"] = bad(6), bad(0) + long
    for row in s["rows"]:
        row["function"], row["kind"] = bad(1) + long, row["kind"]
        row["removed"]["why"] = bad(2)
    return d


@pytest.mark.parametrize("name", ["mset-demo-paired", "mset-demo-stalls-xeon480"])
def test_planted_strings_render_inert(reports, tmp_path, capsys, name):
    """results.json's names, labels, units, notes and verdicts planted with Markdown, HTML,
    entity references (with and without `;`), @mentions, references, SHAs, invisible and
    bidi characters, math and alerts, one of them 5,000 characters long: the comment (lead
    and the table of cases) renders none of them (cmark-gfm, read by GitHub's rules), no
    @ is followed by a name however it is spelled, no invisible character or `$` is left,
    and no line is longer than its capped names allow."""
    doc = json.loads((reports / name / "results.json").read_text())
    long = "L" * 5000
    planted = _plant(doc, lambda i: HOSTILE[i % len(HOSTILE)], long)
    case = tmp_path / "reports" / "evil"
    case.mkdir(parents=True)
    (case / "results.json").write_text(json.dumps(planted))
    (case / "report.md").write_text("**do not merge** [x](https://evil.example/)\n")
    assert pr_cli.main(["comment", str(case.parent), "--reports-only", "--dry-run"]) == 0
    body = capsys.readouterr().out
    assert rendered(body) == NOTHING, body
    assert not re.search("@(?!\u200b)", _decoded(body)) and "$" not in body and "<img" not in body
    assert not re.findall("[\u200c\u200d\u2060\ufeff\u00ad\u202e\U000e0000-\U000e0fff]", body)
    assert "do not merge" not in body and after(body) == CLEAN
    assert "L" * NOTE_CAP not in body and "L" * (NAME_CAP - 10) + "…" in body     # capped, an ellipsis after
    assert max(len(x) for x in body.split("\n")) < 8 * 5 * NAME_CAP, max(len(x) for x in body.split("\n"))
    assert body.count("\n---\n") == 1 and body.split("\n")[1].startswith("**")     # the headline still leads


# ------------------------------------------------------------- a malformed results.json
@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(summary="x"), "summary: a list, not a string"),
    (lambda d: d["paired"][0]["change"].update(rel="0.32"), "paired[0].change.rel: a number, not a string"),
    (lambda d: d["profile"]["focus"][1].update(flat_verdict=[]), "profile.focus[1].flat_verdict: an object, not a list"),
    (lambda d: d["profile"]["time_split"]["rows"][0].update(delta=float("inf")),
     "profile.time_split.rows[0].delta: a number, not a number that is not finite"),
    (lambda d: d.update(cand=None), "cand: the name of a variant, not null"),
    (lambda d: d["settings"].update(confidence=True), "settings.confidence: a number, not a boolean"),
])
def test_a_malformed_results_json_is_an_error_naming_the_file(reports, tmp_path, capsys, edit, message):
    doc = json.loads((reports / "mset-demo-paired" / "results.json").read_text())
    edit(doc)
    case = tmp_path / "reports" / "bad"
    case.mkdir(parents=True)
    (case / "results.json").write_text(json.dumps(doc).replace("Infinity", "1e999"))
    assert pr_cli.main(["comment", str(case.parent), "--reports-only", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{case / 'results.json'}: {message} (docs/results-json.md)" in err, err


@pytest.mark.parametrize("text, message", [("[1, 2]", "not a results.json object"), ("{\"base\": ", "not JSON"),
                                           ("{}", "base: the name of a variant, not null")])
def test_a_results_json_that_is_none_is_an_error_too(tmp_path, capsys, text, message):
    case = tmp_path / "reports" / "bad"
    case.mkdir(parents=True)
    (case / "results.json").write_text(text)
    assert pr_cli.main(["comment", str(case.parent), "--reports-only", "--dry-run"]) == 2
    assert f"{case / 'results.json'}: {message}" in capsys.readouterr().err
    with pytest.raises(MalformedResults, match="x.json: not a results.json object but a list"):
        document([1], "x.json")


def test_the_comments_headline_says_why_its_level_is_not_95_as_the_reports_does():
    """A run that decides read at its last look, and a rank interval's step: the comment's
    headline says it as report.md's does (analysis/report/fmt.level_said)."""
    import dataclasses

    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import load_run
    from tests.conftest import REPO
    r = analyse(load_run(REPO / "tests/data/runs/aa-decides-emr-1"), CompareOptions())
    r.measurement = dataclasses.replace(r.measurement, looks=[4, 6, 10, 13], look=4, level=0.9719)
    doc = json.loads(json.dumps(r.to_json()))
    got = comment_lead(doc, "results.json")[0]
    want = report_lead(report_md.render(r))[0]
    assert got == want and "(look 4 of 4: its looks share 5%, so its intervals hold 95% together" in got
    assert "exact rank interval of 13 pairs can reach" in got
