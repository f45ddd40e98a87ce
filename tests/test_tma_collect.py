"""TMA collector: exact command lines, replayed REAL outputs through the real file paths,
and the real perf back end on this machine (no PMU -> "unavailable", not a crash)."""
from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from analysis.inputs.host import HostFacts
from collectors.collector import RepContext
from collectors.host import procs
from collectors.profilers.tma import commands as tma_commands
from collectors.profilers.tma import plugin as tma
from collectors.profilers.tma import TmaCollector
from collectors.profilers.tma.commands import TmaConfig, TmaConfigError

REPLAY = Path(__file__).resolve().parent / "replay"
L4 = "TopdownL1,TopdownL2,TopdownL3,TopdownL4"


# -- command lines ---------------------------------------------------------------------

@pytest.mark.parametrize("level,metrics", [(1, "TopdownL1"), (2, "TopdownL1,TopdownL2"),
                                           (3, "TopdownL1,TopdownL2,TopdownL3"), (4, L4)])
def test_perf_command_by_pid_per_level(level, metrics):
    cmd = tma_commands.perf_command("perf", "r/tma.json", 20.0, level, pid=4242, perf_version=(6, 1, 187))
    assert cmd == ["perf", "stat", "-M", metrics, "-j", "-o", "r/tma.json",
                   "-p", "4242", "--", "sleep", "20"]


def test_perf_command_cores_new_perf_and_no_group():
    cmd = tma_commands.perf_command("/usr/bin/perf", "tma.json", 7.5, 4, cpus=[0, 2],
                           perf_version=(6, 5), metric_no_group=True)
    assert shlex.join(cmd) == ("/usr/bin/perf stat -M " + L4 + " -j -o tma.json "
                               "--metric-no-threshold --metric-no-group -a -C 0,2 -- sleep 7.5")


def test_perf_command_needs_a_target():
    with pytest.raises(TmaConfigError, match="needs a pid or the server's cpus"):
        tma_commands.perf_command("perf", "o", 1, 4)


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_toplev_command_by_pid(level):
    cmd = tma_commands.toplev_command(["toplev"], "r/tma.csv", 20, level, pid=99)
    assert cmd == ["toplev", f"-l{level}", "-v", "--no-desc", "-x,", "-o", "r/tma.csv",
                   "--pid", "99", "sleep", "20"]


def test_toplev_command_by_cores_with_nodes():
    cmd = tma_commands.toplev_command(["python3", "/opt/pmu-tools/toplev.py"], "tma.csv", 10, 4,
                             cores="S0-C0,S0-C1", nodes="!DRAM_Bound*,L3_Bound*")
    assert shlex.join(cmd) == ("python3 /opt/pmu-tools/toplev.py -l4 -v --no-desc -x, -o tma.csv "
                               "--nodes '!DRAM_Bound*,L3_Bound*' --global --core S0-C0,S0-C1 sleep 10")


def test_toplev_cores_from_this_machines_sysfs():
    # This machine's topology, read here from sysfs (socket and core of CPUs 0 and 1, if
    # there is a CPU 1): two threads of one core (SMT) are one toplev core.
    def spec(c: int) -> str:
        topo = Path(f"/sys/devices/system/cpu/cpu{c}/topology")
        return (f"S{int((topo / 'physical_package_id').read_text())}-"
                f"C{int((topo / 'core_id').read_text())}")
    cpus = [c for c in (0, 1) if Path(f"/sys/devices/system/cpu/cpu{c}/topology").is_dir()]
    want = list(dict.fromkeys(spec(c) for c in cpus))
    assert tma_commands.toplev_cores(cpus) == ",".join(want)
    assert tma_commands.toplev_cores([0, 0]) == spec(0)
    with pytest.raises(TmaConfigError, match="cpu4096/topology"):
        tma_commands.toplev_cores([4096])


def test_split_schedule():
    assert tma_commands.split_sets(2) == [(["TopdownL1", "TopdownL2"], None)]
    s3 = tma_commands.split_sets(3)
    assert [g for g, _ in s3] == [["TopdownL1", "TopdownL2"], ["tma_memory_bound_group"],
                                  ["tma_core_bound_group", "tma_frontend_bound_group",
                                   "tma_bad_speculation_group", "tma_retiring_group"]]
    s4 = tma_commands.split_sets(4)
    assert len(s4) == 5
    assert s4[2] == (["tma_dram_bound_group", "tma_l3_bound_group"], "!DRAM_Bound*,L3_Bound*")


def test_split_commands_rotate_per_rep(tmp_path, monkeypatch):
    monkeypatch.setenv("PERF", str(REPLAY / "replay-perf"))
    c = TmaCollector(TmaConfig(backend="perf", split=True))
    c._perf_version = (6, 1)
    groups = []
    for rep in (1, 2, 3, 6):
        cmd = c.command(RepContext(rep_dir=tmp_path, window_s=5, pid=1, rep=rep))
        groups.append(cmd[cmd.index("-M") + 1])
    assert groups == ["TopdownL1,TopdownL2", "tma_memory_bound_group",
                      "tma_dram_bound_group,tma_l3_bound_group", "TopdownL1,TopdownL2"]
    monkeypatch.setenv("TOPLEV", str(REPLAY / "replay-toplev"))
    t = TmaCollector(TmaConfig(backend="toplev", split=True, attach="cpus"))
    cmd = t.command(RepContext(rep_dir=tmp_path, window_s=5, cpus=[0], rep=2))
    assert cmd[cmd.index("--nodes") + 1] == "!Memory_Bound*"
    assert cmd[cmd.index("--core") - 1] == "--global"


def test_config_errors_are_clear(tmp_path):
    with pytest.raises(TmaConfigError, match="--tma 'vtune': choose one of auto, toplev, perf, off"):
        TmaConfig(backend="vtune")
    with pytest.raises(TmaConfigError, match="--tma-level 7"):
        TmaConfig(level=7)
    c = TmaCollector(TmaConfig(backend="perf", attach="cpus"))
    with pytest.raises(TmaConfigError, match="server is not pinned"):
        c.command(RepContext(rep_dir=tmp_path, window_s=1, pid=1))


def test_auto_backend_prefers_toplev(monkeypatch):
    monkeypatch.setenv("TOPLEV", str(REPLAY / "replay-toplev"))
    assert TmaCollector(TmaConfig(backend="auto")).backend == "toplev"
    monkeypatch.setenv("TOPLEV", "/nonexistent/toplev.py")
    assert TmaCollector(TmaConfig(backend="auto")).backend == "perf"


# -- replays of REAL recorded outputs through the real file paths -------------------------

def _replay(monkeypatch, tmp_path, fixture: Path, backend: str, cpu=None, **cfg):
    monkeypatch.setenv("PERF", str(REPLAY / "replay-perf"))
    monkeypatch.setenv("TOPLEV", str(REPLAY / "replay-toplev"))
    monkeypatch.setenv("STALLSCOPE_REPLAY", str(fixture))
    argv_log = tmp_path / "argv.json"
    monkeypatch.setenv("STALLSCOPE_REPLAY_ARGV", str(argv_log))
    rep_dir = tmp_path / "base" / "1"
    ctx = RepContext(rep_dir=rep_dir, window_s=2, pid=31337)
    c = TmaCollector(TmaConfig(backend=backend, **cfg), cpu=cpu)
    c.start(ctx)
    status = c.stop(ctx)
    return status, rep_dir, json.loads(argv_log.read_text())


def test_replay_perf_spr_json(monkeypatch, tmp_path, fixtures_dir):
    from analysis.tma.formats import parse_file
    fx = fixtures_dir / "tma/perf/perf6.5_default_spr.json"
    status, rep_dir, argv = _replay(monkeypatch, tmp_path, fx, "perf")
    assert argv[1:] == ["stat", "-M", L4, "-j", "-o", str(rep_dir / "tma.json"),
                        "--metric-no-threshold", "-p", "31337", "--", "sleep", "2"]
    assert (rep_dir / "tma.cmd").read_text().strip() == shlex.join([str(REPLAY / "replay-perf")] + argv[1:])
    assert (rep_dir / "tma.json").read_bytes() == fx.read_bytes()
    assert (rep_dir / "tma.rc").read_text() == "rc=0\n"
    assert status.status == "ok" and status.reason is None
    assert status.nodes == 12 and status.max_level == 2 and status.multiplexed == {}
    r = parse_file(rep_dir / "tma.json")
    assert r.get("Memory_Bound") == pytest.approx(50.22, abs=0.005)
    assert r.get("Backend_Bound") == pytest.approx(69.95, abs=0.005)


def test_replay_perf_no_pmu_vm_fallback_rc0(monkeypatch, tmp_path, fixtures_dir):
    fx = fixtures_dir / "tma/perf/no_pmu_vm/M_TopdownL1_json.stdout"
    status, rep_dir, _ = _replay(monkeypatch, tmp_path, fx, "perf", level=1)
    assert status.status == "unavailable"
    assert status.rc == 0  # perf fell back to default events and said "success"
    assert status.reason.startswith("no hardware PMU: perf could not open the TMA events "
                                       "('Cannot find PMU `CPU_CLK_UNHALTED.REF_XCLK'.")
    assert "bare metal" in status.reason
    assert (rep_dir / "tma.stderr").read_bytes() == (fx.with_suffix(".stderr")).read_bytes()


def test_replay_toplev_csv(monkeypatch, tmp_path, fixtures_dir):
    fx = fixtures_dir / "tma/toplev/toplev_skl6700k_l1_core_C0_csv_issue369.csv"
    status, rep_dir, argv = _replay(monkeypatch, tmp_path, fx, "toplev", level=1)
    assert argv[1:] == ["-l1", "-v", "--no-desc", "-x,", "-o", str(rep_dir / "tma.csv"),
                        "--pid", "31337", "sleep", "2"]
    assert status.status == "ok" and status.nodes == 4
    # The recording's pathological values (pmu-tools#369) are flagged, not hidden.
    assert any("Bad_Speculation = 13273.4" in w for w in status.warnings)


def test_replay_toplev_multiplexing_recorded_per_node(monkeypatch, tmp_path, fixtures_dir):
    # A toplev run without -x (human output, [33.3%] column): multiplexing per node.
    fx = fixtures_dir / "tma/toplev/toplev_skx6140_l1_v_global_mux_issue370.txt"
    status, _, _ = _replay(monkeypatch, tmp_path, fx, "toplev", level=1)
    assert status.status == "ok"
    assert status.multiplexed == {"Backend_Bound": 33.3, "Bad_Speculation": 33.3,
                                     "Frontend_Bound": 33.3, "Retiring": 33.3}


def test_replay_topdown_refusal_is_unavailable(monkeypatch, tmp_path, fixtures_dir):
    # perf 6.1 --topdown on the no-PMU VM: real rc 234; analysis.tma files it under no-PMU.
    fx = fixtures_dir / "tma/perf/no_pmu_vm/topdown.stdout"
    status, _, _ = _replay(monkeypatch, tmp_path, fx, "perf", level=1)
    assert status.status == "unavailable" and status.rc == 234
    assert "top down event configuration requires system-wide mode (-a)" in status.reason


def test_real_perf_gone_pid_is_failed_with_perfs_words(tmp_path, monkeypatch):
    monkeypatch.delenv("PERF", raising=False)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer exists: perf refuses for real
    ctx = RepContext(rep_dir=tmp_path, window_s=0.1, pid=gone.pid)
    c = TmaCollector(TmaConfig(backend="perf", level=1))
    c.start(ctx)
    status = c.stop(ctx)
    assert status.status == "failed" and status.rc != 0
    err = (tmp_path / "tma.stderr").read_text()
    assert "Problems finding threads of monitor" in err
    # perf names its first complaint first (on CPUs whose perf has no TopdownL1 group that
    # is "Cannot find metric or group", else the thread error): the reason quotes it.
    first = next(line.strip() for line in err.splitlines() if line.strip())
    assert status.reason.startswith(f"tma.json: perf exited with code {status.rc}: {first}")


# -- the real thing on this machine ------------------------------------------------------

def test_the_tool_is_tracked_so_ctrl_c_cleanup_takes_it_down(tmp_path, monkeypatch):
    """The TMA tool runs through procs.spawn: procs.kill_all (what SIGINT/SIGTERM and exit
    call) reaches it and the `sleep` it runs, and stop() then returns at once."""
    import time
    monkeypatch.delenv("PERF", raising=False)
    victim = subprocess.Popen(["sleep", "60"])
    try:
        ctx = RepContext(rep_dir=tmp_path, window_s=30, pid=victim.pid)
        c = TmaCollector(TmaConfig(backend="perf", level=1))
        c.start(ctx)
        proc = c._run.proc
        assert proc in procs.live()
        deadline = time.monotonic() + 10
        while len(_group(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)            # perf and its `sleep 30` workload
        assert len(_group(proc.pid)) >= 2
        procs.kill_all(timeout_s=3)
        assert proc.poll() is not None and _group(proc.pid) == []
        t0 = time.monotonic()
        status = c.stop(ctx)
        assert time.monotonic() - t0 < 5 and status.rc is not None
        assert proc not in procs.live()
    finally:
        victim.kill()
        victim.wait()


def _group(pgid: int) -> list[str]:
    out = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout.split()
    alive = []
    for pid in out:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def test_real_perf_on_this_machine_is_unavailable_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.delenv("PERF", raising=False)
    victim = subprocess.Popen(["sleep", "30"])
    try:
        rep_dir = tmp_path / "cand" / "2"
        ctx = RepContext(rep_dir=rep_dir, window_s=0.3, pid=victim.pid)
        c = TmaCollector(TmaConfig(backend="perf", level=4))
        c.start(ctx)
        status = c.stop(ctx)
    finally:
        victim.kill()
        victim.wait()
    assert status.status == "unavailable"
    assert status.reason.startswith("no hardware PMU: perf reports '<not supported>' for the "
                                       "hardware counter 'cycles'")
    assert status.rc == 0
    assert status.command[-5:] == ["-p", str(victim.pid), "--", "sleep", "0.3"]
    assert status.files == ["tma.cmd", "tma.json", "tma.rc", "tma.stderr"]
    # The raw output is kept: perf's fallback counters with <not supported> cycles.
    assert '"counter-value" : "<not supported>", "unit" : "", "event" : "cycles"' in \
        (rep_dir / "tma.json").read_text()
    assert (rep_dir / "tma.stderr").exists()


# -- runner plugin hooks (collectors/runner/plugins.py PLUGIN_MODULES) ------------------------------

def test_runner_hooks_on_this_machine(monkeypatch, tmp_path):
    import argparse
    from commands.options import add_run_flags
    from collectors.runner.options import RunOptions
    monkeypatch.delenv("PERF", raising=False)
    monkeypatch.setattr(tma, "_PREFLIGHTS", {})
    p = argparse.ArgumentParser()
    add_run_flags(p, tma.RUN_FLAGS)
    a = p.parse_args(["--tma", "perf", "--tma-level", "3", "--tma-split"])
    opts = RunOptions(extra=vars(a))
    block = tma.manifest_sections(opts, host=HostFacts()).tma
    assert block.backend == "perf" and block.status == "unavailable"
    assert "no hardware PMU" in block.reason
    assert (block.level, block.split, block.reps) == (3, True, "throughput")
    # The schedule is this machine's CPU's (tests/test_cpu_models.py replays each model's
    # recorded facts): AMD Zen 4/5 one set of two groups, Zen 3 and older none (no tree).
    from collectors.host.cpuid import identify_file
    cpu = identify_file()
    expected = {"amd-pipeline": [["PipelineL1", "PipelineL2"]], "none": [],
                "arm-topdown": [["Cycle_Accounting" if cpu.catalog == "neoverse-n1"
                                 else "TopdownL1"]]}
    got = [s.perf for s in block.schedule]
    if cpu.method == "intel" or cpu.vendor == "unknown":
        assert got[:2] == [["TopdownL1", "TopdownL2"], ["tma_memory_bound_group"]]
    else:
        assert got == expected[cpu.method], (cpu.name, got)
    assert block.tree is cpu.has_tree
    if not cpu.has_tree:
        assert block.reason.startswith("no top-down tree on this CPU: ")
    assert tma.rep_collectors(opts, "profile") == []
    (c,) = tma.rep_collectors(opts, "throughput")
    assert c.name == "tma"
    ctx = RepContext(rep_dir=tmp_path, window_s=1, pid=1)
    c.start(ctx)
    st = c.stop(ctx)
    assert st.status == "unavailable" and st.reason == block.reason
    off = RunOptions(extra=vars(p.parse_args(["--tma", "off"])))
    assert tma.rep_collectors(off, "throughput") == []
