"""Was the server the bottleneck? (analysis/compare/saturation.py)

Live: a real redis-server under a real redis-benchmark, its threads' CPU read by the
collector (collectors/host/cputime.py), the rules applied to what was measured:
- pipelined, the server pinned to its own CPU: the main thread works flat out -> "server";
- the same with a CPU hog pinned beside the server: runnable but kept off its CPU ->
  "contended" (the server is still the bottleneck; the host made it slower);
- one unpipelined client: nobody is saturated -> "latency" (too few requests in flight).
Recorded: two paired Valkey runs from a host whose CPUs other work filled (SOURCES.md
there) -> "host", with the other processes' share named.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.saturation import SATURATED, _side, _verdict
from analysis.inputs.rundir import load_run
from collectors.host.cputime import CpuWatch
from collectors.load.server import free_port
from collectors.runner.context import bench_bin
from tests.conftest_run import base_variant, wait_for

pytestmark = pytest.mark.slow
RUNS = Path(__file__).parent / "data" / "runs"
SPIN = "import time\nt = time.time()\nwhile time.time() - t < 60: pass\n"


@pytest.fixture(scope="module")
def server():
    v = base_variant()
    port = free_port()
    srv = subprocess.Popen(["taskset", "-c", "0", v.server_bin, "--port", str(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    cli = Path(v.server_bin).with_name("redis-cli")
    wait_for(lambda: subprocess.run([str(cli), "-p", str(port), "ping"], capture_output=True,
                                    text=True).stdout.strip() == "PONG", 10, "redis-server ready")
    yield srv.pid, port, bench_bin(v)
    srv.terminate()
    srv.wait(10)


def _run_for(server, bench_args: list[str], hog: bool, seconds: float = 3.0):
    pid, port, bench = server
    hogs = [subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", SPIN])] if hog else []
    try:
        time.sleep(0.2 if hog else 0.0)
        watch = CpuWatch(pid, 1.0).start()
        p = subprocess.Popen(["taskset", "-c", "1", bench, "-p", str(port), "-q", "-r", "100000",
                              *bench_args, "-n", "100000000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        p.terminate()
        p.wait(10)           # reaped inside the window: its CPU counts as the client's
        return watch.finish()
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _classify(sat) -> tuple[str, str]:
    kind, note, _ = _verdict(_side([sat], polling=None, cpus=2), cpus=2)
    return kind, note


def test_pipelined_load_saturates_the_main_thread(server):
    sat = _run_for(server, ["-c", "50", "-P", "32", "-t", "set"], hog=False)
    kind, note = _classify(sat)
    # on a quiet CPU 0 the server works flat out; if something else ran there meanwhile,
    # the rule says "contended" - both name the server as the bottleneck
    assert kind in ("server", "contended"), note
    assert "the server was the bottleneck" in note


def test_a_cpu_hog_beside_the_server_makes_it_contended(server):
    sat = _run_for(server, ["-c", "50", "-P", "32", "-t", "set"], hog=True)
    main = sat.main_thread()
    assert main.waiting > 0.25 and main.busy < 0.75, sat     # it shared CPU 0 with the hog
    kind, note = _classify(sat)
    assert kind == "contended", note
    assert "on a CPU only" in note and "other processes took the rest" in note


def test_one_unpipelined_client_leaves_everyone_waiting(server):
    sat = _run_for(server, ["-c", "1", "-t", "get"], hog=False)
    kind, note = _classify(sat)
    assert sat.main_thread().busy < 0.8 and (sat.client_busy or 0) < 0.85, sat
    if sat.host_busy < SATURATED:        # a quiet host (CI): nobody was saturated
        assert kind == "latency", note
        assert "too few requests in flight" in note
    else:                                # other work filled the CPUs meanwhile: say so
        assert kind == "host", note
        assert "other processes the rest" in note


@pytest.mark.parametrize("pipeline", ["1", "16"])
def test_recorded_busy_host_is_named(pipeline):
    r = analyse(load_run(RUNS / f"valkey-busy-host-p{pipeline}"), CompareOptions())
    s = r.saturation
    assert s.available and s.bottleneck == "host", s.note
    for side in s.sides.values():
        assert side.host_busy > 0.95 and side.main_waiting > 0.5
    assert "other processes the rest" in s.note and "may not show here" in s.note
    assert any("pipeline" in x for x in s.suggestions)
