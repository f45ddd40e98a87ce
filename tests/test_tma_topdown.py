"""perf stat --topdown's column layout (analysis/tma/formats/perf_topdown.py), read from
the published outputs in tests/data/tma (SOURCES.md): values, names, levels, intervals,
older column names, detection, and file:line errors for damaged copies."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analysis.tma.formats import detect_format, parse_file, parse_output
from analysis.tma.model import TmaParseError
from tests.conftest import FIXTURES, REPO

DATA = Path(__file__).parent / "data" / "tma"
NINJA = DATA / "perf_topdown_tgl_perf-ninja112.txt"
KDOC = DATA / "perf_topdown_I1000_kernel-doc.txt"
OLD = DATA / "perf_topdown_I1000_old_names_likwid391.txt"
L1 = ("Retiring", "Bad_Speculation", "Frontend_Bound", "Backend_Bound")


def test_perf_ninja_one_row_after_the_banner():
    res = parse_file(NINJA)
    assert res.fmt == "perf-topdown"
    got = {v.name: (v.value, v.level, v.raw_name, v.line, v.interval) for v in res.values}
    assert got == {"Retiring": (25.1, 1, "tma_retiring", 19, None),
                   "Backend_Bound": (58.7, 1, "tma_backend_bound", 19, None),
                   "Frontend_Bound": (2.7, 1, "tma_frontend_bound", 19, None),
                   "Bad_Speculation": (13.5, 1, "tma_bad_speculation", 19, None)}
    assert sorted(n.name for n in res.tree()) == sorted(L1)
    assert res.commands and "perf stat --topdown -a -C 0" in res.commands[0]
    assert not res.warnings


def test_kernel_doc_intervals_kept_and_averaged():
    res = parse_file(KDOC)
    assert len(res.values) == 6 * 4
    assert sorted({v.interval for v in res.values}) == [
        1.001141351, 2.006141972, 3.010162040, 4.014009311, 5.017838554, 5.704818971]
    last = res.collapse(interval="last")
    assert {k: n.value for k, n in last.items()} == {
        "Retiring": 14.0, "Backend_Bound": 27.5, "Frontend_Bound": 51.3, "Bad_Speculation": 7.3}
    mean = res.collapse()
    assert mean["Retiring"].value == pytest.approx((11.5 + 13.4 + 12.9 + 12.5 + 11.8 + 14.0) / 6)
    assert any("..." in n for n in res.notes)


def test_older_column_names_and_percent_cells_map_onto_the_tree():
    res = parse_file(OLD)
    assert res.fmt == "perf-topdown" and len(res.values) == 8 * 4
    first = {v.name: v.value for v in res.values if v.interval == 1.001195802}
    assert first == {"Retiring": 6.7, "Bad_Speculation": 6.6, "Frontend_Bound": 32.6,
                     "Backend_Bound": 54.0}
    assert all(v.known and v.level == 1 for v in res.values)
    assert {v.raw_name for v in res.values} == {"tma_retiring", "tma_bad_speculation",
                                                "tma_frontend_bound", "tma_backend_bound"}


def test_value_count_mismatch_names_file_and_line(tmp_path):
    bad = tmp_path / "short.txt"
    lines = KDOC.read_text().splitlines(keepends=True)
    lines[3] = lines[3].rsplit(None, 1)[0] + "\n"          # drop the last value
    bad.write_text("".join(lines))
    with pytest.raises(TmaParseError, match=rf"{bad}:4: 3 values for 4 columns"):
        parse_file(bad)


def test_truncated_header_names_file_and_line(tmp_path):
    bad = tmp_path / "cut.txt"
    text = NINJA.read_text().replace("%  tma_frontend_bound %  tma_bad_speculation ", "%  ")
    bad.write_text(text)
    with pytest.raises(TmaParseError, match=rf"{bad}:18: malformed --topdown header"):
        parse_file(bad, fmt="perf-topdown")
    cut = tmp_path / "nothing.txt"
    cut.write_text("".join(NINJA.read_text().splitlines(keepends=True)[:18]))
    with pytest.raises(TmaParseError, match=rf"{cut}:18: a --topdown header row with no value"):
        parse_file(cut)


def test_detection_picks_topdown_only_for_its_files():
    for f in (NINJA, KDOC, OLD):
        assert detect_format(f.read_text()) == "perf-topdown", f
    others = [p for p in (FIXTURES / "tma").rglob("*") if p.is_file()
              and p.suffix in (".txt", ".csv", ".json", ".jsonl", ".stdout", ".stderr")]
    others += [DATA / "toplev3_skl_l2_perf-book.txt", DATA / "toplev3_skl_l3_perf-book.txt"]
    assert len(others) > 10
    for p in others:
        try:
            fmt = detect_format(p.read_text(errors="replace"), str(p))
        except TmaParseError:
            continue
        assert fmt != "perf-topdown", p


def test_cli_accepts_the_format():
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "analysis", "tma", "--format", "perf-topdown",
                          str(NINJA)], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "Backend_Bound" in out.stdout and "58.7" in out.stdout


def test_nan_cell_is_kept_as_no_value():
    # perf prints "nan" when a metric could not be computed; here one recorded cell is
    # replaced by it, the rest of the file as published.
    lines = KDOC.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace("34.9", " nan")
    res = parse_output("".join(lines))
    row = {v.name: v.value for v in res.values if v.interval == 1.001141351}
    assert row == {"Retiring": 11.5, "Backend_Bound": None, "Frontend_Bound": 46.9,
                   "Bad_Speculation": 6.7}
    assert res.collapse()["Backend_Bound"].value == pytest.approx((28.1 + 28.1 + 28.6 + 33.0 + 27.5) / 5)
