"""--paired for two different builds: both servers loaded at once, the load switched
between them in ABBA windows (collectors/runner/paired_servers.py), analysed as pairs."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from collectors.runner import pairing
from collectors.runner.options import RunError, RunOptions
from collectors.workload.cases import load_case
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, CAND_SPEC, built, cli_env
from tests.test_resume import CASE_YAML

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def paired_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paired-servers")
    case = tmp / "resume-mset.yaml"
    case.write_text(CASE_YAML)
    built("base", BASE_SPEC), built("cand", CAND_SPEC)     # builds before the timed run
    # no --paired: pairing is the default wherever two datasets fit
    r = subprocess.run([sys.executable, "-m", "collectors", "run", str(case),
                        "--reps", "2", "--profile", "off", "--paired-window", "0.5",
                        "--paired-windows", "4", "--variant", f"base={BASE_SPEC}",
                        "--variant", f"cand={CAND_SPEC}", "--out", str(tmp / "runs"), "--no-progress"],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "stallscope run: paired: two servers loaded at once" in r.stderr
    return load_run(r.stdout.strip().splitlines()[-1])


def test_two_builds_are_loaded_at_once_and_alternate(paired_run):
    rd = paired_run
    assert rd.manifest.pairing.mode == "servers" and rd.manifest.pairing.asked == "auto"
    assert not rd.manifest.pairing.aa
    plan = rd.manifest.paired
    assert plan.mode == "servers" and plan.variants == ["base", "cand"] and plan.setting == []
    for rep in rd.manifest.schedule:
        assert (rep.kind, rep.status) == ("paired", "ok")
        d = rd.rep_dir(rep)
        doc = json.loads((d / "paired.json").read_text())
        # counterbalanced: the baseline first in odd reps, the candidate first in even
        first, second = ("base", "cand") if int(rep.rep) % 2 else ("cand", "base")
        assert doc["mode"] == "servers" and doc["order"] == [first, second, second, first], rep
        ports = {n: s["port"] for n, s in doc["servers"].items()}
        assert len(set(ports.values())) == 2          # two servers ...
        for n in ("base", "cand"):                      # ... each started once, from the snapshot
            assert (d / f"server-{n}.log").read_text().count("Ready to accept connections") == 1
            assert f"tcp_port:{ports[n]}" in (d / f"info-{n}.txt").read_text()
        # ... both loading at once: each started before the other was ready. The test's
        # dataset loads in milliseconds and the logs' times have 1 ms ticks, so a start may
        # trail the other's "ready" by a tick or two (it did, by 1 ms): 50 ms of slack.
        starts = {n: _log_times(d / f"server-{n}.log") for n in ("base", "cand")}
        slack = 0.05
        assert starts["cand"][0] < starts["base"][1] + slack and starts["base"][0] < starts["cand"][1] + slack
        assert doc["servers"]["base"]["binary_sha256"] != doc["servers"]["cand"]["binary_sha256"]
        ws = doc["windows"]
        # only a switch of server settles; the second window of an ABBA pair follows on
        assert ws[0]["t1"] < ws[1]["t0"] and ws[2]["t1"] < ws[3]["t0"]
        assert ws[1]["t1"] == ws[2]["t0"] and ws[1]["variant"] == ws[2]["variant"]
        for w in doc["windows"]:
            # the active server's own counters: the case's command, nothing else running
            assert 0.45 <= w["seconds"] <= 1.5 and w["calls"] > 100
            assert w["calls_per_s"] == pytest.approx(w["calls"] / w["seconds"])
        facts = rd.facts(rep)
        assert set(facts.commands) >= {"server:base", "server:cand", "bench:base", "bench:cand"}
        assert facts.server_stop == f"{first}: shutdown, {second}: shutdown"      # in the rep's order
        # each server's CPU over its own windows: its main thread served MSETs, and the
        # load generator's CPU is read from its threads (it is not reaped in a window)
        for n in ("base", "cand"):
            sat = facts.saturation_by_variant[n]
            assert sat.window_s == pytest.approx(2 * 0.5, abs=0.3)   # 2 of the 4 windows
            assert sat.main_tid == doc["servers"][n]["pid"]
            assert sat.main_thread().busy > 0.05 and sat.client_busy > 0.05
            assert sat.host_busy is not None and sat.host_busy > 0.05


def test_pairs_are_compared(paired_run):
    r = analyse(paired_run, CompareOptions())
    (row,) = r.paired
    assert row.base.n == row.cand.n == 4          # 2 reps x 2 pairs
    assert row.change.ci_low is not None and "pair" in row.change.method
    # saturation from each server's own windows, not the whole rep of both
    assert r.saturation.available and set(r.saturation.sides) == {"base", "cand"}
    # each side is the median over reps of that server's own windows (a whole-rep figure
    # would give both sides one value; two sides may still coincide by chance, so derive)
    import statistics
    for n in ("base", "cand"):
        own = [paired_run.facts(rep).saturation_by_variant[n] for rep in paired_run.manifest.schedule]
        side = r.saturation.sides[n]
        assert side.reps == len(own) == 2
        assert side.main_busy == pytest.approx(statistics.median(s.main_thread().busy for s in own))
        assert side.client_busy == pytest.approx(statistics.median(s.client_busy for s in own))


def test_room_for_two_datasets_is_checked_before_anything_runs():
    base, cand = built("base", BASE_SPEC), built("cand", CAND_SPEC)
    case = load_case("mset-50keys", "default")                   # 10M keys: ~1 GB each
    opts = RunOptions(pairing="paired")
    plan, _ = pairing.choose({"base": base, "cand": cand}, opts, case, 24 * 2**30)
    assert plan.mode == "servers"
    with pytest.raises(RunError, match=r"--paired: two servers loaded at once would need about "
                                       r"\d+\.\d GiB .* this host's 2\.0 GiB. Run without --paired"):
        pairing.choose({"base": base, "cand": cand}, opts, case, 2 * 2**30)


def _log_times(log):
    """(first line's time, "Ready to accept" time) of a server log, in s of the day."""
    import re
    stamps = []
    for line in log.read_text().splitlines():
        m = re.search(r" (\d\d):(\d\d):(\d\d\.\d+) ", line)
        if m:
            t = int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
            stamps.append((t, "Ready to accept connections" in line))
    return stamps[0][0], next(t for t, ready in stamps if ready)
