"""perf stat -I outputs in any locale, read from real recordings (tests/data/tma/SOURCES.md):
one `perf stat record -I 1000 -a` replayed by `perf stat report` under seven LC_NUMERIC
settings (grouping with ',' '.' U+202F U+00A0 ' ' U+2019 or none; decimal '.' or ','),
live -I runs in the standard, -x (';' and ',') and -j formats in the C and decimal-comma
locales, and a published TopdownL1 output in a U+202F / decimal-comma locale.

This machine has no PMU, so the recordings count software events; what they test is the
reading every TMA line goes through too: the line layouts, the -I timestamps, the
separators and the one number reader (analysis/tma/formats/numbers.py)."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from analysis.tma.formats import detect_format, parse_file, perf_csv, perf_json, perf_std
from analysis.tma.formats.numbers import decimal_mark, parse_number
from analysis.tma.model import TmaParseError
from tests.conftest import FIXTURES

DATA = Path(__file__).parent / "data" / "tma"
LOC = DATA / "locale"
EVENTS = ["task-clock", "context-switches", "cpu-migrations", "page-faults"]
# locale -> the thousands separator `locale -k LC_NUMERIC` gave (None: the C locale's none)
REPORTS = {"C": None, "en_US": ",", "de_DE": ".", "fr_FR": "\u202f", "de_CH": "\u2019",
           "ru_RU_nbsp": "\u00a0", "ru_RU_space": " "}
ENDS = [1.003086217, 2.017583598, 3.033732142, 3.063177720]
LIVE = {  # live -I runs: file -> the counter reader of its format
    "perf_I1000_std_de_DE.txt": perf_std.counters,
    "perf_I1000_std_fr_FR.txt": perf_std.counters,
    "perf_I1000_std_de_DE_o.txt": perf_std.counters,
    "perf_I1000_csv_semicolon_C.txt": perf_csv.counters,
    "perf_I1000_csv_semicolon_de_DE.txt": perf_csv.counters,
    "perf_I1000_csv_semicolon_fr_FR.txt": perf_csv.counters,
    "perf_I1000_csv_comma_C.txt": perf_csv.counters,
    "perf_I1000_csv_comma_de_DE.txt": perf_csv.counters,
    "perf_I1000_json_C.jsonl": perf_json.counters,
    "perf_I1000_json_de_DE.jsonl": perf_json.counters,
}
JSONITER_C = DATA / "perf_r100_TopdownL1_jsoniter.txt"
JSONITER_NNBSP = DATA / "perf_r100_TopdownL1_nnbsp_comma_jsoniter.txt"


def _counts(path: Path) -> list[tuple]:
    return [(c.interval, c.scope, c.event, c.count, c.unit) for c in
            perf_std.counters(path.read_text(encoding="utf-8"), str(path))]


@pytest.mark.parametrize("loc", REPORTS)
def test_one_recording_reads_alike_in_every_locale(loc):
    path = LOC / f"report_I1000_{loc}.txt"
    text = path.read_text(encoding="utf-8")
    sep = REPORTS[loc]
    if sep:
        assert f"2{sep}022" in text and f"172{sep}471" in text     # perf grouped the counts
    assert detect_format(text) == "perf"            # -I: no banner, perf's "time counts" header
    got = _counts(path)
    assert got == _counts(LOC / "report_I1000_C.txt")
    assert sorted({c[0] for c in got}) == ENDS
    first = {c[2]: c[3] for c in got if c[0] == ENDS[0]}
    assert first == {"task-clock": 2022.33, "context-switches": 2486, "cpu-migrations": 79,
                     "page-faults": 172471}
    # the file's decimal mark, from its metric column
    assert decimal_mark(text.splitlines()) == ("," if loc in ("de_DE", "fr_FR", "ru_RU_nbsp",
                                                              "ru_RU_space") else ".")


def test_live_output_equals_its_replay():
    # what perf printed while recording (C locale, with its "CPUs utilized" metric) holds
    # the counts the replays hold
    assert _counts(LOC / "record_I1000_C.txt") == _counts(LOC / "report_I1000_C.txt")
    live = perf_std.counters((LOC / "record_I1000_C.txt").read_text(), "record")
    assert (live[0].metric, live[0].metric_unit) == (2.022, "CPUs utilized")


def test_per_cpu_rows_sum_to_the_aggregate():
    # -A in fr_FR: "CPU0   1 006,33 msec" must not read the count's first digit as a CPU count
    per_cpu = _counts(LOC / "report_I1000_A_fr_FR.txt")
    assert {c[1] for c in per_cpu} == {"CPU0", "CPU1"}
    assert per_cpu[0] == (ENDS[0], "CPU0", "task-clock", 1006.33, "msec")
    total: dict[tuple, float] = {}
    for ts, _, event, count, _ in per_cpu:
        total[ts, event] = round(total.get((ts, event), 0) + count, 2)
    assert total == {(c[0], c[2]): c[3] for c in _counts(LOC / "report_I1000_fr_FR.txt")}


@pytest.mark.parametrize("name", LIVE)
def test_live_interval_outputs_in_each_format(name):
    path = LOC / name
    text = path.read_text(encoding="utf-8")
    assert detect_format(text) == {perf_std.counters: "perf", perf_csv.counters: "perf-csv",
                                   perf_json.counters: "perf-json"}[LIVE[name]]
    rows = LIVE[name](text, str(path))
    ends = sorted({r.interval for r in rows})
    assert len(ends) >= 3 and len(rows) == 4 * len(ends)
    assert all([r.event for r in rows if r.interval == t] == EVENTS for t in ends)
    # the standard output prints a share only for a counter that did not run all the time
    assert {r.multiplex for r in rows} == ({None} if LIVE[name] is perf_std.counters else {100.0})
    # -a on this 2-CPU machine: task-clock is 2 CPUs x each interval's length (its start
    # the end before it): within 2 %, and 8 % for the last, short one the workload ended in
    for start, end in zip([0.0] + ends[:-1], ends):
        clock = next(r for r in rows if r.interval == end and r.event == "task-clock")
        assert clock.unit == "msec"
        assert clock.count == pytest.approx(2000 * (end - start), rel=0.08 if end == ends[-1] else 0.02)
    # perf cuts a CSV metric value at the decimal comma (print_metric_csv): whole numbers
    metrics = [r.metric for r in rows if r.metric is not None]
    cut = "csv" in name and "_C." not in name
    assert metrics and all(m == int(m) for m in metrics) == cut


def test_decimal_comma_json_and_csv_read_as_the_c_locale_does():
    # de_DE -j: bare "pcnt-running" : 100,00 and "metric-value" : 2,010335 (no JSON),
    # quoted "counter-value" : "2010,335096"; -x, splits 2011,70 and 100,00 into two fields
    j = perf_json.counters((LOC / "perf_I1000_json_de_DE.jsonl").read_text(), "j")
    assert (j[0].count, j[0].multiplex, j[0].metric) == (2010.335096, 100.0, 2.010335)
    c = perf_csv.counters((LOC / "perf_I1000_csv_comma_de_DE.txt").read_text(), "c")
    assert (c[0].count, c[0].unit, c[0].event, c[0].multiplex, c[0].metric, c[0].metric_unit) == \
        (2011.70, "msec", "task-clock", 100.0, 2.0, "CPUs utilized")


def test_o_file_keeps_its_start_line():
    with pytest.raises(TmaParseError, match=r"perf_I1000_std_de_DE_o.txt: no top-down node"):
        parse_file(LOC / "perf_I1000_std_de_DE_o.txt")
    assert perf_std.counters((LOC / "perf_I1000_std_de_DE_o.txt").read_text(), "o")[0].interval \
        == 1.000203176


@pytest.mark.parametrize("name", list(LIVE) + [f"report_I1000_{l}.txt" for l in REPORTS])
def test_every_recording_is_read_to_its_end(name):
    # read whole (no unrecognised format, no JSON error): they hold no top-down metric
    with pytest.raises(TmaParseError, match=rf"{re.escape(name)}: no top-down node found"):
        parse_file(LOC / name)


def test_published_topdown_output_in_a_decimal_comma_locale():
    # perf stat -r 100 on the jsoniter-scala README: counts grouped with U+202F, values
    # with a decimal comma, "( +-  0,19% )" spreads; and the same README's C-locale run
    text = JSONITER_NNBSP.read_text(encoding="utf-8")
    assert "1\u202f914" in text and "#     19,0 %  tma_retiring" in text
    r = parse_file(JSONITER_NNBSP)
    assert r.fmt == "perf" and not r.warnings
    assert {v.name: v.value for v in r.values} == {
        "Backend_Bound": 11.4, "Bad_Speculation": 36.5, "Frontend_Bound": 33.2, "Retiring": 19.0}
    c = parse_file(JSONITER_C)
    assert {v.name: v.value for v in c.values} == {
        "Backend_Bound": 14.1, "Bad_Speculation": 35.6, "Frontend_Bound": 30.0, "Retiring": 20.3}
    counts = {x.event: x.count for x in perf_std.counters(text, "j")}
    assert counts["context-switches"] == 1914 and counts["cycles"] == 1171824946
    assert counts["task-clock"] == 286.59


def test_a_damaged_value_names_file_and_line(tmp_path):
    lines = JSONITER_NNBSP.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[13] = lines[13].replace("19,0", "19,0,0")
    p = tmp_path / "damaged.txt"
    p.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(TmaParseError, match=r"damaged.txt:14: malformed tma_ metric"):
        parse_file(p)
    js = (LOC / "perf_I1000_json_de_DE.jsonl").read_text().splitlines(keepends=True)
    js[2] = js[2][:90] + "\n"
    p = tmp_path / "cut.jsonl"
    p.write_text("".join(js))
    with pytest.raises(TmaParseError, match=r"cut.jsonl:3: invalid JSON"):
        parse_file(p)


@pytest.mark.parametrize("text,decimal,want", [
    ("2.022,33", ",", 2022.33), ("2\u202f022,33", None, 2022.33), ("2\u2019022.33", ".", 2022.33),
    ("2\u00a0022,33", None, 2022.33), ("2 022,33", ",", 2022.33), ("172.471", ",", 172471),
    ("172,471", ".", 172471), ("2,022.33", None, 2022.33), ("100,00", None, 100.0),
    ('"2010,335096"', None, 2010.335096), ("1.003086217", ".", 1.003086217), ("nan", None, None)])
def test_the_number_reader_on_the_recordings_tokens(text, decimal, want):
    assert parse_number(text, "f", 1, "x", decimal) == want


def test_a_number_in_the_wrong_locale_names_file_and_line():
    with pytest.raises(TmaParseError, match=r"f:7: page-faults: '12,5' is not a number "
                                            r"\(the decimal mark here is '\.'\)"):
        parse_number("12,5", "f", 7, "page-faults", ".")


def test_every_format_reads_its_numbers_through_the_one_reader():
    # no parser converts text to a number itself: numbers.parse_number does, for all
    src = Path(perf_std.__file__).parent
    for p in sorted(src.glob("*.py")):
        if p.name != "numbers.py":
            assert not re.search(r"\bfloat\(", p.read_text()), p.name


def test_toplev_csv_with_a_semicolon(tmp_path):
    # toplev writes its CSV through Python's csv module with the -x separator and prints
    # numbers with Python's format ('.' decimals) whatever the locale (pmu-tools
    # tl_output.OutputCSV, tl_uval.format_value): the issue369 rows as -x';' writes them
    src = FIXTURES / "tma" / "toplev" / "toplev_skl6700k_l1_core_C0_csv_issue369.csv"
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";", lineterminator="\n")
    for line in src.read_text().splitlines():
        if line.startswith("#") or "," not in line or " " in line.split(",")[0]:
            out.write(line + "\n")
        else:
            writer.writerow(next(csv.reader([line])))
    p = tmp_path / "issue369_semicolon.csv"
    p.write_text(out.getvalue())
    want, got = parse_file(src), parse_file(p)
    assert got.fmt == "toplev-csv"
    assert [(v.name, v.value, v.scope, v.below_threshold) for v in got.values] == \
        [(v.name, v.value, v.scope, v.below_threshold) for v in want.values]


def test_toplev_groups_large_values_with_commas_in_every_locale():
    # toplev prints a value over 1000 as Python's "{:16,.1f}" (pmu-tools tl_uval.format_value):
    # the implausible Bad_Speculation of pmu-tools#369 (its CSV prints 13273.4) reads back
    from analysis.tma.formats import toplev_common
    res = parse_file(FIXTURES / "tma" / "toplev" / "toplev_skl6700k_l1_core_C0_csv_issue369.csv")
    raw = [v for v in res.values if v.name == "Bad_Speculation"][0].value
    assert f"{raw:16,.1f}".strip() == "13,273.4"
    assert toplev_common.number(f"{raw:16,.1f}", "f", 3, "Bad_Speculation") == raw
    with pytest.raises(TmaParseError, match=r"f:3: Bad_Speculation: value '13,2' is not a number"):
        toplev_common.number("13,2", "f", 3, "Bad_Speculation")
