"""TMA in the paired windows (issue 27, item 5): `perf stat -I` on each server of a paired rep,
its intervals lined up with each variant's windows. This machine has no PMU: the collector
runs through the $PERF replay harness (tests/replay/replay-perf, a real recorded output) and
the alignment is checked on a real interval-mode recording (tests/data/tma/
perf_topdown_I1000_kernel-doc.txt: `perf stat -a --topdown -I1000`, six intervals) placed
against windows of a recorded paired run."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from analysis.compare.tma import paired_tma, tma
from analysis.inputs.paired import PairedWindow
from analysis.inputs.rundir import load_run
from analysis.tma.formats import parse_file
from analysis.tma.windows import in_windows
from collectors.profilers.tma.windows import TmaWindowCounter

DATA = Path(__file__).parent / "data"
KERNEL_DOC = DATA / "tma" / "perf_topdown_I1000_kernel-doc.txt"
REPLAY = Path(__file__).parent / "replay"
# The recording's rows: (interval end, retiring, backend, frontend, bad speculation)
ROWS = [(1.001141351, 11.5, 34.9, 46.9, 6.7), (2.006141972, 13.4, 28.1, 50.4, 8.1),
        (3.010162040, 12.9, 28.1, 51.1, 8.0), (4.014009311, 12.5, 28.6, 51.8, 7.2),
        (5.017838554, 11.8, 33.0, 48.0, 7.2), (5.704818971, 14.0, 27.5, 51.3, 7.3)]
START = 1000.0          # CLOCK_MONOTONIC when perf began counting (a chosen origin)


def _spans(indexes: list[int]) -> list[tuple[float, float]]:
    """Windows covering the given intervals (1-based) of the recording, on CLOCK_MONOTONIC."""
    ends = [0.0] + [r[0] for r in ROWS]
    return [(START + ends[i - 1] + 0.01, START + ends[i] - 0.01) for i in indexes]


def test_a_variant_keeps_only_the_intervals_of_its_own_windows():
    res = parse_file(KERNEL_DOC)
    a = in_windows(res, _spans([1, 3, 5]), START).collapse(interval="mean")
    b = in_windows(res, _spans([2, 4, 6]), START).collapse(interval="mean")
    assert a["Retiring"].value == pytest.approx((11.5 + 12.9 + 11.8) / 3)
    assert b["Retiring"].value == pytest.approx((13.4 + 12.5 + 14.0) / 3)
    assert a["Backend_Bound"].value == pytest.approx((34.9 + 28.1 + 33.0) / 3)
    # an interval mostly outside the windows is left out (under half of it inside)
    half = [(START + 0.0, START + 0.4)]
    assert in_windows(res, half, START).values == []


def test_the_collector_runs_perf_stat_interval_mode_on_each_server(monkeypatch, tmp_path):
    monkeypatch.setenv("STALLSCOPE_REPLAY", str(KERNEL_DOC))
    argv_log = tmp_path / "argv.json"
    monkeypatch.setenv("STALLSCOPE_REPLAY_ARGV", str(argv_log))
    c = TmaWindowCounter(tmp_path, str(REPLAY / "replay-perf"), ["TopdownL1", "TopdownL2"],
                         perf_version=(6, 1, 187))
    c.start({"base": 4242})
    # the replay writes the recording and exits (a real perf counts until stop()'s SIGINT)
    for _ in range(200):
        if (tmp_path / "tma-base.json").is_file() and argv_log.is_file():
            break
        time.sleep(0.05)
    c.stop()
    argv = json.loads(argv_log.read_text())[1:]
    assert argv == ["stat", "-I", "100", "-M", "TopdownL1,TopdownL2", "-j", "-o",
                    str(tmp_path / "tma-base.json"), "-p", "4242"]     # no workload: until SIGINT
    assert (tmp_path / "tma-base.json").read_bytes() == KERNEL_DOC.read_bytes()
    facts = c.fold([PairedWindow(1, "base", mono0=1.0, mono1=2.0)])
    f = facts["tma:base"]
    assert f.status == "ok" and f.file == "tma-base.json" and f.interval_ms == 100
    assert f.start_mono is not None and f.command[0].endswith("replay-perf")


def test_the_report_compares_each_reps_windows_as_pairs(tmp_path):
    """A recorded paired run with the recording placed in each rep: base's windows over
    intervals 1, 3, 5, cand's over 2, 4, 6; the funnel compares the reps as pairs."""
    run_dir = tmp_path / "run"
    shutil.copytree(DATA / "runs" / "mset-demo-paired", run_dir)
    m = json.loads((run_dir / "manifest.json").read_text())
    base, cand = list(m["variants"])[:2]
    for rep in [r for r in m["schedule"] if r["kind"] == "paired"]:
        d = run_dir / rep["dir"]
        doc = json.loads((d / "paired.json").read_text())
        spans = {base: _spans([1, 3, 5]), cand: _spans([2, 4, 6])}
        doc["windows"] = [dict(w, variant=v, mono0=a, mono1=b) for v in (base, cand)
                          for i, (a, b) in enumerate(spans[v]) for w in [doc["windows"][0]]]
        (d / "paired.json").write_text(json.dumps(doc))
        shutil.copy(KERNEL_DOC, d / "tma-server.json")
        facts = json.loads((d / "rep.json").read_text())
        for v in (base, cand):
            facts["collectors"][f"tma:{v}"] = {"backend": "perf", "file": "tma-server.json",
                                               "status": "ok", "start_mono": START,
                                               "interval_ms": 1000}
        (d / "rep.json").write_text(json.dumps(facts))
    run = load_run(run_dir)
    res, srcs, bad = paired_tma(run, base, cand, None)
    assert not bad and len(res[base]) == len(res[cand]) >= 3
    assert all("windows)" in s for s in srcs[base])
    sec = tma(run, base, cand)
    assert sec.status == "measured"
    ret = next(r for r in sec.funnel.rows if r.node == "Retiring")
    # every rep holds the same recording: each pair differs by the same amount, so there is
    # no spread to make an interval from (docs/statistics.md, "No spread, no interval")
    assert ret.delta_pp == pytest.approx((13.4 + 12.5 + 14.0) / 3 - (11.5 + 12.9 + 11.8) / 3)
    assert ret.verdict == "insufficient data" and "every pair differs by the same" in ret.reason
