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

from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def valkey_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("valkey")
    runs = tmp / "runs"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.run(
        [sys.executable, "-m", "collectors", "run", "get-iothreads", "--size", "small",
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

