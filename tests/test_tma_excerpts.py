"""perf stat excerpts pasted without their header lines (no `Performance counter stats`
banner, no -I `# time counts unit events` header), in any vendor's names and any locale,
are recognised by format detection and read as the whole recording is. The excerpts are
cut from real recordings (tests/data/tma/SOURCES.md, "Excerpts without header lines")."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from analysis.tma.formats import FORMATS, detect_format, parse_file, perf_std
from analysis.tma.model import TmaParseError

REPO = Path(__file__).resolve().parents[1]
EX = REPO / "tests" / "data" / "tma" / "excerpts"
TMA = REPO / "tests" / "data" / "fixtures" / "tma"
DATA = REPO / "tests" / "data" / "tma"

# excerpt -> the whole recording it was cut from
CUT_FROM = {
    "amd_epyc9254_epoll-et_noheader.txt": TMA / "amd" / "amd_epyc9254_rusttcp_epoll-et.txt",
    "arm_n2_lkml_v4_noheader.txt": TMA / "arm" / "arm_neoverse_n2_lkml_v4_topdownl1.txt",
    "perf_r100_TopdownL1_nnbsp_comma_noheader.txt": DATA / "perf_r100_TopdownL1_nnbsp_comma_jsoniter.txt",
    "perf_I1000_std_fr_FR_noheader.txt": DATA / "locale" / "perf_I1000_std_fr_FR.txt",
}


def values(result) -> list[tuple]:
    return [(v.name, v.value, v.scope, v.interval, v.multiplex) for v in result.values]


@pytest.mark.parametrize("name", sorted(CUT_FROM))
def test_excerpt_is_detected_as_perf_stat(name):
    text = (EX / name).read_text()
    assert "Performance counter stats" not in text and "# time" not in text   # really headerless
    assert detect_format(text) == "perf"


@pytest.mark.parametrize("name", ["amd_epyc9254_epoll-et_noheader.txt", "arm_n2_lkml_v4_noheader.txt",
                                  "perf_r100_TopdownL1_nnbsp_comma_noheader.txt"])
def test_excerpt_reads_as_the_whole_recording(name):
    """AMD's and Arm's bare names (no tma_), '.' and ',' decimals, U+202F groups: the same
    nodes, values and running shares as the file it was cut from, in the same tree."""
    cut, whole = parse_file(EX / name), parse_file(CUT_FROM[name])
    assert cut.catalog.model == whole.catalog.model
    assert values(cut) == values(whole) and len(cut.values) >= 4


def test_amd_excerpt_values():
    r = parse_file(EX / "amd_epyc9254_epoll-et_noheader.txt")
    assert r.catalog.model == "amdzen4"
    assert r.get("backend_bound_memory") == 18.0 and r.get("frontend_bound_latency") == 52.3


def test_interval_excerpt_in_a_decimal_comma_locale():
    """-I without its header, fr_FR (decimal comma, U+202F groups): detected as perf stat,
    every counter read as in the whole file (2 001,19 msec = 2001.19); it holds no top-down
    metric (recorded without a PMU), and the error says that, not 'unrecognised format'."""
    name = "perf_I1000_std_fr_FR_noheader.txt"
    cut = perf_std.counters((EX / name).read_text(), name)
    whole = perf_std.counters(CUT_FROM[name].read_text(), "whole")
    assert [(c.interval, c.event, c.count, c.unit) for c in cut] == \
        [(c.interval, c.event, c.count, c.unit) for c in whole]
    assert (cut[0].interval, cut[0].event, cut[0].count) == (1.000038403, "task-clock", 2001.19)
    with pytest.raises(TmaParseError, match="no top-down node found"):
        parse_file(EX / name)


def test_tma_command_on_a_headerless_excerpt():
    """The issue's case: `stallscope tma` on the excerpt, no --format."""
    from commands import tma as cli
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([str(EX / "amd_epyc9254_epoll-et_noheader.txt")]) == 0
    assert "backend_bound_memory" in out.getvalue() and "18.0" in out.getvalue()


def test_headerless_topdown_rows_are_not_taken_for_perf_stat():
    """--topdown value rows without their column header are numbers only, not counter
    lines: the kernel's -I rows (timestamp first) and perf-ninja #112's one row."""
    interval_rows = (DATA / "perf_topdown_I1000_kernel-doc.txt").read_text().splitlines()[2:8]
    assert len(interval_rows) == 6 and not perf_std.detect(interval_rows)
    lines = (DATA / "perf_topdown_tgl_perf-ninja112.txt").read_text().splitlines()
    row = lines[lines.index(next(l for l in lines if "%  tma_retiring" in l)) + 1]
    assert row.split() == ["25.1", "58.7", "2.7", "13.5"] and not perf_std.detect([row])


def test_unrecognised_text_names_the_formats_to_force(tmp_path):
    f = TMA.parent / "parca" / "window.txt"
    with pytest.raises(TmaParseError, match=r"unrecognised format: .* to force one pass --format "
                                            r"NAME \(fmt=NAME\), NAME one of toplev, toplev-csv, perf, ") as e:
        parse_file(f)
    assert all(name in str(e.value) for name in FORMATS)
