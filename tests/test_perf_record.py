"""collectors/profilers/perf/plugin.py: real perf record -e cpu-clock on a real Redis with io-threads,
perf script run once into the real inferno-collapse-perf; thread names kept as first frames."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from collectors.host import procs
from collectors.profilers.perf import plugin as profile
from analysis.inputs.case import WorkloadSpec
from collectors.collector import RepContext
from collectors.load.server import Server, ServerOptions
from collectors.load.redis_benchmark import (redis_benchmark_argv, run_redis_benchmark,
                                             start_redis_benchmark)
from tests.conftest_run import base_variant

pytestmark = pytest.mark.slow


def test_record_argv_follows_the_callgraph_mode(tmp_path):
    fp = profile.record_argv("perf", 42, tmp_path / "perf.data", 999, "fp")
    assert fp == ["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-p", "42",
                  "-o", str(tmp_path / "perf.data")]
    dw = profile.record_argv("perf", 42, tmp_path / "p", 499, "dwarf", mmap_pages=512)
    assert dw[6:10] == ["--call-graph", "dwarf,16384", "-m", "512"] and "-g" not in dw


def test_run_flags_choose_the_unwinder_and_buffer():
    """--call-graph/--perf-mmap reach the profiler; auto keeps the variant's own mode."""
    from collectors.runner.options import RunOptions
    opts = RunOptions(extra={"call_graph": "dwarf", "perf_mmap": 256})
    (p,) = profile.rep_collectors(opts, "profile")
    assert (p.callgraph, p.mmap_pages) == ("dwarf", 256)
    assert profile.rep_collectors(opts, "throughput") == []
    (auto,) = profile.rep_collectors(RunOptions(), "profile")
    assert (auto.callgraph, auto.mmap_pages) == ("auto", None)


def test_dwarf_unwinding_gives_whole_stacks_through_code_without_frame_pointers(tmp_path):
    """A real program whose hot leaf is compiled without frame pointers: perf's fp unwinder
    loses the leaf's caller, --call-graph dwarf keeps the whole stack."""
    src = tmp_path / "spin.c"
    src.write_text(
        "#include <stdint.h>\n"
        "__attribute__((noinline)) uint64_t leaf(uint64_t x) {\n"
        "  for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ULL + 1; return x; }\n"
        "__attribute__((noinline)) uint64_t middle(uint64_t x) { return leaf(x) ^ leaf(x + 1); }\n"
        "int main(void) { volatile uint64_t s = 0;\n"
        "  for (long i = 0; i < 400000; i++) s += middle(i); return (int)(s & 1); }\n")
    exe = tmp_path / "spin"
    # leaf and middle without frame pointers, main with: what a server with a -O3 dep looks like
    import subprocess
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", "-o", str(exe), str(src)], check=True)
    perf = shutil.which("perf")
    stacks = {}
    for mode in ("fp", "dwarf"):
        data = tmp_path / f"{mode}.data"
        argv = profile.record_argv(perf, 0, data, 499, mode)
        argv = argv[:argv.index("-p")] + ["-o", str(data), "--", str(exe)]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)
        out = subprocess.run([perf, "script", "-i", str(data), "-F", "ip,sym"], capture_output=True,
                             text=True, timeout=120).stdout
        blocks = [b.strip() for b in out.split("\n\n") if b.strip()]
        stacks[mode] = [b for b in blocks if b.split("\n")[0].endswith(" leaf")]
    whole = {m: sum("main" in blk for blk in st) / max(1, len(st)) for m, st in stacks.items()}
    assert len(stacks["dwarf"]) > 50
    assert whole["dwarf"] > 0.9, whole          # dwarf reaches main from the leaf
    assert whole["fp"] < whole["dwarf"], whole  # fp loses callers through fp-less code


def test_record_argv_targets_a_process_or_its_threads(tmp_path):
    assert profile.record_argv("perf", 42, tmp_path / "p", 99)[-4:-2] == ["-p", "42"]
    dw = profile.record_argv("perf", [42, 45], tmp_path / "p", 99, "dwarf")
    assert dw[-4:-2] == ["-t", "42,45"] and "dwarf,16384" in dw


def test_an_earlier_probe_decides_for_the_whole_run(tmp_path):
    """--call-graph auto: the probe a profile rep of this run recorded in rep.json decides
    for every later rep (resumed runs too): DWARF for each thread with enough probe samples
    and their truncated share over SWITCH_PCT % with 95% confidence; a thread with too few is
    not judged, and one a little over the line by chance is not switched."""
    from analysis.inputs.collector_facts import UnwindProbe
    from collectors.profilers.perf import unwind as pu
    run = tmp_path / "run"
    (run / "a" / "1").mkdir(parents=True)
    (run / "b" / "1").mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    threads = {"valkey-server": {"samples": 900, "truncated_pct": 11.3, "roots": {"__offtime": 5.1}},
               "io_thd_1": {"samples": 850, "truncated_pct": 0.0, "roots": {}},
               "bio_lazy_free": {"samples": pu.MIN_SAMPLES - 1, "truncated_pct": 100.0, "roots": {}}}
    probe = {"at": 2.0, "rep": "a/1", "seconds": 1.0, "frequency_hz": 999, "switch_pct": 1.0,
             "threads": threads}
    later = {**probe, "at": 5.0, "threads": {"valkey-server": {"samples": 900, "truncated_pct": 0.0}}}
    (run / "a" / "1" / "rep.json").write_text(json.dumps({"collectors": {"perf": {"unwind_probe": probe}}}))
    (run / "b" / "1" / "rep.json").write_text(json.dumps({"collectors": {"perf": {"unwind_probe": later}}}))
    rep = run / "a" / "2"
    rep.mkdir()
    u = pu.choose("auto", "fp", 0, rep, 16.0, None)       # pid 0: a probe would fail
    assert (u.callgraph, u.dwarf_threads) == ("fp+dwarf", ["valkey-server"])
    assert u.probe == UnwindProbe.from_json(probe) and u.probe.threads["valkey-server"].roots == {"__offtime": 5.1}
    assert not (rep / "perf.probe.folded").exists()
    # 3 of 240 (1.25%: a recorded MSET probe) is not over 1% with 95% confidence: fp
    threads["valkey-server"].update(samples=240, truncated_pct=1.25)
    (run / "a" / "1" / "rep.json").write_text(json.dumps({"collectors": {"perf": {"unwind_probe": probe}}}))
    assert pu.choose("auto", "fp", 0, rep, 16.0, None).callgraph == "fp"
    assert not pu.over_the_line(240, 1.25) and not pu.over_the_line(900, 1.5)
    assert pu.over_the_line(240, 8.0) and pu.over_the_line(900, 2.0)     # Valkey's 8-16%: DWARF
    # asked for, or a binary without frame pointers: no probe, one mode for every thread
    assert pu.choose("fp", "fp", 0, rep, 16.0, None) == pu.Unwinding("fp")
    assert pu.choose("auto", "dwarf", 0, rep, 16.0, None) == pu.Unwinding("dwarf")
    # outside a run directory (no manifest.json two levels up) nothing is shared
    assert pu.earlier_probe(tmp_path / "x" / "y" / "z") is None


def test_missing_tools_say_how_to_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PERF", str(tmp_path / "no-such-perf"))
    with pytest.raises(procs.ToolNotFound, match=r"perf: not found \(nor \$PERF\); install it .*--profile off"):
        profile.require_tools()
    monkeypatch.delenv("PERF")
    empty = tmp_path / "empty"
    empty.mkdir()
    perf_dir = Path(shutil.which("perf")).parent
    monkeypatch.setenv("PATH", str(perf_dir) if not (perf_dir / "inferno-collapse-perf").exists() else str(empty))
    monkeypatch.setenv("PERF", shutil.which("perf"))
    monkeypatch.setenv("CARGO_HOME", str(empty))
    with pytest.raises(procs.ToolNotFound, match=r"inferno-collapse-perf: not found .*cargo install inferno"):
        profile.require_tools()


def test_profile_of_io_threaded_server_keeps_thread_names(tmp_path):
    v = base_variant()
    cpus = [0] if len(os.sched_getaffinity(0)) >= 2 else None
    client = [1] if cpus else None
    srv = Server(ServerOptions(v.server_bin, tmp_path / "dir", tmp_path / "server.log", io_threads=2,
                               cpus=cpus)).start()
    try:
        w = WorkloadSpec(command=["MSET", "key:__rand_int__", "v", "key:__rand_int__", "v"],
                         keyspace=50_000, clients=32, threads=2)
        # Fill the keyspace first, so the window sees lookups of existing keys.
        run_redis_benchmark(redis_benchmark_argv(v.benchmark_bin, srv.port, w, 50_000), None, client, 120)
        ctx = RepContext(rep_dir=tmp_path, window_s=1.5, pid=srv.pid, cpus=cpus, client_cpus=client,
                         callgraph=v.callgraph)
        bp = start_redis_benchmark(redis_benchmark_argv(v.benchmark_bin, srv.port, w, 10_000_000), client)
        prof = profile.PerfProfiler(frequency_hz=999, callgraph="fp")   # the probe: test_valkey.py
        prof.start(ctx)
        time.sleep(3)            # the profiler ends its window itself after window_s
        assert all(p.poll() is not None for p in prof._procs)
        facts = prof.stop(ctx)
        procs.kill_group(bp.proc, 2.0)
    finally:
        srv.stop()
    assert not (tmp_path / "perf.data").exists()
    assert facts.samples > 100 and facts.folded_lines > 10
    assert 1.4 <= facts.window_s <= 2.5
    tsv = (tmp_path / "perf.threads.tsv").read_text().splitlines()
    comms = {line.split("\t")[1] for line in tsv[1:]}
    assert "redis-server" in comms
    assert any(c.startswith("io_thd_") for c in comms), comms
    tids = {int(line.split("\t")[0]) for line in tsv[1:]}
    assert srv.pid in tids
    first = {ln.split(";", 1)[0] for ln in (tmp_path / "perf.folded").read_text().splitlines()}
    assert "redis-server" in first and any(f.startswith("io_thd_") for f in first)
    folded = (tmp_path / "perf.folded").read_text()
    assert "msetGenericCommand" in folded
    # io threads read and parse; the main thread executes the command
    io_lines = [ln for ln in folded.splitlines() if ln.startswith("io_thd_")]
    assert not any("msetGenericCommand" in ln for ln in io_lines)


def test_perf_failure_is_reported_with_the_reason(tmp_path):
    ctx = RepContext(rep_dir=tmp_path, window_s=3.0, pid=2**22 + 7)   # no such pid
    prof = profile.PerfProfiler(callgraph="fp")
    prof.start(ctx)
    prof._procs[0].wait(10)  # perf gives up on its own, long before the window ends
    with pytest.raises(profile.ProfileError, match=r"perf record exited with status -?\d+; see .*perf.stderr"):
        prof.stop(ctx)
    assert "No such process" in (tmp_path / "perf.stderr").read_text()
    # auto: the unwinding probe meets the same perf first, and says so at once
    t = time.monotonic()
    with pytest.raises(profile.ProfileError,
                       match=r"perf record \(unwinding probe\) exited with status -?\d+; see .*perf.stderr"):
        profile.PerfProfiler().start(ctx)
    assert time.monotonic() - t < 5
    assert "No such process" in (tmp_path / "perf.stderr").read_text()


def test_window_schedule_is_abba():
    from collectors.profilers.perf.windows import schedule
    assert schedule(8) == [False, True, True, False, False, True, True, False]
    assert schedule(4) == [False, True, True, False]
    assert sum(schedule(10)) == 5


# Busy for ~0.1-0.3 s per call (a script sees a frozen clock, so it counts instead): INFO from
# another client waits behind it, as behind the queued pipelines of a saturated slow build.
BUSY_LUA = "local x = 0 for i = 1, 25000000 do x = x + i end return 1"


def test_windows_that_do_not_fit_still_leave_a_profile(tmp_path):
    """A server that answers INFO only after 100s of ms: the runner plans fewer windows,
    and if not even one "on" window fits, perf samples the rest of the rep (no cost
    measured) rather than leaving the rep without a profile."""
    import threading
    import redis
    v = base_variant()
    srv = Server(ServerOptions(v.server_bin, tmp_path / "dir", tmp_path / "server.log")).start()
    stop = threading.Event()

    def busy():
        c = redis.Redis(host="127.0.0.1", port=srv.port, socket_timeout=10)
        while not stop.is_set():
            c.eval(BUSY_LUA, 0)
        c.close()

    t = threading.Thread(target=busy, daemon=True)
    try:
        t.start()
        time.sleep(0.3)
        ctx = RepContext(rep_dir=tmp_path, window_s=2.0, pid=srv.pid, port=srv.port,
                         callgraph=v.callgraph)
        # fp: no unwinding probe, which would take a share of this short window
        prof = profile.PerfProfiler(frequency_hz=999, windows=8, callgraph="fp")
        prof.start(ctx)
        time.sleep(2.5)
        facts = prof.stop(ctx)       # perf saw no samples would be a ProfileError
    finally:
        stop.set()
        t.join(5)
        srv.stop()
    assert facts.samples > 0 and facts.folded_lines > 0
    wins = facts.windows
    assert 1 <= len(wins) <= 4, wins        # 0.2 s INFOs: 8 windows of 2 s do not fit
    if facts.windows_error is None:
        assert any(w.perf for w in wins) and facts.sampled_commands >= 0
    else:
        assert "did not fit" in facts.windows_error and facts.sampled_s is None


def test_window_plan_makes_room_for_slow_info():
    from collectors.profilers.perf.windows import WindowRunner
    r = WindowRunner(port=0, total_s=16.0, windows=64)
    assert r.windows == 64
    assert r.plan(15.7, 0.001) == 62          # 0.25 s windows, an on for every off
    assert r.plan(15.7, 0.2) == 12            # 1.2 s per window: 0.6 s of switching
    assert r.plan(1.7, 0.2) == 2              # never fewer than one off and one on
