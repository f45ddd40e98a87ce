"""The README's config-only A/B, for real: Valkey 9 from its Debian source, the
io-threads GET case, prefetch-batch-max-size 0 vs 16 in one server process (paired
windows), then the report. Valkey's keyspace is a hashtable (hashtableFind) and its
io-threads show up as their own thread in the profiles."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from analysis.profile.stacks import read_folded
from analysis.profile.truncation import truncation
from collectors.profilers.perf.unwind import by_thread_name
from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def valkey_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("valkey")
    runs = tmp / "runs"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.run(
        [sys.executable, "-m", "collectors", "run", "get-iothreads", "--size", "tiny",
         "--reps", "3", "--profile-reps", "1", "--paired", "--paired-windows", "4",
         # a 3 s small-size load at the default 99 Hz gives ~150 samples: too few to find an
         # inlined lookup reliably; this test is about what the profile shows, not its cost
         "--frequency", "999",
         "--variant", "a=debsrc:valkey+config=prefetch-batch-max-size=0",
         "--variant", "b=debsrc:valkey+config=prefetch-batch-max-size=16",
         "--out", str(runs), "--no-progress"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, p.stderr[-4000:]
    run_dir = next(runs.glob("*/manifest.json")).parent
    out = tmp / "report"
    c = subprocess.run([sys.executable, "-m", "analysis", "compare", str(run_dir), "--out", str(out)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stderr[-4000:]
    return run_dir, json.loads((run_dir / "manifest.json").read_text()), out


def test_one_valkey_binary_two_configs(valkey_run):
    _, m, _ = valkey_run
    a, b = m["variants"]["a"], m["variants"]["b"]
    assert a["binary_sha256"] == b["binary_sha256"] and a["version"].startswith("9.")
    assert (a["config"], b["config"]) == ({"prefetch-batch-max-size": "0"},
                                          {"prefetch-batch-max-size": "16"})
    assert [r["kind"] for r in m["schedule"]].count("paired") == 3
    assert all(r["status"] == "ok" for r in m["schedule"])
    # io-threads 2 on this 2-CPU host: nothing pinned, and the manifest says why
    if len(os.sched_getaffinity(0)) < 3:
        assert m["placement"]["server_cpus"] is None
        assert "io-threads 2 need 2 server CPUs plus 1" in m["placement"]["note"]


def test_paired_windows_switch_the_setting(valkey_run):
    run_dir, m, _ = valkey_run
    paired = json.loads((run_dir / "paired" / "1" / "paired.json").read_text())
    text = json.dumps(paired)
    assert "prefetch-batch-max-size" in text
    assert '"a"' in text and '"b"' in text


def test_profiles_show_hashtable_lookup_and_io_thread(valkey_run):
    run_dir, m, _ = valkey_run
    prof = [r for r in m["schedule"] if r["kind"] == "profile"]
    assert len(prof) == 2
    for r in prof:
        folded = (run_dir / r["dir"] / "perf.folded").read_text()
        threads = {line.split(";", 1)[0] for line in folded.splitlines()}
        assert "valkey-server" in threads and "io_thd_1" in threads
        assert ";hashtableFind" in folded and ";lookupKey" in folded


# Where Valkey's frame-pointer stacks stop: glibc's localtime_r (Debian builds glibc
# without frame pointers, and __tz_convert keeps an argument in %rbp), which Valkey's
# afterSleep() calls on every event-loop iteration.
GLIBC_TIME = {"__offtime", "__tz_convert", "__tzfile_compute", "__tzstring", "__tzstring_len"}


def test_the_probe_gives_dwarf_to_the_thread_glibc_cuts(valkey_run):
    """--call-graph auto: the first profile rep probes with frame pointers, the main
    thread's stacks under localtime_r are cut, so every profile rep unwinds the main thread
    with DWARF and the io-thread with frame pointers; the report says what and why."""
    run_dir, m, out = valkey_run
    prof = [r for r in m["schedule"] if r["kind"] == "profile"]
    facts = [json.loads((run_dir / r["dir"] / "rep.json").read_text())["collectors"]["perf"]
             for r in prof]
    # the probe ran in the first paired rep, under its load (perf profiles the paired
    # windows, so that rep comes first); the profile reps and later paired reps reuse it
    first = next(r for r in m["schedule"] if r["kind"] == "paired")
    paired = json.loads((run_dir / first["dir"] / "rep.json").read_text())["collectors"]
    probe = paired["perf:a"]["unwind_probe"]
    assert probe == paired["perf:b"]["unwind_probe"]
    assert probe["rep"] == first["dir"] and probe["callgraph"] == "fp"
    assert paired["perf:a"]["callgraph"] == "fp+dwarf"
    assert paired["perf:a"]["dwarf_threads"] == ["valkey-server"]
    # its numbers are its own folded stacks', thread by thread
    stacks = by_thread_name(read_folded(run_dir / first["dir"] / "perf.probe-server.folded"))
    assert set(stacks) == set(probe["threads"])
    for name, st in stacks.items():
        assert probe["threads"][name]["truncated_pct"] == pytest.approx(truncation(st).share, abs=0.01)
    main = probe["threads"]["valkey-server"]
    assert main["samples"] >= 30 and main["truncated_pct"] > 1.0
    assert GLIBC_TIME & set(main["roots"]), main["roots"]
    assert probe["threads"]["io_thd_1"]["truncated_pct"] <= 1.0
    for r, f in zip(prof, facts):
        assert f["unwind_probe"] == probe           # one choice for the whole run
        assert f["callgraph"] == "fp+dwarf" and f["dwarf_threads"] == ["valkey-server"]
        dwarf, fp = f["commands"]
        assert "dwarf,16384" in dwarf and "-g" in fp and "-t" in dwarf and "-t" in fp
        assert {"valkey-server", "io_thd_1"} <= set(f["threads"])   # both perf.data folded
        if f["windows_error"] is None:              # the windows switched both perf record
            assert f["sampled_s"] > 0 and f["sampled_commands"] > 0
    assert not any((run_dir / r["dir"] / "perf.probe.folded").exists() for r in prof)
    # DWARF reaches main through glibc: the profile reps' main-thread share is far below
    t = json.loads((out / "results.json").read_text())["profile"]["truncated"]
    assert t["thread"] == "main" and t["callgraph"] == "fp+dwarf"
    assert t["worst"] < main["truncated_pct"] / 2, (t["worst"], main)
    md = (out / "report.md").read_text()
    assert "DWARF for valkey-server, frame pointers for the other threads, because a " in md


def test_report_analyses_the_pairs(valkey_run):
    run_dir, m, out = valkey_run
    res = json.loads((out / "results.json").read_text())
    assert res["paired"], "paired windows must be analysed"
    ch = res["paired"][0]["change"]
    assert ch["verdict"] in ("improvement", "regression", "no change", "unstable")
    # With 3 paired reps the interval is over the reps, each its window pairs' geometric
    # means (analysis/compare/pair_clusters.py); the method counts both, from the raw windows.
    reps = sum(r["kind"] == "paired" for r in m["schedule"])
    check_paired_method(ch["method"], reps)
    assert f"over {reps} reps" in ch["method"]
    assert f"({count_pairs(run_dir, m)} pairs in all)" in ch["method"]
    md = (out / "report.md").read_text()
    assert "io-threads 2 need" in md or len(os.sched_getaffinity(0)) >= 3


def count_pairs(run_dir, m: dict) -> int:
    """Windows of a and b paired within each paired rep (paired.json, as measured)."""
    n = 0
    for r in m["schedule"]:
        if r["kind"] == "paired":
            wins = json.loads((run_dir / r["dir"] / "paired.json").read_text())["windows"]
            n += min(sum(w["variant"] == v for w in wins) for v in ("a", "b"))
    return n


def check_paired_method(method: str, pairs: int) -> None:
    """The exact signed-rank interval of n pairs reaches at most 1 - 2/2**n confidence, so
    95% needs n >= 6; with fewer pairs the paired t-interval must be the one used."""
    if 1 - 2 / 2 ** pairs >= 0.95:
        assert method.startswith(f"Wilcoxon signed-rank interval of the paired differences, n={pairs} pairs"), method
    else:
        assert method.startswith(f"paired t-interval of the mean difference, n={pairs} pairs"), method


def test_paired_method_check_follows_the_pair_count():
    from analysis import stats
    base = [100.0, 102.0, 98.0, 101.0, 99.0, 100.5]
    cand = [b * 1.05 + i for i, b in enumerate(base)]
    six = stats.compare(base, cand, paired=True).method
    five = stats.compare(base[:5], cand[:5], paired=True).method
    check_paired_method(six, 6)
    check_paired_method(five, 5)
    for method, n in ((six, 5), (five, 6), (six, 7)):
        with pytest.raises(AssertionError):
            check_paired_method(method, n)

