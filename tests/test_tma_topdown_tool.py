"""Arm topdown-tool (Arm Telemetry Solution) outputs: the older text format, the newer
tree/table format and its metrics CSV, read from the real recorded outputs in
fixtures/tma/arm (SOURCES.md there). Variants are a fixture's own text with only its
separators, spacing or one value's spelling changed by the test (said where it is done)."""
from __future__ import annotations

import re

import pytest

from analysis.tma.formats import (DETECTION_ORDER, FORMATS, REGISTRY, detect_format, parse_file,
                                  parse_output)
from analysis.tma.formats import topdown_tool_csv, topdown_tool_table, topdown_tool_text
from analysis.tma.formats.topdown_tool_common import model_key, number
from analysis.tma.model import TmaParseError

TEXT, TABLE, CSV = "topdown-tool", "topdown-tool-table", "topdown-tool-csv"
OURS = {TEXT: topdown_tool_text.FORMAT, TABLE: topdown_tool_table.FORMAT,
        CSV: topdown_tool_csv.FORMAT}

G3 = "arm_graviton3_m7g_perfbook_topdowntool_1.txt"
N1 = "arm_neoverse_n1_topdowntool_v1_readme_{}.txt"
V2 = "arm_neoverse_v2_topdowntool_readme_cpu_{}.txt"

# fixture -> (format, catalogue, {node: value of the aggregate}, command)
EXPECTED = {
    G3: (TEXT, "arm64", {"frontend_bound": 16.48, "backend_bound": 54.92, "retiring": 27.99,
                         "bad_speculation": 0.59}, "topdown-tool --all-cpus -m Topdown_L1 -- python"),
    N1.format(1): (TEXT, "neoverse-n1", {"frontend_stalled_cycles": 0.02,
                                         "backend_stalled_cycles": 42.59,
                                         "branch_misprediction_ratio": 0.001, "branch_mpki": 0.372,
                                         "l1d_tlb_mpki": 0.002, "l2_tlb_mpki": 0.006},
                   "topdown-tool ./a.out"),
    N1.format(2): (TEXT, "neoverse-n1", {"frontend_stalled_cycles": 0.00, "branch_mpki": 0.371,
                                         "backend_stalled_cycles": 42.78,
                                         "l2_tlb_miss_ratio": 0.002},
                   "topdown-tool -s combined ./a.out"),
    N1.format(3): (TEXT, "neoverse-n1", {"branch_mpki": 0.399, "l1i_tlb_mpki": 0.001,
                                         "l1d_tlb_mpki": 0.013, "l2_cache_miss_ratio": 0.065,
                                         "ll_cache_read_miss_ratio": 0.435},
                   "topdown-tool --metric-group MPKI,Miss_Ratio ./a.out"),
    N1.format(4): (TEXT, "neoverse-n1", {"backend_stalled_cycles": 42.42,
                                         "l2_tlb_miss_ratio": 0.002},
                   "topdown-tool --node backend_stalled_cycles ./a.out"),
    V2.format(1): (TABLE, "neoverse-v2", {"backend_bound": 39.07, "bad_speculation": 8.63,
                                          "frontend_bound": 12.42, "retiring": 40.01,
                                          "backend_stalled_cycles": 36.08,
                                          "frontend_stalled_cycles": 3.54},
                   "topdown-tool -- ./a.out"),
    V2.format(2): (TABLE, "neoverse-v2", {"backend_bound": 38.80, "bad_speculation": 8.78,
                                          "frontend_bound": 12.55, "retiring": 39.99},
                   "topdown-tool -s 1 -- ./a.out"),
    V2.format(3): (TABLE, "neoverse-v2", {"backend_stalled_cycles": 36.71,
                                          "frontend_stalled_cycles": 3.46, "ipc": 3.258},
                   "topdown-tool -s uarch -- ./a.out"),
    V2.format(4): (TABLE, "neoverse-v2", {"frontend_bound": 12.09,
                                          "branch_misprediction_ratio": 0.011, "branch_mpki": 1.821},
                   "topdown-tool -s combined -- ./a.out"),
    V2.format(6): (TABLE, "neoverse-v2", {"backend_bound": 73.28, "bad_speculation": 0.97,
                                          "frontend_bound": 17.45, "retiring": 8.75},
                   "topdown-tool -C 0,2-3 -- taskset -c 0,2-3 ./a.out"),
    V2.format(7): (CSV, "arm64", {"retiring": 17.02, "frontend_bound": 37.11}, None),
}


@pytest.fixture(scope="module")
def arm(fixtures_dir):
    return fixtures_dir / "tma" / "arm"


def _values(res):
    return sorted(((v.name, v.scope, v.interval, v.value) for v in res.values), key=str)


# ------------------------------------------------------------------ every fixture
@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_fixture_parses_with_its_values(arm, fname):
    fmt, model, want, command = EXPECTED[fname]
    res = parse_file(arm / fname)                        # auto-detected
    assert res.fmt == fmt and detect_format((arm / fname).read_text()) == fmt
    assert res.catalog.model == model
    got = {name: node.value for name, node in res.collapse().items()}
    for name, value in want.items():
        assert got[name] == pytest.approx(value), name
    assert all(v.known and v.in_tree for v in res.values)
    assert not any("not in the TMA catalogue" in w or "implausible" in w for w in res.warnings)
    if command:
        assert res.commands and res.commands[0].startswith(command)
    else:
        assert res.commands == []
    # Every value's line holds its value, and its title unless it is the value row of a
    # node heading's table (combined mode).
    lines = (arm / fname).read_text().splitlines()
    for v in res.values:
        line = lines[v.line - 1]
        assert v.raw_name in line or re.match(r"^[│ ]*│ [\d.]+ +│", line), (v, line)
        assert v.value in [float(x) for x in re.findall(r"\d+\.\d+", line)], (v, line)


def test_graviton3_text_slots_and_line_numbers(arm):
    res = parse_file(arm / G3)
    be = next(v for v in res.values if v.name == "backend_bound")
    assert (be.value, be.domain, be.level, be.scope, be.raw_name, be.line) == (
        54.92, "Slots", 1, None, "Backend Bound", 6)
    assert res.cpu_name is None and res.notes == []
    assert "arm64" in res.catalog_note       # the output names no core: guessed, and said


def test_n1_cycle_accounting_and_ratio_units(arm):
    res = parse_file(arm / N1.format(1))
    by = {v.name: v for v in res.values}
    assert (by["backend_stalled_cycles"].value, by["backend_stalled_cycles"].domain) == (42.59, "Cycles")
    mpki = by["branch_mpki"]
    assert (mpki.value, mpki.domain, mpki.raw_name, mpki.line) == (0.372, "MPKI", "Branch MPKI", 13)
    assert by["branch_misprediction_ratio"].domain == "per branch"
    assert by["l1d_tlb_miss_ratio"].domain == "per TLB access"
    # the "..." where the README cut the output is kept as a note, nothing else is
    assert res.notes == ["line 23: ... (the output was cut here)"]
    assert len(res.values) == 10


def test_n1_combined_mode_tags_and_indentation(arm):
    # "[Cycle Accounting]   [Topdown group]", indented "  [Branch Effectiveness]   [uarch
    # group]" and indented metric lines under their node; two "..." cuts
    res = parse_file(arm / N1.format(2))
    assert [v.name for v in res.values][:4] == ["frontend_stalled_cycles", "branch_mpki",
                                                "branch_misprediction_ratio", "backend_stalled_cycles"]
    assert res.notes == ["line 9: ... (the output was cut here)",
                         "line 20: ... (the output was cut here)"]
    assert not any("group]" in n for n in res.notes)


def test_n1_metric_groups_titles_that_are_aliases(arm):
    res = parse_file(arm / N1.format(3))
    by = {v.raw_name: v for v in res.values}
    assert by["L1 Instruction TLB MPKI"].name == "l1i_tlb_mpki"     # catalogue alias
    assert by["LL Cache Read Miss Ratio"].domain == "per cache access"
    assert len(res.values) == 20


def test_v2_table_cpu_name_and_alias(arm):
    res = parse_file(arm / V2.format(3))
    assert res.cpu_name == "Neoverse V2" and res.catalog_note is None
    ipc = next(v for v in res.values if v.raw_name == "Instructions Per Cycle")
    assert (ipc.name, ipc.value, ipc.domain, ipc.line) == ("ipc", 3.258, "per cycle", 17)
    assert res.notes == ["line 2: Monitoring command: sleep. Hit Ctrl-C to stop.", "line 3: Run 1"]


def test_v2_combined_node_heading_table(arm):
    # "Frontend Bound (frontend_bound)" followed by a Value | Unit table, no Metric column
    res = parse_file(arm / V2.format(4))
    fe = next(v for v in res.values if v.name == "frontend_bound")
    assert (fe.value, fe.raw_name, fe.line, fe.domain) == (12.09, "Frontend Bound", 10, "Slots")
    assert res.cpu_name == "Neoverse V2"
    assert "line 19: ... (the output was cut here)" in res.notes


def test_v2_per_cpu_columns(arm):
    res = parse_file(arm / V2.format(6))
    assert res.scopes() == [None, "CPU0", "CPU2", "CPU3"]
    assert res.get("backend_bound") == 73.28                      # the aggregate
    assert res.get("backend_bound", scope="CPU2") == 75.68
    assert res.get("backend_bound", scope="CPU0") == 71.97
    assert res.get("retiring", scope="CPU3") == 8.59
    assert len(res.values) == 16


def test_csv_interval_and_columns(arm):
    res = parse_file(arm / V2.format(7))
    assert {(v.name, v.interval, v.value, v.level, v.domain) for v in res.values} == {
        ("retiring", 0.10, 17.02, 1, "Slots"), ("frontend_bound", 0.10, 37.11, 1, "Slots")}


def test_csv_per_core_file_name_gives_the_scope(arm, tmp_path):
    # topdown-tool -C writes <product>_core_<n>_metrics.csv (README.CPU.md); same rows
    p = tmp_path / "neoverse_v2_core_2_metrics.csv"
    p.write_text((arm / V2.format(7)).read_text())
    res = parse_file(p, catalog="neoverse-v2")
    assert res.catalog.model == "neoverse-v2" and res.catalog_note is None
    assert {v.scope for v in res.values} == {"CPU2"}
    assert res.get("retiring", scope="CPU2") == 17.02


def test_unknown_names_are_kept_with_a_warning(arm):
    # The generic arm64 catalogue has level 1 only: the V2 output's Stage-2 cycle
    # accounting is unknown to it.
    res = parse_file(arm / V2.format(1), catalog="arm64")
    unknown = [v for v in res.values if not v.known]
    assert {(v.name, v.value, v.domain, v.level, v.in_tree) for v in unknown} == {
        ("backend_stalled_cycles", 36.08, None, None, False),
        ("frontend_stalled_cycles", 3.54, None, None, False)}
    assert any(w.startswith("names not in the TMA catalogue") and "Backend Stalled Cycles" in w
               for w in res.warnings)
    assert res.get("backend_bound") == 39.07 and "backend_stalled_cycles" not in res.collapse()


def test_cpu_model_keys(arm):
    table = (arm / V2.format(1)).read_text().splitlines()
    assert topdown_tool_table.FORMAT.cpu_model(table) == "neoverse-v2"
    assert topdown_tool_table.FORMAT.cpu_model(
        (arm / V2.format(4)).read_text().splitlines()) == "neoverse-v2"   # "... V2 topdown"
    assert topdown_tool_text.FORMAT.cpu_model((arm / N1.format(1)).read_text().splitlines()) is None
    assert topdown_tool_csv.FORMAT.cpu_model((arm / V2.format(7)).read_text().splitlines()) is None
    assert topdown_tool_text.FORMAT.cpu_model(["CPU: Neoverse N1"]) == "neoverse-n1"
    assert model_key("Neoverse N1") == "neoverse-n1" and model_key("Neoverse V2") == "neoverse-v2"
    assert model_key("") is None


# ------------------------------------------------------------------ detection
def test_formats_registered():
    for name in (TEXT, TABLE, CSV):
        assert name in FORMATS and REGISTRY[name] is OURS[name]
    order = [f.name for f in DETECTION_ORDER]
    assert order.index(TABLE) < order.index("perf-json") and order.index(CSV) < order.index("perf-csv")
    assert order.index(TEXT) < order.index("toplev")


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_each_fixture_claimed_by_one_topdown_tool_format(arm, fname):
    lines = (arm / fname).read_text().splitlines()
    assert [n for n, f in OURS.items() if f.detect(lines)] == [EXPECTED[fname][0]]


def test_other_tools_outputs_are_not_claimed(fixtures_dir):
    """perf stat, toplev, AMD and Arm perf outputs: no topdown-tool format claims them, so
    each is detected as before."""
    tma = fixtures_dir / "tma"
    files = [p for p in sorted(tma.rglob("*")) if p.is_file() and p.suffix != ".md"
             and "definitions" not in p.parts and "topdowntool" not in p.name]
    assert len(files) > 30
    before = [f for f in DETECTION_ORDER if f.name not in OURS]
    for p in files:
        lines = p.read_text(errors="replace").splitlines()
        assert not [n for n, f in OURS.items() if f.detect(lines)], p
        old = next((f.name for f in before if f.detect(lines)), None)
        new = next((f.name for f in DETECTION_ORDER if f.detect(lines)), None)
        assert new == old, p


def test_forced_format(arm):
    res = parse_file(arm / V2.format(2), fmt=TABLE)
    assert res.fmt == TABLE and res.get("retiring") == 39.99
    with pytest.raises(TmaParseError, match="not a topdown-tool metrics CSV"):
        parse_file(arm / G3, fmt=CSV)


# ------------------------------------------------------------------ what they survive
def _variant(tmp_path, fname, text):
    p = tmp_path / fname
    p.write_text(text, encoding="utf-8")
    return p


_POINT = re.compile(r"(?<=\d)\.(?=\d)")   # a decimal point between digits


@pytest.mark.parametrize("fname", [G3, N1.format(1), N1.format(2), V2.format(4), V2.format(6)])
@pytest.mark.parametrize("thousands", [".", " ", "\u00a0"])
def test_decimal_comma_locale(arm, tmp_path, fname, thousands):
    # The fixture's text with its decimal points turned into commas ("16.48%" ->
    # "16,48%") and the ',' grouping of "misses per 1,000 instructions" into '.', a space
    # or a no-break space; nothing else changed.
    text = (arm / fname).read_text()
    loc = _POINT.sub(",", text.replace("1,000", "ONE_THOUSAND")).replace("ONE_THOUSAND",
                                                                        f"1{thousands}000")
    assert loc != text
    res = parse_file(_variant(tmp_path, fname, loc))
    assert _values(res) == _values(parse_file(arm / fname))
    assert res.fmt == EXPECTED[fname][0]
    assert all(v.known for v in res.values)
    if "branch_mpki" in {v.name for v in res.values}:
        assert next(v.domain for v in res.values if v.name == "branch_mpki") == "MPKI"


def test_csv_semicolon_locale(arm, tmp_path):
    # The CSV fixture with ';' between fields and decimal commas (how a decimal-comma
    # locale writes CSV); nothing else changed.
    text = _POINT.sub(",", (arm / V2.format(7)).read_text().replace(",", ";"))
    assert "17,02" in text
    res = parse_file(_variant(tmp_path, "x.csv", text), catalog="arm64")
    assert res.fmt == CSV and _values(res) == _values(parse_file(arm / V2.format(7)))


@pytest.mark.parametrize("fname", sorted(EXPECTED))
def test_trailing_spaces_and_blank_lines(arm, tmp_path, fname):
    # Every line of the fixture with trailing spaces, and a blank line after each.
    text = (arm / fname).read_text()
    spaced = "".join(f"{l}   \n\n" for l in text.splitlines())
    res = parse_file(_variant(tmp_path, fname, spaced))
    orig = parse_file(arm / fname)
    assert _values(res) == _values(orig) and res.fmt == orig.fmt
    assert [v.line for v in res.values] == [2 * v.line - 1 for v in orig.values]


@pytest.mark.parametrize("spelling", ["nan", "-"])
def test_missing_value_text(arm, tmp_path, spelling):
    # One value of the fixture printed as "nan" or "-" instead (what the tool prints for
    # a metric it could not compute); the other values are unchanged.
    g3 = (arm / G3).read_text().replace(" 54.92% slots", f" {spelling}% slots")
    res = parse_file(_variant(tmp_path, G3, g3))
    by = {v.name: v.value for v in res.values}
    assert by["backend_bound"] is None and by["frontend_bound"] == 16.48

    n1 = (arm / N1.format(1)).read_text().replace("0.372 misses", f"{spelling} misses")
    res = parse_file(_variant(tmp_path, N1.format(1), n1))
    assert {v.name: v.value for v in res.values}["branch_mpki"] is None

    v2 = (arm / V2.format(6)).read_text().replace("│ 75.68 │", f"│ {spelling:<5} │")
    res = parse_file(_variant(tmp_path, V2.format(6), v2))
    assert res.get("backend_bound", scope="CPU2") is None and res.get("backend_bound") == 73.28

    csv = (arm / V2.format(7)).read_text().replace(",17.02,", f",{spelling},")
    res = parse_file(_variant(tmp_path, V2.format(7), csv))
    assert {v.name: v.value for v in res.values} == {"retiring": None, "frontend_bound": 37.11}


def test_csv_blank_value_is_none(arm, tmp_path):
    # README.CPU.md: value is blank when not available
    csv = (arm / V2.format(7)).read_text().replace(",17.02,", ",,")
    res = parse_file(_variant(tmp_path, V2.format(7), csv))
    assert {v.name: v.value for v in res.values} == {"retiring": None, "frontend_bound": 37.11}


def test_elision_inside_a_table(arm, tmp_path):
    # The fixture cut after its second row, with the docs' "..." marker in the tree.
    lines = (arm / V2.format(2)).read_text().splitlines()
    text = "\n".join(lines[:11] + ["            ..."]) + "\n"
    res = parse_file(_variant(tmp_path, V2.format(2), text))
    assert {v.name: v.value for v in res.values} == {"backend_bound": 38.80, "bad_speculation": 8.78}
    assert res.notes[-1].startswith("line 12: ... (the output was cut here, inside the table")


def test_same_output_twice_keeps_each_value_once(arm):
    text = (arm / V2.format(2)).read_text()
    res = parse_output(text + text, source="twice.txt")
    assert len(res.values) == 4 and res.get("frontend_bound") == 12.55
    assert not any("printed again" in w for w in res.warnings)


# ------------------------------------------------------------------ malformed input
def _error(path, line):
    with pytest.raises(TmaParseError) as e:
        parse_file(path)
    assert e.value.line == line and str(e.value).startswith(f"{path}:{line}: "), str(e.value)
    return str(e.value)


@pytest.mark.parametrize("old,new,line,what", [
    (" 54.92% slots", " 54.9.2% slots", 6, "not a number"),
    (" 54.92% slots", " 54.9x2% slots", 6, "malformed or truncated"),
    (" 54.92% slots", "", 6, "malformed or truncated"),                  # line cut after the dots
    (" 54.92% slots", " 54.92%% slots", 6, "unexpected text after the value"),
    ("[Topdown Level 1]", "[Topdown Level 1", 4, "malformed group header"),
])
def test_text_malformed(arm, tmp_path, old, new, line, what):
    text = (arm / G3).read_text()
    assert old in text
    msg = _error(_variant(tmp_path, G3, text.replace(old, new)), line)
    assert what in msg


@pytest.mark.parametrize("old,new,line,what", [
    ("│ Backend Bound   │ 38.80 │ %    │", "│ Backend Bound   │ 38.80 │", 10, "2 cells, its header 3"),
    ("│ Backend Bound   │ 38.80 │ %    │", "│ Backend Bound   │ 38.8O │ %    │", 10, "not a number"),
    ("│ Backend Bound   │ 38.80 │ %    │", "│ Backend Bound   │ 38.80 ", 10, "cut off"),
    ("┃ Metric          ┃ Value ┃ Unit ┃", "┃ Metric          ┃ Score ┃ Unit ┃", 9, "no Value column"),
])
def test_table_malformed(arm, tmp_path, old, new, line, what):
    text = (arm / V2.format(2)).read_text()
    assert old in text
    msg = _error(_variant(tmp_path, V2.format(2), text.replace(old, new)), line)
    assert what in msg


def test_table_row_without_top_border(arm, tmp_path):
    lines = (arm / V2.format(2)).read_text().splitlines()
    text = "\n".join(lines[:6] + lines[7:]) + "\n"       # the table's top border removed
    msg = _error(_variant(tmp_path, V2.format(2), text), 7)
    assert "outside a table" in msg


@pytest.mark.parametrize("old,new,what", [
    (",17.02,%", ",17.02", "6 fields, the header has 7"),
    (",17.02,", ",17.0x2,", "not a number"),
])
def test_csv_malformed(arm, tmp_path, old, new, what):
    text = (arm / V2.format(7)).read_text()
    msg = _error(_variant(tmp_path, V2.format(7), text.replace(old, new)), 2)
    assert what in msg


def test_number_forms():
    # the fixtures' values in the forms locales print them
    assert number("16,48", "s", 1, "x") == number("16.48", "s", 1, "x") == 16.48
    assert number("0,372", "s", 1, "x") == 0.372
    assert number("nan", "s", 1, "x") is None and number("-", "s", 1, "x") is None
    assert number("", "s", 1, "x") is None
    for bad in ("16.4.8", "16,4,8", "1,6.4,8", "abc"):
        with pytest.raises(TmaParseError, match="s:1: x: value"):
            number(bad, "s", 1, "x")
