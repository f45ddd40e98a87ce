"""Interval mode (perf stat -I, toplev -I) in the model, `stallscope tma` and the funnel,
on the published interval outputs in tests/data/tma (SOURCES.md): every interval kept
with its start and end, one value per file (the time-weighted mean, or the interval
asked for), and every value saying which interval(s) it is of."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from commands import funnel as funnel_cli
from commands import tma as cli
from analysis.tma.formats import parse_file, parse_output
from analysis.tma.funnel import compare
from analysis.tma.model import Interval, timeline
from tests.conftest import REPO

DATA = Path(__file__).parent / "data" / "tma"
KDOC = DATA / "perf_topdown_I1000_kernel-doc.txt"      # 6 intervals, the last 0.69 s
OLD = DATA / "perf_topdown_I1000_old_names_likwid391.txt"   # 8 intervals
NINJA = DATA / "perf_topdown_tgl_perf-ninja112.txt"    # one value for the whole run
ENDS = [1.001141351, 2.006141972, 3.010162040, 4.014009311, 5.017838554, 5.704818971]
RETIRING = [11.5, 13.4, 12.9, 12.5, 11.8, 14.0]


def test_every_interval_kept_with_its_start_and_end():
    res = parse_file(KDOC)
    line = res.timeline()
    assert [(i.index, i.start, i.end) for i in line] == list(zip(range(1, 7), [0.0] + ENDS[:-1], ENDS))
    assert not any(i.start_inferred for i in line)
    assert line[-1].seconds == pytest.approx(0.686980417)
    # each value carries its interval's start beside the end the tool printed
    assert {(v.start, v.interval) for v in res.values} == {(i.start, i.end) for i in line}
    assert parse_file(NINJA).timeline() == [] and parse_file(NINJA).values[0].start is None


def test_time_weighted_mean_is_the_default_of_the_funnel_and_tma():
    res = parse_file(KDOC)
    secs = [i.seconds for i in res.timeline()]
    node = res.collapse(interval="time")["Retiring"]
    assert node.value == pytest.approx(sum(w * v for w, v in zip(secs, RETIRING)) / sum(secs))
    assert node.intervals == res.timeline() and node.samples == 6
    # the plain mean stays what collapse() gives by default, as before
    assert res.collapse()["Retiring"].value == pytest.approx(sum(RETIRING) / 6)
    assert res.interval_text() == "time-weighted mean of 6 intervals, 0.00–5.70 s"
    assert res.interval_text("mean") == "mean of 6 intervals, 0.00–5.70 s"
    assert parse_file(NINJA).interval_text() == "whole run (no intervals)"


@pytest.mark.parametrize("choice,index", [(3, 3), (2.5, 3), (ENDS[2], 3), ("last", 6), (1, 1)])
def test_one_interval_by_number_time_or_last(choice, index):
    res = parse_file(KDOC)
    picked = res.pick_interval(choice)
    assert picked.index == index
    flat = res.collapse(interval=choice)
    assert flat["Retiring"].value == RETIRING[index - 1] and flat["Retiring"].intervals == [picked]
    assert res.interval_text(choice) == f"interval {index} of 6, {picked.text()}"


def test_an_interval_that_is_not_there_says_what_is():
    res = parse_file(KDOC)
    with pytest.raises(KeyError, match=r"no interval 7; it has 6 \(1–6, 0.00–5.70 s\)"):
        res.collapse(interval=7)
    with pytest.raises(KeyError, match=r"no interval holds 9 s; its 6 intervals cover 0.00–5.70 s"):
        res.collapse(interval=9.0)
    with pytest.raises(KeyError, match=r"no intervals \(one value per node for the whole run\)"):
        parse_file(NINJA).collapse(interval=2)


def test_a_copy_cut_from_a_longer_run_infers_its_first_start():
    # the published timestamps without the first two intervals: the first one left began
    # one usual interval (the median gap) before its end, not at 0
    line = timeline(ENDS[2:])
    gaps = [ENDS[3] - ENDS[2], ENDS[4] - ENDS[3], ENDS[5] - ENDS[4]]   # 1.0038, 1.0038, 0.687
    assert line[0].start_inferred and line[0].start == pytest.approx(ENDS[2] - sorted(gaps)[1])
    assert not line[1].start_inferred and line[1].start == ENDS[2]
    assert timeline(ENDS) == [Interval(i, s, e) for i, s, e in zip(range(1, 7), [0.0] + ENDS[:-1], ENDS)]


def test_a_node_missing_in_an_interval_says_so(tmp_path):
    # perf prints "nan" when a metric could not be computed (one recorded cell replaced)
    lines = KDOC.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace("28.1", " nan", 1)
    res = parse_output("".join(lines), source="kdoc-nan")
    node = res.collapse(interval="time")["Backend_Bound"]
    assert [i.index for i in node.intervals] == [1, 3, 4, 5, 6]
    f = compare([res], [parse_file(OLD)], depth=1)
    be = next(r for r in f.all_rows if r.name == "Backend_Bound")
    assert be.base.intervals == ["time-weighted mean of 5 of 6 intervals, 0.00–5.70 s"]
    assert "kdoc-nan: Backend_Bound from 5 of its 6 intervals (not measured in the others)" in f.notes


def test_funnel_names_the_intervals_of_each_file():
    f = compare([parse_file(KDOC)], [parse_file(OLD), parse_file(NINJA)], depth=1)
    note = f.notes[0]
    assert note.startswith("intervals (-I): each file is one run and gives one value per node, "
                           "its intervals' mean weighted by their length (intervals of one "
                           "run are not independent runs); ")
    assert f"{KDOC}: time-weighted mean of 6 intervals, 0.00–5.70 s" in note
    assert f"{OLD}: time-weighted mean of 8 intervals, 0.00–8.01 s" in note
    assert str(NINJA) not in note                       # no intervals: nothing to say
    ret = next(r for r in f.rows if r.name == "Retiring")
    assert ret.base.intervals == ["time-weighted mean of 6 intervals, 0.00–5.70 s"]
    assert ret.cand.intervals == ["time-weighted mean of 8 intervals, 0.00–8.01 s", "whole run"]
    data = f.to_json()
    assert data["interval"] == "time"
    assert asdict(f.doc()) == data                      # results.json reads it back alike
    last = compare([parse_file(KDOC)], [parse_file(OLD)], depth=1, interval="last")
    assert next(r for r in last.rows if r.name == "Retiring").base.values == [14.0]
    assert f"{KDOC}: interval 6 of 6, 5.02–5.70 s" in last.notes[0]


def test_tma_cli_says_which_intervals_and_picks_one(capsys):
    assert cli.main([str(KDOC)]) == 0
    out = capsys.readouterr().out
    assert "# CPU scopes: global; intervals: 6; values: time-weighted mean of 6 intervals, " \
           "0.00–5.70 s" in out
    assert cli.main([str(KDOC), "--interval", "3"]) == 0
    out = capsys.readouterr().out
    assert "values: interval 3 of 6, 2.01–3.01 s" in out and "12.9%" in out
    assert cli.main([str(KDOC), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["intervals"][0] == {"index": 1, "start": 0.0, "end": ENDS[0], "start_inferred": False}
    assert data["values"][0]["start"] == 0.0 and data["values"][0]["interval"] == ENDS[0]
    assert cli.main([str(KDOC), "--interval", "9"]) == 2
    assert "no interval 9; it has 6" in capsys.readouterr().err
    assert cli.main([str(KDOC), "--interval", "soon"]) == 2
    assert "--interval 'soon': expected time, mean, last" in capsys.readouterr().err


@pytest.mark.heavy
def test_funnel_cli_interval_option():
    out = subprocess.run([sys.executable, "-m", "analysis", "funnel", str(KDOC), "--vs", str(OLD),
                          "--interval", "2", "--format", "json"], capture_output=True,
                         text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    ret = next(r for r in data["rows"] if r["node"] == "Retiring")
    assert ret["base"]["values"] == [13.4] and ret["cand"]["values"] == [5.7]
    assert ret["base"]["intervals"] == ["interval 2 of 6, 1.00–2.01 s"]
    md = subprocess.run([sys.executable, "-m", "analysis", "funnel", str(KDOC), "--vs", str(OLD)],
                        capture_output=True, text=True, cwd=REPO,
                        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert md.returncode == 0 and "time-weighted mean of 6 intervals, 0.00–5.70 s" in md.stdout
    assert funnel_cli.main([str(KDOC), "--vs", str(OLD), "--interval", "7"]) == 2
