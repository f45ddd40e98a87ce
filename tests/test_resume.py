"""Kill a real `python -m collectors run` mid-way (SIGINT, then SIGKILL): no process of the
run may survive, finished reps stay, and --resume completes the run without touching them."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commands import compare as compare_cli
from analysis.inputs.rundir import load_run
from tests.conftest import REPO
from tests.conftest_run import (BASE_SPEC, base_variant, cli_env, descendants, mentioning, start_cli,
                                still_alive, wait_for)

pytestmark = pytest.mark.slow

CASE_YAML = """\
name: resume-mset
description: tiny MSET case for the kill/resume test
server: {config: {}, io_threads: 1}
dataset: {kind: strings, keys: 20000, value_size: 10, key_prefix: "key:", expect_encoding: embstr}
workload:
  tool: redis-benchmark
  command: [MSET, {repeat: 2, words: ["key:__rand_int__", __data__]}]
  keyspace: 20000
  clients: 20
  pipeline: 1
  duration_s: 1.5
  warmup_s: 0.3
"""


def _manifest(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def _run_dir(out: Path) -> Path | None:
    dirs = [d for d in out.iterdir() if (d / "manifest.json").is_file()]
    return dirs[0] if dirs else None


def _start(tmp_path: Path, name: str, reps: str, profile: str) -> tuple[subprocess.Popen, Path]:
    case = tmp_path / "resume-mset.yaml"
    case.write_text(CASE_YAML)
    out = tmp_path / name
    out.mkdir()
    # separate reps (--unpaired): their resume is what these tests follow rep by rep
    p = start_cli([str(case), "--unpaired", "--variant", f"a={BASE_SPEC}", "--variant", f"b={BASE_SPEC}+config=hz=20",
                   "--reps", reps, "--profile", profile, "--profile-reps", "1", "--out", str(out)],
                  tmp_path / f"{name}.log")
    run_dir = wait_for(lambda: _run_dir(out), 120, "the run directory")
    return p, run_dir


def _rep_state(run_dir: Path):
    m = _manifest(run_dir)
    return m and [(r["dir"], r["kind"], r["status"]) for r in m["schedule"]]


def _resume(run_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collectors", "run", "--resume", str(run_dir),
                           "--no-progress"], cwd=REPO, env=cli_env(), capture_output=True, text=True,
                          timeout=300)


def _files(run_dir: Path, rep_dirs: list[str]) -> dict[str, bytes]:
    return {f"{d}/{f.name}": f.read_bytes() for d in rep_dirs for f in sorted((run_dir / d).iterdir())}


@pytest.fixture(scope="module", autouse=True)
def _built():
    base_variant()   # build before any timing starts


def test_sigint_mid_run_then_resume(tmp_path):
    p, run_dir = _start(tmp_path, "int", reps="2", profile="off")
    try:
        def one_done_one_running():
            st = _rep_state(run_dir) or []
            done = [d for d, _, s in st if s == "ok"]
            running = [d for d, _, s in st if s == "running"]
            # A rep still pending: otherwise the run may finish before the signal lands.
            pending = [d for d, _, s in st if s == "pending"]
            kids = descendants(p.pid)
            if done and running and pending and any("redis-server" in c for _, c in kids.values()):
                return done, running, kids
            return None
        done, running, kids = wait_for(one_done_one_running, 180, "one rep ok and one running", 0.05)
        before = _files(run_dir, done)
        os.kill(p.pid, signal.SIGINT)
        assert p.wait(30) == 130
    finally:
        if p.poll() is None:
            p.kill()
    time.sleep(0.5)
    assert still_alive(kids) == []
    assert mentioning(str(run_dir)) == []
    m = _manifest(run_dir)
    assert m["status"]["state"] == "interrupted" and "SIGINT" in m["status"]["reason"]
    # The rep seen running is marked interrupted, unless it finished in the moment between
    # the look and the signal (the signal then lands between reps: nothing to mark).
    state = {r["dir"]: r for r in m["schedule"]}
    failed = [d for d, r in state.items() if r["status"] == "failed"]
    assert all(state[d]["reason"] == "interrupted by SIGINT" for d in failed), failed
    assert failed == running or (failed == [] and all(state[d]["status"] == "ok" for d in running))
    assert not [d for d, r in state.items() if r["status"] == "running"]
    log = (tmp_path / "int.log").read_text()
    assert f"--resume {run_dir}" in log and "Traceback" not in log

    r = _resume(run_dir, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    rd = load_run(run_dir)
    assert all(rep.status == "ok" for rep in rd.manifest.schedule)
    assert rd.manifest.status.state == "complete" and len(rd.manifest.resumes) == 1
    assert _files(run_dir, done) == before          # earlier ok reps untouched
    for d in running:
        assert json.loads((run_dir / d / "rep.json").read_text())["bench"]["rps"] > 0


def test_sigkill_during_profile_rep_leaves_nothing_then_resume(tmp_path):
    p, run_dir = _start(tmp_path, "kill", reps="1", profile="perf")
    try:
        def profiling():
            st = _rep_state(run_dir) or []
            if not any(k == "profile" and s == "running" for _, k, s in st):
                return None
            kids = descendants(p.pid)
            cmds = [c for _, c in kids.values()]
            if any(" record " in c and "perf" in c for c in cmds) and any("redis-server" in c for c in cmds) \
                    and any("redis-benchmark" in c for c in cmds):
                return kids
            return None
        kids = wait_for(profiling, 240, "a profile rep with server, load generator and perf running", 0.05)
        done = [d for d, _, s in _rep_state(run_dir) if s == "ok"]
        before = _files(run_dir, done)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    deadline = time.monotonic() + 5
    while still_alive(kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_alive(kids) == []
    assert mentioning(str(run_dir)) == []
    st = _rep_state(run_dir)
    assert ("a/1", "throughput", "ok") in st and any(s == "running" for _, _, s in st)

    r = _resume(run_dir, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    rd = load_run(run_dir)
    assert [rep.status for rep in rd.manifest.schedule] == ["ok"] * 4
    assert _files(run_dir, done) == before
    for rep in rd.manifest.reps(kind="profile"):
        assert "msetGenericCommand" in (rd.rep_dir(rep) / "perf.folded").read_text()


def test_paired_mode_switches_config_in_one_server(tmp_path):
    case = tmp_path / "resume-mset.yaml"
    case.write_text(CASE_YAML)
    out = tmp_path / "paired"
    r = subprocess.run([sys.executable, "-m", "collectors", "run", str(case), "--paired", "--reps", "1",
                        "--profile", "off", "--paired-window", "0.5", "--paired-windows", "4",
                        "--variant", f"hz10={BASE_SPEC}+config=hz=10", "--variant", f"hz50={BASE_SPEC}+config=hz=50",
                        "--out", str(out), "--no-progress"],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rd = load_run(r.stdout.strip().splitlines()[-1])
    assert rd.manifest.paired.setting == ["hz"]
    assert rd.manifest.paired.values == {"hz10": {"hz": "10"}, "hz50": {"hz": "50"}}
    assert [(x.dir, x.kind, x.status) for x in rd.manifest.schedule] == [("paired/1", "paired", "ok")]
    doc = json.loads((rd.path / "paired" / "1" / "paired.json").read_text())
    assert doc["order"] == ["hz10", "hz50", "hz50", "hz10"]
    assert [w["config"]["hz"] for w in doc["windows"]] == ["10", "50", "50", "10"]
    for w in doc["windows"]:
        assert 0.45 <= w["seconds"] <= 1.5
        assert w["calls"] > 0 and w["total_commands"] >= w["calls"]
        assert w["ops_per_s"] == pytest.approx(w["total_commands"] / w["seconds"])
    # one server process for all windows: one pid in rep.json, and the log shows one start
    facts = json.loads((rd.path / "paired" / "1" / "rep.json").read_text())
    log = (rd.path / "paired" / "1" / "server.log").read_text()
    assert log.count("Ready to accept connections") == 1 and facts["pid"] > 0

    # the same spec on both sides is an A/A run: accepted, two servers of that build
    aa = subprocess.run([sys.executable, "-m", "collectors", "run", str(case), "--paired",
                         "--reps", "1", "--profile", "off", "--paired-window", "0.5",
                         "--paired-windows", "4", "--variant", f"a={BASE_SPEC}",
                         "--variant", f"b={BASE_SPEC}", "--out", str(out), "--no-progress"],
                        cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert aa.returncode == 0, aa.stderr[-3000:]
    assert "stallscope run: paired: A/A run: two servers of the same build loaded at once" in aa.stderr
    run_dir = Path(aa.stdout.strip().splitlines()[-1])
    m = load_run(run_dir).manifest
    assert m.pairing.aa and m.paired.mode == "servers" and m.schedule[0].status == "ok"
    assert compare_cli.main([str(run_dir), "--out", str(tmp_path / "aa-report")]) == 0
    report = (tmp_path / "aa-report" / "report.md").read_text()
    assert "> A/A run: both sides run the same binary with the same config" in report


def test_an_interrupt_swallowed_by_python_is_not_printed_as_a_traceback(tmp_path):
    """A signal that lands in an at-fork handler or a __del__ cannot raise there: Python
    prints "Exception ignored ... Traceback" and goes on. The runner raises it again at its
    next checkpoint, so stallscope prints nothing there; any other exception still prints."""
    script = tmp_path / "swallowed.py"
    script.write_text(
        "import os, signal\n"
        "from collectors.host import procs\n"
        "procs.install_signal_handlers()\n"
        "class Dying:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        for _ in range(1000): pass   # the handler runs here, inside __del__\n"
        "class Broken:\n"
        "    def __del__(self):\n"
        "        raise ValueError('not ours to hide')\n"
        "Dying(); Broken()\n"
        "try:\n"
        "    procs.raise_if_interrupted()\n"
        "except procs.Interrupted as e:\n"
        "    print('raised again:', e)\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "raised again: interrupted by SIGINT" in r.stdout, (r.stdout, r.stderr)
    assert "Interrupted" not in r.stderr and "ValueError: not ours to hide" in r.stderr, r.stderr
