"""`python -m analysis compare` against a REAL recorded run directory
(tests/data/runs/io-threads-mset, see its SOURCES.md): every number the report shows is
recomputed here independently from the raw files (bench.csv, perf.folded)."""
from __future__ import annotations

import csv
import gzip
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ttest_ind

from analysis.compare import profile_reps
from commands import compare as cli
from analysis.compare.options import DEFAULT_TOP
from analysis.inputs.manifest import Profiling
from analysis.inputs.rundir import read_rep_facts
from analysis.profile.pprof import load_profile, read_pprof, sample_types
from tests.conftest import REPO

RUN = REPO / "tests" / "data" / "runs" / "io-threads-mset"
FOCUS = ["dictFind", "lookupKey", "dictSdsKeyCompare", "msetGenericCommand"]


def run_compare(run_dir: Path, out: Path, *extra: str) -> tuple[str, dict]:
    assert cli.main([str(run_dir), "--out", str(out), *extra]) == 0
    return (out / "report.md").read_text(), json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[str, dict, Path]:
    out = tmp_path_factory.mktemp("report")
    md, res = run_compare(RUN, out)
    return md, res, out


# ---- independent recomputation from the raw files --------------------------------

def bench_ops(variant: str) -> list[float]:
    mf = json.loads((RUN / "manifest.json").read_text())
    out = []
    for rep in mf["schedule"]:
        if rep["variant"] == variant and rep["kind"] == "throughput":
            with open(RUN / rep["dir"] / "bench.csv") as f:
                rows = list(csv.DictReader(f))
            out.append(float(rows[0]["rps"]))
    return out


def folded_lines(path: Path):
    for line in path.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        yield stack.split(";"), float(count)


def hand_shares(variant: str, fn: str, thread: str) -> tuple[list[float], list[float]]:
    """flat and cumulative % per profile rep; thread 'main' = comm redis-server only."""
    flat, cum = [], []
    for rep in (4, 5, 6):
        tot = f = c = 0.0
        for frames, w in folded_lines(RUN / variant / str(rep) / "perf.folded"):
            if thread == "main" and frames[0] != "redis-server":
                continue
            tot += w
            f += w if frames[-1] == fn else 0.0
            c += w if fn in frames[1:] else 0.0
        flat.append(100 * f / tot)
        cum.append(100 * c / tot)
    return flat, cum


def hand_samples(variant: str, fn: str) -> list[int]:
    """Main-thread samples with `fn` as the leaf per profile rep: the folded weights are
    cpu-clock periods of 1e9/999 ns."""
    out = []
    for rep in (4, 5, 6):
        w = sum(w for frames, w in folded_lines(RUN / variant / str(rep) / "perf.folded")
                if frames[0] == "redis-server" and frames[-1] == fn)
        out.append(round(w / (1e9 / 999)))
    return out


# ---- tests -------------------------------------------------------------------------

@pytest.mark.heavy
def test_throughput_medians_equal_the_bench_csv_files(report):
    md, res, _ = report
    base, cand = bench_ops("base"), bench_ops("cand")
    assert base == [38647.34, 20314.88, 23054.75]      # the recorded files, rep 1 2 3
    row = res["throughput"][0]
    assert row["base"]["median"] == statistics.median(base) == 23054.75
    assert row["cand"]["median"] == statistics.median(cand) == 4340.75
    assert row["base"]["values"] == base and row["base"]["reps"] == [1, 2, 3]
    assert "23,055 ops/s" in md and "4,341 ops/s" in md
    # 3 reps per side: no rank interval reaches 95% (3+3 tops out at 90%), so the
    # default falls back to Welch (docs/statistics.md); its estimator is the difference
    # of means, and the relative change is the same on log values: the ratio of the
    # geometric means, with scipy's Welch interval of the logs.
    ch = row["change"]
    # the throughput row and its two latency rows are judged together (Benjamini-Hochberg,
    # docs/statistics.md): two of three move, so every interval is at 1 - 0.05 * 2/3
    fam = next(f for f in res["fdr"] if f["family"] == "throughput and latency")
    assert (fam["comparisons"], fam["discoveries"]) == (3, 2)
    assert "Welch" in ch["method"]
    assert ch["confidence"] == pytest.approx(fam["level"]) == pytest.approx(1 - 0.05 * 2 / 3)
    assert ch["delta"] == pytest.approx(statistics.mean(cand) - statistics.mean(base))
    rel = statistics.geometric_mean(cand) / statistics.geometric_mean(base) - 1
    assert ch["rel"] == pytest.approx(rel)
    assert f"{rel * 100:+.1f}%".replace("-", "−") in md          # −85.5%
    want = ttest_ind(np.log(cand), np.log(base), equal_var=False).confidence_interval(fam["level"])
    assert (ch["rel_ci_low"], ch["rel_ci_high"]) == (pytest.approx(math.expm1(want.low)),
                                                     pytest.approx(math.expm1(want.high)))
    # With the base reps this spread (CV 36%, one fast rep) the absolute interval reaches
    # past 0, but every cand rep is 4-13x slower than every base rep: the printed, relative
    # interval clears 0 and decides the verdict.
    assert ch["ci_low"] < 0 < ch["ci_high"] and ch["rel_ci_high"] < 0
    assert ch["verdict"] == "regression"
    assert "| ❌ regression |" in md.split("### Throughput", 1)[1].split("\n\n", 2)[1]


def test_focus_shares_equal_hand_parsed_perf_folded(report):
    md, res, _ = report
    p = res["profile"]
    assert p["thread"] == "main"            # io-threads present -> main-thread view by default
    assert "io-threads hold up to" in p["thread_note"]
    assert [r["name"] for r in p["focus"]] == FOCUS
    for row in p["focus"]:
        for v in ("base", "cand"):
            flat, cum = hand_shares(v, row["name"], "main")
            assert row[f"{v}_flat"]["values"] == pytest.approx(flat)
            assert row[f"{v}_cum"]["values"] == pytest.approx(cum)
            assert row[f"{v}_flat"]["median"] == pytest.approx(statistics.median(flat))
    d = p["focus"][0]
    bflat, _ = hand_shares("base", "dictFind", "main")
    cflat, _ = hand_shares("cand", "dictFind", "main")
    # each side's share with the samples behind it: weight / the 999 Hz cpu-clock period
    # (these rep.json files predate perf's sample count), summed over the profile reps
    bn, cn = (sum(hand_samples(v, "dictFind")) for v in ("base", "cand"))
    assert (bn, cn) == (556, 709)
    assert sum(d["base_flat_samples"]) == pytest.approx(bn)
    line = (f"| dictFind | {statistics.median(bflat):.1f}% ({bn:,} samples) | "
            f"{statistics.median(cflat):.1f}% ({cn:,} samples) | ")
    assert line in md                          # | dictFind | 29.9% (556 samples) | 5.5% ...
    assert d["flat_change"]["unit"] == "pp"
    # 3 profile reps a side: Welch, whose estimator is the difference of means
    assert d["flat_change"]["delta"] == pytest.approx(statistics.mean(cflat) - statistics.mean(bflat))
    assert d["flat_change"]["estimator"] == "difference of means"
    # the other (process-wide) view is in the details, computed over all threads
    allv = {r["name"]: r for r in p["focus_other_view"]}
    flat_all, _ = hand_shares("cand", "dictFind", "all")
    assert allv["dictFind"]["cand_flat"]["values"] == pytest.approx(flat_all)
    # io_thd_1 dilutes: cand's process-wide share is about half the main-thread share
    assert statistics.median(flat_all) < 0.6 * statistics.median(cflat)


def test_thread_all_option_gives_process_wide_shares(tmp_path):
    _, res = run_compare(RUN, tmp_path, "--thread", "all", "--focus", "dictFind")
    row = res["profile"]["focus"][0]
    assert res["profile"]["thread"] == "all" and row["thread"] == "all"
    assert row["base_flat"]["values"] == pytest.approx(hand_shares("base", "dictFind", "all")[0])
    assert res["profile"]["focus_other_view"] == []


def test_thread_groups_and_callers(report):
    _, res, _ = report
    threads = {t["group"]: t for t in res["profile"]["threads"]}
    assert set(threads) == {"main", "io-threads"}
    io = []
    for rep in (4, 5, 6):
        tot = sum(w for _, w in folded_lines(RUN / "cand" / str(rep) / "perf.folded"))
        io.append(100 * sum(w for fr, w in folded_lines(RUN / "cand" / str(rep) / "perf.folded")
                            if fr[0] == "io_thd_1") / tot)
    assert threads["io-threads"]["cand"]["values"] == pytest.approx(io)
    assert threads["io-threads"]["base"]["median"] == 0.0
    # caller view of dictFind, base, main thread, reps merged, by hand
    tot = by = 0.0
    for rep in (4, 5, 6):
        for fr, w in folded_lines(RUN / "base" / str(rep) / "perf.folded"):
            if fr[0] != "redis-server":
                continue
            tot += w
            if "dictFind" in fr[1:] and fr[fr.index("dictFind") - 1] == "lookupKey":
                by += w
    rows = [c for c in res["profile"]["callers"] if c["function"] == "dictFind"]
    top = rows[0]
    assert top["caller"] == "lookupKey"
    assert top["base_share"] == pytest.approx(100 * by / tot)


def test_movers_listed_by_significance(report):
    md, res, _ = report
    movers = res["profile"]["movers"]
    assert len(movers) == DEFAULT_TOP
    first = movers[0]
    # the main thread's busy-wait for io-threads is the biggest established move
    # (compiler clone suffixes such as .part.0 are dropped: one name across builds)
    assert first["name"] == "handleClientsWithPendingReadsUsingThreads"
    assert first["flat_change"]["ci_low"] > 0
    assert "<summary>Top movers (main thread)</summary>" in md


def test_flame_graphs_and_pprof_written(report):
    _, res, out = report
    a = res["artifacts"]
    assert a["diff_flamegraph"] == "flame-diff.svg" and a["errors"] == []
    for v in ("base", "cand"):
        svg = (out / a["flamegraphs"][v]).read_text()
        assert svg.startswith("<?xml") and "dictFind" in svg
        with gzip.open(out / a["pprof"][v]) as f:
            assert f.read(2)                      # gzipped protobuf
        total = sum(w for rep in (4, 5, 6)
                    for _, w in folded_lines(RUN / v / str(rep) / "perf.folded"))
        assert read_pprof(out / a["pprof"][v]).total == pytest.approx(total)
        # cpu-clock folds hold sample periods: ns, labelled as such, not "samples"
        assert sample_types(load_profile(out / a["pprof"][v])) == [("samples", "count"),
                                                                    ("cpu", "nanoseconds")]
        assert re.search(r"[\d,]+ ns, [\d.]+%", svg)
    assert res["profile"]["weight_unit"] == "nanoseconds"
    assert "flame-diff.svg" in (out / "report.md").read_text()


def test_tma_absent_says_why_from_the_manifest(report):
    md, res, _ = report
    assert res["tma"]["status"] == "absent"
    assert ("TMA not collected: no hardware PMU on this host (KVM guest; perf stat -e cycles: "
            "&lt;not supported&gt;).") in md
    assert res["summary"][-1]["what"] == "tma absent"
    assert res["summary"][-1]["note"] == "no hardware PMU on this host"


def test_environment_and_reproduce(report):
    md, res, _ = report
    mf = json.loads((RUN / "manifest.json").read_text())
    assert "L3 32 MiB" in md and "Kernel 6.18.44-fc-v657" in md
    assert mf["variants"]["base"]["binary_sha256"][:16] in md
    assert "io-threads=2 io-threads-do-reads=yes" in md
    assert res["reproduce"]["report"] == f"stallscope compare {RUN}"
    assert "bash tests/data/runs/record.sh" in md


@pytest.mark.heavy
def test_deterministic_twice_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run_compare(RUN, a)
    run_compare(RUN, b)
    for name in ("report.md", "results.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert json.loads((a / "results.json").read_text())["schema"] == 4


def _copy_run(tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(RUN, dst)
    return dst


@pytest.mark.heavy
def test_tma_replay_shows_the_funnel(tmp_path, fixtures_dir):
    run = _copy_run(tmp_path)
    top = fixtures_dir / "tma" / "toplev"
    # REAL published SPR toplev outputs (veb = base, eytzinger = cand), one per side, under
    # the name the toplev collector writes (the format is told by the content).
    shutil.copy(top / "toplev_spr8488c_l2_veb_nomux_v.txt", run / "base" / "4" / "tma.csv")
    shutil.copy(top / "toplev_spr8488c_l2_eytzinger_nomux_v.txt", run / "cand" / "4" / "tma.csv")
    mf = json.loads((run / "manifest.json").read_text())
    mf["tma"] = {"backend": "replay", "status": "replay",
                 "reason": "test replay of tests/data/fixtures/tma/toplev SPR veb vs eytzinger"}
    (run / "manifest.json").write_text(json.dumps(mf))
    md, res = run_compare(run, tmp_path / "out")
    assert res["tma"]["status"] == "replay"
    assert res["tma"]["sources"] == {"base": ["base/4/tma.csv"], "cand": ["cand/4/tma.csv"]}
    rows = {r["node"]: r for r in res["tma"]["funnel"]["rows"]}
    assert rows["Backend_Bound.Memory_Bound"]["base"]["median"] == 21.8
    assert rows["Backend_Bound.Memory_Bound"]["cand"]["median"] == 11.0
    assert "**Replay:**" in md and "| └ Memory_Bound | % Slots | 21.8% | 11.0% | −10.8 pp |" in md
    assert "TMA not collected" not in md
    tma_item = [s for s in res["summary"] if s["what"] == "tma"][0]
    assert "REPLAY" in tma_item["note"] and "REPLAY" in md.split("**Summary:**", 1)[1]
    assert "funnel_markdown" not in res["tma"]                   # data, not Markdown
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="tma-replay"' in html and 'class="plot funnel-plot"' in html
    assert "Memory_Bound −10.8 pp: Memory_Bound fell" in html


@pytest.mark.heavy
def test_bad_manifest_names_file_and_line(tmp_path):
    run = _copy_run(tmp_path)
    (run / "manifest.json").write_text('{"schema": 1,\n "run_id": oops}\n')
    r = subprocess.run([sys.executable, "-m", "analysis", "compare", str(run), "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert f"{run / 'manifest.json'}:2: malformed JSON" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.heavy
def test_bad_folded_line_names_file_and_line(tmp_path):
    run = _copy_run(tmp_path)
    f = run / "cand" / "5" / "perf.folded"
    lines = f.read_text().splitlines()
    lines.insert(2, "redis-server;main;aeMain twelve")
    f.write_text("\n".join(lines) + "\n")
    r = subprocess.run([sys.executable, "-m", "analysis", "compare", str(run), "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert f"{f}:3: sample count 'twelve' is not a number" in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_run_dir_and_unknown_variant(tmp_path, capsys):
    assert cli.main([str(tmp_path / "nope")]) == 2
    assert "no manifest.json here" in capsys.readouterr().err
    assert cli.main([str(RUN), "--out", str(tmp_path), "--cand", "other"]) == 2
    assert "no variant 'other' (has ['base', 'cand'])" in capsys.readouterr().err


@pytest.mark.heavy
def test_failed_rep_is_left_out_and_said(tmp_path):
    run = _copy_run(tmp_path)
    mf = json.loads((run / "manifest.json").read_text())
    for rep in mf["schedule"]:
        if rep["dir"] == "base/1":
            rep["status"], rep["reason"] = "failed", "server exited (test)"
    (run / "manifest.json").write_text(json.dumps(mf))
    md, res = run_compare(run, tmp_path / "o")
    assert res["throughput"][0]["base"]["values"] == [20314.88, 23054.75]
    assert res["throughput"][0]["change"]["verdict"] == "insufficient data"
    assert "failed reps left out: base/1 (server exited (test))" in md


@pytest.mark.heavy
def test_l3_warning_of_the_run_is_a_note_in_the_report(tmp_path):
    run = _copy_run(tmp_path)
    mf = json.loads((run / "manifest.json").read_text())
    warn = ("case mset-10keys (size small): the dataset is about 12.3 MiB, not larger than "
            "this host's L3 (32 MiB)")
    mf["dataset"] = dict(mf.get("dataset") or {}, l3_warning=warn)
    (run / "manifest.json").write_text(json.dumps(mf))
    md, res = run_compare(run, tmp_path / "o")
    assert warn in res["notes"]
    assert f"> Note: {warn}" in md.replace("\\", "")


@pytest.mark.heavy
def test_help_has_examples():
    r = subprocess.run([sys.executable, "-m", "analysis", "compare", "--help"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0 and "examples:" in r.stdout and "--thread" in r.stdout


PAIRED = REPO / "tests" / "data" / "runs" / "paired-hz"


def test_paired_windows_analysed_as_pairs(tmp_path):
    md, res = run_compare(PAIRED, tmp_path)
    a, b = [], []
    for rep in (1, 2):
        doc = json.loads((PAIRED / "paired" / str(rep) / "paired.json").read_text())
        wa = [w["calls_per_s"] for w in doc["windows"] if w["variant"] == "a"]
        wb = [w["calls_per_s"] for w in doc["windows"] if w["variant"] == "b"]
        a += wa
        b += wb
    row = res["paired"][0]
    # 2 reps are too few for an interval over reps: the window pairs, and the method says
    # what that interval leaves out (pair_clusters.py)
    assert row["base"]["values"] == pytest.approx(a) and row["cand"]["values"] == pytest.approx(b)
    assert row["base"]["reps"] == [1, 1, 2, 2]
    assert row["base"]["median"] == pytest.approx(statistics.median(a))
    # paired, not Mann-Whitney; 4 pairs cannot reach 95% with signed ranks: paired t
    assert row["change"]["method"].startswith("paired t-interval")
    assert "over 4 window pairs of 2 rep(s)" in row["change"]["method"]
    assert "leaves out the rep-to-rep variation" in row["change"]["method"]
    assert f"{statistics.median(a):,.0f} ops/s" in md
    assert res["summary"][0]["what"] == "paired throughput"
    assert "Paired throughput" in md.split("**Summary:**", 1)[1].split("\n", 1)[0]
    # b's profile rep failed in the recorded run: left out, and said
    assert res["profile"]["available"] is False
    assert "no profile reps (perf.folded or profile.pb.gz) for b" in md
    assert "failed reps left out: b/1 (KeyError: 'b')" in md
    assert res["throughput"] == []          # a/1 is a profile rep, not a throughput rep


@pytest.mark.heavy
def test_no_pmu_tma_output_and_unreadable_tma_file(tmp_path, fixtures_dir):
    run = _copy_run(tmp_path)
    mf = json.loads((run / "manifest.json").read_text())
    mf["tma"] = {"backend": "perf", "status": "failed", "reason": None}
    (run / "manifest.json").write_text(json.dumps(mf))
    nopmu = fixtures_dir / "tma" / "perf" / "no_pmu_vm"
    # REAL perf 6.1 output of this kind of VM: falls back silently, exit 0, <not supported>
    for v in ("base", "cand"):
        shutil.copy(nopmu / "M_TopdownL1_csv.stdout", run / v / "4" / "tma.csv")
        shutil.copy(nopmu / "M_TopdownL1_csv.stderr", run / v / "4" / "tma.stderr")
    md, res = run_compare(run, tmp_path / "o1")
    assert res["tma"]["status"] == "absent"
    assert res["tma"]["reason"].startswith("no hardware PMU (")
    assert "TMA not collected: no hardware PMU (" in md
    # a truncated file: the report still comes out, and names the file
    (run / "base" / "4" / "tma.csv").unlink()
    (run / "base" / "4" / "tma.stderr").unlink()      # else the no-PMU evidence wins
    (run / "base" / "4" / "tma.csv").write_text("garbage that is no TMA output\n")
    md, res = run_compare(run, tmp_path / "o2")
    assert "unreadable TMA output: " in res["tma"]["reason"]
    assert str(run / "base" / "4" / "tma.csv") in res["tma"]["reason"]


# ---- CPU time per operation (ns/op) -------------------------------------------------

def hand_ns_per_op(variant: str, fn: str | None, thread: str) -> tuple[list[float], list[float]]:
    """flat and cumulative ns per MSET per profile rep, from the raw files only: the folded
    weights are cpu-clock periods in ns (SOURCES.md); record.sh attached perf before the
    load and stopped it after, so every one of the -n requests in rep.json's bench command
    ran inside the profile. fn None = all samples of the view."""
    flat, cum = [], []
    for rep in (4, 5, 6):
        d = RUN / variant / str(rep)
        argv = json.loads((d / "rep.json").read_text())["commands"]["bench"].split()
        n = int(argv[argv.index("-n") + 1])
        # the server's own count agrees: INFO commandstats says 40000 MSET calls
        info = (d / "info.txt").read_text()
        assert f"cmdstat_mset:calls={n}," in info
        f = c = 0.0
        for frames, w in folded_lines(d / "perf.folded"):
            if thread == "main" and frames[0] != "redis-server":
                continue
            f += w if fn is None or frames[-1] == fn else 0.0
            c += w if fn is None or fn in frames[1:] else 0.0
        flat.append(f / n)
        cum.append(c / n)
    return flat, cum


def test_cpu_time_per_operation_equals_hand_computation(report):
    md, res, out = report
    p = res["profile"]
    assert p["per_op"] is True and p["per_op_command"] == "MSET"
    assert p["ops"] == {"base": [40000, 40000, 40000], "cand": [40000, 40000, 40000]}
    assert "-n" in p["per_op_basis"]
    for row in p["focus"]:              # main-thread view, as the shares
        for v in ("base", "cand"):
            flat, cum = hand_ns_per_op(v, row["name"], "main")
            assert row[f"{v}_flat_ns"]["values"] == pytest.approx(flat)
            assert row[f"{v}_cum_ns"]["values"] == pytest.approx(cum)
            assert row[f"{v}_flat_ns"]["median"] == pytest.approx(statistics.median(flat))
        assert row["flat_ns_change"]["unit"] == "ns/op"
    for row in p["focus_other_view"]:   # the process-wide view divides all threads' ns
        flat, _ = hand_ns_per_op("cand", row["name"], "all")
        assert row["cand_flat_ns"]["values"] == pytest.approx(flat)
    tot_b, _ = hand_ns_per_op("base", None, "main")
    tot_c, _ = hand_ns_per_op("cand", None, "main")
    assert p["per_op_total"]["base"]["values"] == pytest.approx(tot_b)
    assert p["per_op_total"]["cand"]["values"] == pytest.approx(tot_c)
    # dictFind: base 4.65 µs per MSET (its main-thread median), in the table and summary
    d = next(r for r in p["focus"] if r["name"] == "dictFind")
    bflat, _ = hand_ns_per_op("base", "dictFind", "main")
    cflat, _ = hand_ns_per_op("cand", "dictFind", "main")
    assert f"{statistics.median(bflat) / 1000:.2f} µs" == "4.65 µs"
    rel = statistics.geometric_mean(cflat) / statistics.geometric_mean(bflat) - 1
    assert f"| dictFind (flat) | 4.65 µs | 5.83 µs | {rel * 100:+.0f}% |" == \
        "| dictFind (flat) | 4.65 µs | 5.83 µs | +28% |"
    assert "| dictFind (flat) | 4.65 µs | 5.83 µs | +28% |" in md
    assert "CPU time per MSET (main thread):" in md
    # share falls (dilution by the io-thread's stolen CPU), cost per MSET rises: the
    # summary gives the per-op verdict and keeps the share verdict in sight
    assert d["flat_change"]["verdict"] == "improvement"
    assert d["flat_ns_change"]["verdict"] == "regression"
    item = next(i for i in res["summary"] if i["what"] == "focus" and i["subject"] == "dictFind")
    share, cost = item["values"]
    assert item["thread"] == "main" and share["verdict"] == "improvement"
    assert (cost["base"], cost["cand"]) == (pytest.approx(statistics.median(bflat)),
                                           pytest.approx(statistics.median(cflat)))
    assert item["verdict"] == "regression"
    line = md.split("**Summary:**", 1)[1].split("\n", 1)[0]
    # the share fell only because io-threads took CPU: dilution, said so beside the verdict
    assert "dictFind (flat, main thread)" in line and "share down by dilution, cost per op up" in line
    assert item["note"] == "share down by dilution, cost per op up"
    assert "4.65 µs → 5.83 µs per MSET" in line
    html = (out / "report.html").read_text()
    assert 'id="per-op"' in html and "4.65 µs" in html
    # movers carry the per-op cost too (cheap: same weights)
    assert all(m["flat_ns_change"] is not None for m in p["movers"])


def test_per_op_from_perf_attach_time_and_request_cap():
    """collectors.run layout (paired-hz/a/1): ops = ops/s × profile window, capped at the
    requests the load generator completed when perf outlived the load."""
    from analysis.profile import stacks as profile
    d = PAIRED / "a" / "1"
    facts = json.loads((d / "rep.json").read_text())
    stacks = profile.read_folded(d / "perf.folded")
    recorded = read_rep_facts(d)
    w = profile_reps.window_ops(d, recorded, [])
    rps = float(next(csv.DictReader(open(d / "bench.csv")))["rps"])
    assert rps * facts["window"]["profile_window_s"] > facts["bench"]["requests"]   # 21440 > 20440
    assert w.ops == facts["bench"]["requests"] == 20440 and "perf outlived the load" in w.basis
    # the weights are taken as ns: perf recorded cpu-clock
    assert profile_reps.weights_not_ns(d, stacks, Profiling(), recorded) is None
    # 124 samples at 999 Hz cpu-clock: 1,001,001 ns each
    assert stacks.total == 124 * 1001001


def test_per_op_from_recorded_attach_time(tmp_path):
    """rep.json collectors.perf.window_s (perf's own attach time) × the rep's ops/s; the
    demo's base/6 values (runs/20261122-000940-mset-50keys) written into a copy."""
    run = _copy_run(tmp_path)
    d = run / "base" / "4"
    facts = json.loads((d / "rep.json").read_text())
    facts["collectors"] = {"perf": {"command": ["perf", "record", "-e", "cpu-clock", "-F", "999"],
                                    "frequency_hz": 999, "window_s": 1.0}}
    facts["window"]["profile_window_s"] = 16.0
    (d / "rep.json").write_text(json.dumps(facts))
    w = profile_reps.window_ops(d, read_rep_facts(d), [])
    assert w.ops == pytest.approx(30959.75 * 1.0) and "perf's recorded attach time" in w.basis


@pytest.mark.heavy
def test_no_operation_counts_omits_per_op_and_says_why(tmp_path):
    run = _copy_run(tmp_path)
    for f in ("bench.csv", "bench.txt"):             # a profile rep without its bench output
        (run / "cand" / "5" / f).unlink()
    md, res = run_compare(run, tmp_path / "out")
    p = res["profile"]
    assert p["per_op"] is False and p["focus"][0]["base_flat_ns"] is None
    assert "no load-generator output" in p["per_op_reason"]
    assert "No CPU time per operation: the profile reps hold no load-generator output" in md
    assert "CPU time per MSET" not in md
    assert len(res["summary"][1]["values"]) == 1       # summary falls back to shares alone
    assert "share:" not in md.split("**Summary:**", 1)[1].split("\n", 1)[0]
    # weights that are not CPU time (an event other than cpu-clock) are refused, not divided
    mf = json.loads((run / "manifest.json").read_text())
    mf["profiling"]["event"] = "cycles"
    (run / "manifest.json").write_text(json.dumps(mf))
    _, res = run_compare(run, tmp_path / "out2")
    assert "not CPU time (perf event cycles" in res["profile"]["per_op_reason"]
    assert res["profile"]["weight_unit"] == "samples"


RDB = Path(__file__).parent / "data" / "runs" / "valkey-rdb-load-1m"


def test_an_rdb_load_run_reports_its_load_times(tmp_path):
    md, res = run_compare(RDB, tmp_path)
    want = {}
    for v in ("base", "prefetch"):
        want[v] = sorted(json.loads((RDB / v / str(i) / "rep.json").read_text())
                         ["rdb_load_result"]["load_seconds_s"] for i in range(1, 6))
    (row,) = res["throughput"]
    assert (row["metric"], row["unit"], row["higher_is_better"]) == ("load time", "s", False)
    assert sorted(row["base"]["values"]) == pytest.approx(want["base"])
    assert sorted(row["cand"]["values"]) == pytest.approx(want["prefetch"])
    assert row["base"]["median"] == pytest.approx(statistics.median(want["base"]))
    assert row["change"]["rel_ci_low"] is not None
    top = res["summary"][0]
    assert top["what"] == "throughput" and top["values"][0]["measure"] == "load time"
    assert md.split("**Summary:**", 1)[1].lstrip().startswith("RDB load time")
    assert "no throughput reps" not in md
