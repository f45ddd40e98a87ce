"""collectors/host/cputime.py on real processes: a thread that spins is busy ~100% of the
window, one that sleeps ~0%; the load generator's CPU is the reaped child's rusage."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from collectors.host.cputime import CpuWatch, client_capacity, thread_times

SPIN_AND_SLEEP = """
import threading, time
def spin():
    t = time.time()
    while time.time() - t < 30: pass
threading.Thread(target=spin, name="spinner", daemon=True).start()
time.sleep(30)
"""


@pytest.mark.heavy
def test_busy_and_idle_threads_of_a_real_process():
    p = subprocess.Popen([sys.executable, "-c", SPIN_AND_SLEEP])
    try:
        time.sleep(0.5)
        watch = CpuWatch(p.pid, client_capacity(1, [1])).start()
        time.sleep(1.5)
        sat = watch.finish()
    finally:
        p.kill()
        p.wait()
    assert sat.window_s == pytest.approx(1.5, abs=0.3)
    assert sat.main_tid == p.pid and len(sat.server_threads) == 2
    main = sat.main_thread()
    spinner = next(t for t in sat.server_threads if t.tid != p.pid)
    assert main is not None and main.busy < 0.1            # the main thread sleeps
    # the other one spins: always runnable, so on a CPU or waiting for one the whole window
    # (on a quiet host mostly on it; a loaded CI host took 42% of it once)
    assert spinner.busy > 0.3 and spinner.waiting is not None
    assert spinner.busy + spinner.waiting == pytest.approx(1.0, abs=0.1)
    assert spinner.cpu_s == pytest.approx(spinner.busy * sat.window_s, rel=0.05)


def test_load_generator_cpu_is_the_reaped_child():
    watch = CpuWatch(subprocess.Popen(["sleep", "5"]).pid, 1.0).start()
    # 0.8 s of the child's own CPU time (not of the wall clock: a loaded host gives it less)
    busy = subprocess.run([sys.executable, "-c", "import time\nwhile time.process_time() < 0.8: pass"])
    assert busy.returncode == 0
    sat = watch.finish()
    assert sat.client_cpu_s == pytest.approx(0.8, abs=0.25)
    assert sat.client_busy == pytest.approx(sat.client_cpu_s / sat.window_s, rel=0.01)


def test_gone_process_and_capacity():
    assert thread_times(2 ** 22 + 12345) == {}
    assert client_capacity(1, [1]) == 1.0
    assert client_capacity(4, [1, 2]) == 2.0
    assert client_capacity(2, None) >= 1.0


SPIN = "import time\nt = time.time()\nwhile time.time() - t < 30: pass\n"


@pytest.mark.heavy
def test_a_thread_that_shares_its_cpu_waits_and_the_host_is_busy():
    # Two spinners pinned to the same CPU: each is on it about half the window and
    # runnable-but-waiting the other half (schedstat run_delay), and the host is busy.
    procs = [subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", SPIN]) for _ in range(2)]
    try:
        time.sleep(0.5)
        watch = CpuWatch(procs[0].pid, 1.0).start()
        time.sleep(2.0)
        sat = watch.finish()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    main = sat.main_thread()
    assert main is not None and main.waiting is not None
    # about half each on a quiet host; other processes on CPU 0 (a loaded CI host) take
    # from its time on the CPU and add to its wait, never the other way round
    assert 0.1 < main.busy < 0.75 and main.waiting > 0.25
    assert main.busy + main.waiting == pytest.approx(1.0, abs=0.15)
    assert sat.host_busy is not None and sat.host_busy >= 0.4     # one of 2 CPUs at least
    assert sat.host_steal is not None and 0.0 <= sat.host_steal <= 1.0
