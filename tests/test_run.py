"""The whole run pipeline, for real: Redis from Debian source vs the same + the MSET
prefetch patch, the mset-10keys case at size tiny, perf on 127.0.0.1. One run (module
fixture) is shared by the checks below."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.inputs.collector_facts import CollectorFacts
from analysis.inputs.rundir import load_run
from analysis.toolpaths import perf_binary
from collectors.host.machine import cache_sizes
from commands.run import main as run_main
from collectors.profilers.perf.windows import schedule
from collectors.host import sample_cost
from collectors.runner.options import DEFAULT_FREQ_HZ, RunOptions
from collectors.runner.placement import placement
from collectors.runner.rep_order import build_rep_order, interleave
from collectors.workload.cases import load_case
from collectors.workload.dataset import keyspace_bytes_estimate, l3_warning
from tests.conftest import REPO
from tests.conftest_run import BASE_SPEC, CAND_SPEC, built, cli_env

pytestmark = pytest.mark.slow

CASE = "mset-10keys"
KEYS_SMALL = 200_000          # cases/mset-10keys.yaml, size tiny
CSV_HEADER = ["test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
              "p95_latency_ms", "p99_latency_ms", "max_latency_ms"]


@pytest.fixture(scope="module")
def mset_run(tmp_path_factory):
    built("base", BASE_SPEC)
    built("cand", CAND_SPEC)
    out = tmp_path_factory.mktemp("runs")
    # Progress on: stderr is a pipe here, so the run reports one line per finished rep.
    # separate reps (the fallback where pairing cannot work), asked for: what every rep of
    # that mode records; paired runs are tested in test_paired_servers.py
    args = [CASE, "--size", "tiny", "--variant", f"base={BASE_SPEC}", "--variant", f"cand={CAND_SPEC}",
            "--reps", "2", "--profile-reps", "1", "--unpaired", "--out", str(out)]
    r = subprocess.run([sys.executable, "-m", "collectors", "run", *args], cwd=REPO, env=cli_env(),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    run_dir = Path(r.stdout.strip().splitlines()[-1])
    assert run_dir.parent == out
    return load_run(run_dir), args, r.stderr


def test_manifest_is_complete(mset_run):
    rd, args, _ = mset_run
    m = rd.manifest
    assert re.fullmatch(r"\d{8}-\d{6}-mset-10keys", m.run_id)
    assert m.command[-len(args):] == args and m.command[:2] == ["stallscope", "run"]
    assert m.case.name == CASE and m.size == "tiny" and m.case.dataset.keys == KEYS_SMALL
    assert list(m.variants) == ["base", "cand"]
    b, c = m.variants["base"], m.variants["cand"]
    assert b.spec == BASE_SPEC and c.spec == CAND_SPEC
    assert b.binary_sha256 != c.binary_sha256 and len(b.binary_sha256) == 64
    assert c.patches and c.patches[0]["file"].endswith("mset-bucket-prefetch.patch")
    assert b.frame_pointers and b.symbols and b.callgraph == "fp"
    written = json.loads((rd.path / "manifest.json").read_text())["host"]
    for k in ("cpu_model", "cores", "l3_bytes", "kernel", "thp", "smt", "mitigations", "pmu",
              "perf_event_paranoid", "virtualization", "compiler"):
        assert k in written, k
    assert not m.host.extra and m.host.l3_bytes and m.host.cpu_model   # every fact declared
    assert m.tools["perf"] and m.tools["inferno"] and m.tools["benchmark[base]"] == b.version
    if len(os.sched_getaffinity(0)) >= 2:
        assert m.placement.server_cpus == [0] and m.placement.client_cpus == [1]
    assert m.profiling.mode == "separate" and m.profiling.profiler == "perf"
    assert m.profiling.event == "cpu-clock"
    assert (m.warmup.mode, m.warmup.seconds) == ("per-rep", 1.0) and "warmup.csv" in m.warmup.note
    for v in ("base", "cand"):
        cal = m.calibration[v]
        assert cal.target_s == 3.0 and cal.requests > 50
        assert cal.probe_wall_s >= 0.5
    assert m.status.state == "complete"
    assert m.dataset.keys == KEYS_SMALL and Path(m.dataset.snapshot).is_file()


def test_reps_are_interleaved_and_all_ok(mset_run):
    m = mset_run[0].manifest
    got = [(r.variant, r.rep, r.kind, r.status) for r in m.schedule]
    assert got == [("base", 1, "throughput", "ok"), ("cand", 1, "throughput", "ok"),
                   ("cand", 2, "throughput", "ok"), ("base", 2, "throughput", "ok"),
                   ("base", 3, "profile", "ok"), ("cand", 3, "profile", "ok")]
    starts = [r.started for r in m.schedule]
    assert starts == sorted(starts)
    assert len(m.reps(kind="throughput")) == 4


def test_raw_outputs_and_keyspace_verified_every_rep(mset_run):
    rd = mset_run[0]
    assert (rd.path / "dataset" / "preload.txt").is_file()
    ver = json.loads((rd.path / "dataset" / "verify.json").read_text())
    assert ver["ok"] is True and ver["dbsize"] == KEYS_SMALL
    for rep in rd.manifest.schedule:
        d = rd.rep_dir(rep)
        rows = list(csv.reader((d / "bench.csv").open()))
        assert rows[0] == CSV_HEADER, d
        assert rows[1][0].startswith("MSET key:__rand_int__ ")
        assert float(rows[1][1]) > 100          # requests/s
        f = json.loads((d / "rep.json").read_text())
        assert f["kind"] == rep.kind and f["dataset"]["dbsize"] == KEYS_SMALL
        assert f["rdb_load"]["keys_loaded"] == KEYS_SMALL and f["rdb_load"]["seconds_to_ready_s"] > 0
        assert f["bench"]["rps"] == float(rows[1][1])
        assert f["window"]["t1"] > f["window"]["t0"]
        assert f["commands"]["bench"][f["commands"]["bench"].index("-n") + 1] == \
            str(rd.manifest.calibration[rep.variant].requests)
        assert f["requests"] == rd.manifest.calibration[rep.variant].requests and f["schema"] == 2
        assert "-p" in f["commands"]["bench"] and "127.0.0.1" in f["commands"]["server"]
        assert (d / "warmup.csv").read_text().startswith('"test","rps"')
        assert "Ready to accept connections" in (d / "server.log").read_text()
        assert f"process_id:{f['pid']}" in (d / "info.txt").read_text()
        assert f["server_stop"] == "shutdown"
        assert f["settle"]["rehashing_s"] is not None and f["settle"]["rehashing_s"] >= 0
        # who was busy: the server's threads (main thread first by tid) and the load generator
        sat = rd.facts(rep).saturation
        assert sat.window_s == pytest.approx(f["window"]["t1"] - f["window"]["t0"], abs=0.5)
        main = sat.main_thread()
        assert main is not None and main.name == "redis-server" and main.tid == f["pid"]
        assert 0.05 < main.busy <= 1.05 and sat.client_cpu_s > 0 and sat.client_capacity == 1.0
        assert {t.name for t in sat.server_threads} >= {"redis-server", "bio_lazy_free"}
    assert not (rd.path / ".scratch").exists()
    # Whether 200k small strings fit in L3 depends on the host: the run says so when they do.
    case = load_case(CASE, "tiny")
    l3 = cache_sizes()["l3_bytes"]
    assert rd.manifest.dataset.l3_warning == l3_warning(case)
    if l3 is not None and keyspace_bytes_estimate(case) <= l3:
        assert "not larger than this host's L3" in rd.manifest.dataset.l3_warning
    else:
        assert rd.manifest.dataset.l3_warning is None


def test_progress_is_one_line_per_rep_when_stderr_is_not_a_terminal(mset_run):
    rd, _, stderr = mset_run
    lines = [ln for ln in stderr.splitlines() if re.match(r"stallscope run: \[\d+/\d+\] ", ln)]
    reps = rd.manifest.schedule
    assert len(lines) == len(reps) == 6
    for i, (ln, rep) in enumerate(zip(lines, reps), 1):
        m = re.fullmatch(rf"stallscope run: \[{i}/6\] {rep.dir} {rep.kind} ok in (\d+\.\d) s "
                         rf"\(([\d,]+) ops/s\); (about \S+ left|done)", ln)
        assert m, ln
        rps = json.loads((rd.rep_dir(rep) / "rep.json").read_text())["bench"]["rps"]
        assert m.group(2) == f"{rps:,.0f}"
        assert (m.group(3) == "done") == (i == 6)
    assert "stallscope run: calibrated base: -n " in stderr


def test_profile_reps_have_folded_stacks_with_lookup_functions(mset_run):
    rd = mset_run[0]
    for rep in rd.manifest.reps(kind="profile"):
        d = rd.rep_dir(rep)
        folded = (d / "perf.folded").read_text().splitlines()
        assert len(folded) > 10
        frames = [ln.rsplit(" ", 1)[0].split(";") for ln in folded]
        assert {f[0] for f in frames} <= {"redis-server", "bio_close_file", "bio_aof",
                                         "bio_lazy_free", "io_thd_1", "io_thd_2"}
        assert "redis-server" in {f[0] for f in frames}
        flat = {fn for f in frames for fn in f}
        assert "msetGenericCommand" in flat
        assert any(fn.startswith("dictFind") for fn in flat), sorted(flat)[:50]
        assert {"lookupKey", "setKey", "dbAdd", "dbAddInternal"} & flat
        assert all(int(ln.rsplit(" ", 1)[1]) > 0 for ln in folded)
        tsv = (d / "perf.threads.tsv").read_text().splitlines()
        assert tsv[0] == "tid\tcomm\tsamples"
        pid = json.loads((d / "rep.json").read_text())["pid"]
        assert f"{pid}\tredis-server\t" in "\n".join(tsv)
        assert not (d / "perf.data").exists()
        facts = json.loads((d / "rep.json").read_text())["collectors"]["perf"]
        cmd = facts["command"]
        assert cmd[:2] == [perf_binary(), "record"] and cmd[cmd.index("-e") + 1] == "cpu-clock"
        # frame pointers, or DWARF where the run's probe found a thread's stacks truncated
        cg = facts["callgraph"]
        assert ("-g" in cmd) == (cg == "fp") and (cmd[cmd.index("-p") + 1] == str(pid) if "-p" in cmd
                                                   else cg == "fp+dwarf"), (cg, cmd)
        # profile windows: perf sampled every other window (ABBA) through its control FIFO
        assert cmd[cmd.index("-D") + 1] == "-1" and cmd[cmd.index("--control") + 1].startswith("fifo:")
        wins = facts["windows"]
        assert [w["perf"] for w in wins] == schedule(len(wins))   # off on on off ...
        # as many windows as fit (the first rep's unwind probe takes part of its window): each
        # at least 0.25 s and 6 INFO round trips long (a saturated server answers INFO only
        # after the pipelines queued ahead), an even number, at most the 64 asked
        plan = facts["window_plan"]
        assert plan["asked"] == 64 and len(wins) in (plan["planned"], plan["planned"] - 1)
        step = max(0.25, 6 * plan["info_ms"] / 1000)
        most, least = int(plan["left_s"] / step), int((plan["left_s"] - 0.5) / step)
        assert max(2, least - least % 2) <= plan["planned"] <= max(2, most), plan
        assert len(wins) >= 2 and plan["planned"] % 2 == 0
        assert facts["windows_error"] is None and all(w["commands"] > 0 for w in wins)
        assert facts["sampled_commands"] == sum(w["commands"] for w in wins if w["perf"])
        # the samples cover the "on" windows only: about sampled_s x the rate, not the whole window
        # (the rate this host's measured cost per sample allows: host/sample_cost.py)
        hz = facts["frequency_hz"]
        assert hz == rd.manifest.profiling.frequency_hz and hz in sample_cost.RATES
        # (cpu-clock samples a thread while it is on a CPU: fewer when the host is busy)
        assert 0.2 * facts["sampled_s"] * hz <= facts["samples"] <= 1.25 * facts["sampled_s"] * hz
        assert facts["sampled_s"] < 0.7 * facts["window_s"]
    for rep in rd.manifest.reps(kind="throughput"):
        assert not (rd.rep_dir(rep) / "perf.folded").exists()   # throughput reps unprofiled


def test_schedule_rotation_and_placement():
    assert interleave(["A", "B"], 4) == list("ABBAABBA")
    assert interleave(["A", "B", "C"], 3) == list("ABCBCACAB")
    s = build_rep_order(["a", "b"], RunOptions(reps=1, profile="off"), "redis-benchmark")
    assert [(r.dir, r.kind) for r in s] == [("a/1", "throughput"), ("b/1", "throughput")]
    s = build_rep_order(["a", "b"], RunOptions(reps=2, paired=True, profile_reps=1), "redis-benchmark")
    assert [(r.dir, r.kind) for r in s] == [("paired/1", "paired"), ("paired/2", "paired"),
                                           ("a/1", "profile"), ("b/1", "profile")]
    assert build_rep_order(["a"], RunOptions(reps=1), "rdb-load")[-1].kind == "throughput"
    assert (placement(1, [0, 1]).server_cpus, placement(1, [0, 1]).client_cpus) == ([0], [1])
    assert placement(3, [0, 1, 2, 3]).server_cpus == [0, 1, 2]   # io-threads counts the main thread
    assert placement(4, [0, 1, 2, 3]).server_cpus is None         # 4 threads + client > 4 CPUs
    assert placement(1, [3]).server_cpus is None
    # io-threads 2 on 2 CPUs: pinning the server to one CPU collapses it; nothing is pinned
    two = placement(2, [0, 1])
    assert two.server_cpus is None and two.client_cpus is None
    assert "io-threads 2 need 2 server CPUs plus 1" in two.note
    assert placement(2, [0, 1, 2]).server_cpus == [0, 1]


def test_cli_errors_are_clear(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        run_main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "debsrc:PACKAGE" in out and "--resume" in out and "Examples" in out
    assert run_main(["--variant", "a=debsrc:redis"]) == 2
    assert "name a case" in capsys.readouterr().err
    assert run_main([CASE, "--variant", "base=nonsense", "--out", str(tmp_path)]) == 2
    assert "must start with debsrc:, git:, dir: or bin:" in capsys.readouterr().err
    assert run_main(["no-such-case", "--variant", "a=debsrc:redis", "--out", str(tmp_path)]) == 2
    assert "no-such-case" in capsys.readouterr().err
    assert run_main(["--resume", str(tmp_path)]) == 2
    assert "no manifest.json here" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_memtier_requested_without_memtier_falls_back_end_to_end(tmp_path):
    """--load-generator memtier on a host without memtier_benchmark (the dev host: not in
    Debian bookworm): the run still measures, with redis-benchmark, and says why on stderr
    and in the manifest. One variant, one rep, no profile: about 15 s."""
    import shutil
    env = cli_env()
    env.pop("MEMTIER", None)
    if shutil.which("memtier_benchmark", path=env["PATH"]):
        pytest.skip("memtier_benchmark is installed here: the fallback is not what runs")
    built("base", BASE_SPEC)
    args = [CASE, "--size", "tiny", "--variant", f"base={BASE_SPEC}", "--reps", "1", "--profile", "off",
            "--load-generator", "memtier", "--out", str(tmp_path), "--no-progress"]
    r = subprocess.run([sys.executable, "-m", "collectors", "run", *args], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert ("stallscope run: load generator: memtier requested (--load-generator memtier), using "
            "redis-benchmark instead: memtier_benchmark not on PATH (install it from its release or "
            "build it from source, or set MEMTIER=/path)") in r.stderr
    rd = load_run(Path(r.stdout.strip().splitlines()[-1]))
    m = rd.manifest
    bench = built("base", BASE_SPEC).benchmark_bin
    assert m.load_generator.to_json() == {
        "requested": "memtier", "used": "redis-benchmark", "path": {"base": bench},
        "reason": "memtier_benchmark not on PATH (install it from its release or build it from "
                  "source, or set MEMTIER=/path)",
        "asked_by": "--load-generator memtier"}
    assert m.options.load_generator == "memtier" and m.calibration["base"].requests > 0
    (rep,) = m.schedule
    assert rep.status == "ok"
    d = rd.rep_dir(rep)
    facts = json.loads((d / "rep.json").read_text())
    assert facts["commands"]["bench"][0] == bench and (d / "bench.csv").is_file()
    assert not (d / "bench.json").exists()


def test_ctrl_c_while_variants_are_checked_ends_in_one_line_not_a_traceback(tmp_path):
    """SIGINT before the first rep (here: while the variant's binary is being inspected;
    in real life mostly during a build) exits 130 with a message, never a traceback."""
    import signal
    import time
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    bench = tmp_path / "redis-benchmark"        # beside it, as the run's preflight asks of bin:
    bench.write_text("#!/bin/sh\nexit 0\n")
    bench.chmod(0o755)
    args = [CASE, "--size", "tiny", "--profile", "off", "--no-progress", "--out", str(tmp_path / "runs"),
            "--variant", f"a=bin:{fake}", "--variant", f"b=bin:{fake}"]
    p = subprocess.Popen([sys.executable, "-m", "collectors", "run", *args], cwd=REPO, env=cli_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    # wait until it is inside `redis-server --version`: the fake itself, not any child (a tool
    # probe while the run is planned can come first; a SIGINT then may meet a process started
    # with SIGINT ignored, as a background job of a non-interactive shell is, and be lost)
    while time.monotonic() < deadline:
        if subprocess.run(["pgrep", "-f", f"{fake} --version"], capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted by SIGINT before the first rep" in err


# ------------------------------------------------------- progress and collectors, no server

class _Load:
    """Stands in for a running load generator: finish() returns at once."""
    def __init__(self, fail: bool = False):
        import subprocess as sp
        self.proc = sp.Popen(["sleep", "30"], start_new_session=True)
        self.t0_epoch, self.t1_epoch, self.fail = 1000.0, 1003.0, fail

    def finish(self, out_dir, timeout_s):
        if self.fail:
            raise RuntimeError("load generator died")
        self.proc.kill()
        self.proc.wait()
        from analysis.inputs.repfacts import BenchSummary
        return BenchSummary(test="MSET", rps=1000.0)


class _Collector:
    def __init__(self, name: str, log: list, fail_stop: bool = False):
        self.name, self.log, self.fail_stop = name, log, fail_stop

    def start(self, ctx):
        self.log.append(("start", self.name))

    def stop(self, ctx):
        self.log.append(("stop", self.name))
        if self.fail_stop:
            raise OSError(f"{self.name} lost its output")
        if self.name == "old-plugin":
            return {"status": "ok"}      # the seam's type before it was typed
        return CollectorFacts(status="ok")


def test_a_collector_that_fails_to_stop_does_not_leave_the_others_running(tmp_path):
    from analysis.inputs.repfacts import RepFacts
    from collectors.collector import RepContext
    from collectors.runner.reps import CollectorError, bracket
    log: list = []
    cs = [_Collector("perf", log, fail_stop=True), _Collector("tma", log), _Collector("parca", log, True)]
    facts = RepFacts(variant="a", rep=1)
    ctx = RepContext(rep_dir=tmp_path, window_s=1.0)
    with pytest.raises(CollectorError) as e:
        bracket(_Load(), cs, ctx, facts, target_s=1.0)
    assert log == [("start", "perf"), ("start", "tma"), ("start", "parca"),
                   ("stop", "perf"), ("stop", "tma"), ("stop", "parca")]
    assert str(e.value) == ("collector stop failed: perf: OSError: perf lost its output; "
                            "parca: OSError: parca lost its output")
    assert {k: c.to_json() for k, c in facts.collectors.items()} == {
                                "perf": {"status": "failed", "error": "OSError: perf lost its output"},
                                "tma": {"status": "ok"},
                                "parca": {"status": "failed", "error": "OSError: parca lost its output"}}
    # rep.json carries each collector's error (the runner writes these facts as they are)
    assert facts.to_json()["collectors"]["parca"]["error"] == "OSError: parca lost its output"
    # the load failing first: every collector still stops, the load's error is the rep's
    log.clear()
    load = _Load(fail=True)
    with pytest.raises(RuntimeError, match="load generator died"):
        bracket(load, cs[1:2], ctx, RepFacts(), target_s=1.0)
    assert log == [("start", "tma"), ("stop", "tma")]
    assert load.proc.poll() is not None          # and the load generator is gone
    # a collector whose stop() returns anything else is a failed collector, named
    with pytest.raises(CollectorError, match="old-plugin: TypeError: stop.. returned dict, not CollectorFacts"):
        bracket(_Load(), [_Collector("old-plugin", [])], ctx, RepFacts(), target_s=1.0)
    ok = RepFacts()
    assert bracket(_Load(), [_Collector("tma", [])], ctx, ok, 1.0).rps == 1000.0
    assert ok.window.t0 == 1000.0 and ok.window.profile_window_s == 1.0


def test_progress_lines_and_time_left():
    import io
    from analysis.inputs.manifest import Rep
    from analysis.inputs.repfacts import BenchSummary, RepFacts
    from collectors.runner.progress import Progress, duration
    assert [duration(s) for s in (42.4, 190, 3725)] == ["42s", "3m10s", "1h02m"]
    out = io.StringIO()
    p = Progress(3, "mset-10keys", stream=out)
    assert p.bar is None                     # not a terminal: lines, no bar
    reps = [Rep("base", 1, status="ok"), Rep("cand", 1, status="failed"), Rep("base", 2, "profile", "ok")]
    facts = [RepFacts(bench=BenchSummary(rps=26104.4)), RepFacts(), RepFacts(bench=BenchSummary(rps=9.0))]
    p.spent_s = 0.0
    for rep, f in zip(reps, facts):
        p.start(rep)
        p._t0 -= 20.0                        # as if the rep took 20 s
        p.finish(rep, f)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"stallscope run: \[1/3\] base/1 throughput ok in 20\.\d s \(26,104 ops/s\); "
                        r"about 40s left", lines[0]), lines[0]
    assert re.fullmatch(r"stallscope run: \[2/3\] cand/1 throughput failed in 20\.\d s; about 20s left",
                        lines[1]), lines[1]
    assert lines[2].endswith("(9 ops/s); done")
    quiet = io.StringIO()
    q = Progress(1, "x", enabled=False, stream=quiet)
    q.start(reps[0])
    q.finish(reps[0], facts[0])
    q.note("calibrated")
    assert quiet.getvalue() == ""
    q.note("note: the dataset fits in L3", always=True)    # a warning is not progress
    assert quiet.getvalue() == "stallscope run: note: the dataset fits in L3\n"


def test_plugins_are_discovered_and_the_runner_names_no_collector(monkeypatch):
    import ast
    from collectors.runner import plugins as collector
    found = collector.plugins()
    assert [p.__name__ for p in found] == list(collector.PLUGIN_MODULES)
    assert [x for p in found for x in p.PROFILERS] == ["perf", "parca"]
    monkeypatch.setattr(collector, "PLUGIN_MODULES", ("collectors.host.procs",))
    with pytest.raises(collector.PluginError, match=r"procs\.py: run plugin collectors.host.procs lacks "
                                                    r"PROFILERS, RUN_FLAGS, rep_collectors"):
        collector.plugins()
    monkeypatch.setattr(collector, "PLUGIN_MODULES", ("collectors.profilers.no_such_plugin",))
    with pytest.raises(ModuleNotFoundError):     # an installation error is not skipped
        collector.plugins()
    # The runner reaches collectors only through the plugins (by name, in runner/plugins.py).
    for py in (REPO / "collectors" / "runner").glob("*.py"):
        for node in ast.walk(ast.parse(py.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("collectors.profilers"), (py, node.module)
