"""The run's preflight (collectors/runner/preflight_run.py, issue 46): perf permission, the PMU
when TMA is named, memory for the servers the run will load at once, disk for the builds and
the run directory, the load generator; each refused before any build with its fix. The last
test runs `stallscope run` as a throwaway non-root user on this host and sees it stopped in
seconds, nothing built."""
from __future__ import annotations

import dataclasses
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from collectors.runner import preflight_run as pr
from collectors.runner.api import parse_variants, with_plugin_defaults
from collectors.runner.options import RunOptions
from collectors.workload.cases import load_case
from tests.conftest import REPO

GiB = 2**30


def case(size: str = "tiny", name: str = "mset-50keys"):
    return load_case(name, size, {})


def opts(**kw) -> RunOptions:
    return with_plugin_defaults(RunOptions(**kw))


# ---------------------------------------------------------------- perf permission

@pytest.mark.parametrize("facts,refused,words", [
    (pr.Facts(paranoid=3, root=True), False, ""),
    (pr.Facts(paranoid=3, perfmon="this process"), False, ""),
    (pr.Facts(paranoid=1), False, ""),
    (pr.Facts(paranoid=-1), False, ""),
    (pr.Facts(paranoid=2), True, "record the server's user space only"),
    (pr.Facts(paranoid=3), True, "perf refuses every non-root user"),
    (pr.Facts(paranoid=4), True, "perf refuses every non-root user"),
    (pr.Facts(paranoid=None), True, "no perf events"),
])
def test_perf_permission(facts, refused, words):
    r = pr.judge_perf(facts)
    assert (r is not None) == refused
    if refused:
        assert words in r.problem
        if facts.paranoid is not None:
            assert f"kernel.perf_event_paranoid={facts.paranoid}" in r.problem
            assert "sudo sysctl kernel.perf_event_paranoid=1" in r.fix and "--profile off" in r.fix



def test_doctor_judges_perf_by_the_same_rule(monkeypatch):
    from collectors import doctor
    from collectors.host.preflight import HostFacts
    monkeypatch.setattr(pr, "perfmon_holder", lambda: None)
    c = doctor.check_perf(HostFacts(perf_path="/usr/bin/perf", perf_version=(6, 1), paranoid=2, is_root=False))
    assert c.available is False and "kernel.perf_event_paranoid=2" in c.detail
    assert "sudo sysctl kernel.perf_event_paranoid=1" in c.fix
    ok = doctor.check_perf(HostFacts(perf_path="/usr/bin/perf", perf_version=(6, 1), paranoid=1, is_root=False))
    assert ok.available and ok.detail.endswith("perf_event_paranoid=1 (non-root)")
    root = doctor.check_perf(HostFacts(perf_path="/usr/bin/perf", perf_version=(6, 1), paranoid=3, is_root=True))
    assert root.available and root.detail.endswith("(root)")

def test_capabilities_read_from_the_process_and_from_perfs_file(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t0000004000000000\n")      # bit 38: CAP_PERFMON
    assert pr._caps_effective(status) == 1 << pr.CAP_PERFMON
    status.write_text("CapEff:\t0000000000000000\n")
    assert pr._caps_effective(status) == 0
    if not shutil.which("setcap"):
        pytest.skip("setcap not installed (libcap2-bin)")
    f = tmp_path / "perf"
    shutil.copy("/bin/true", f)
    assert pr._file_caps(str(f)) == 0
    p = subprocess.run(["setcap", "cap_perfmon+ep", str(f)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"setcap refused here: {p.stderr.strip()}")
    assert pr._file_caps(str(f)) >> pr.CAP_PERFMON & 1


# ---------------------------------------------------------------- memory

def test_servers_at_once_foresees_the_pairing():
    c = case("tiny")
    two = parse_variants(["base=debsrc:redis", "mine=dir:/src/redis"])
    cfg = parse_variants(["a=debsrc:redis", "b=debsrc:redis+config=save="])
    assert pr.servers_at_once(c, two, opts(), 64 * GiB) == (2, None)
    assert pr.servers_at_once(c, cfg, opts(), 64 * GiB) == (1, None)        # CONFIG SET, one server
    assert pr.servers_at_once(c, two, opts(pairing="unpaired"), 64 * GiB) == (1, None)
    assert pr.servers_at_once(c, two + cfg[:1], opts(), 64 * GiB) == (1, None)
    big = case("default")
    # the host cannot hold two: auto falls back to one at a time, --paired is refused now
    assert pr.servers_at_once(big, two, opts(), 2 * GiB) == (1, None)
    n, r = pr.servers_at_once(big, two, opts(pairing="paired"), 2 * GiB)
    assert n == 1 and r.check == "memory" and r.problem.startswith("--paired: two servers loaded at once")
    assert "without --paired" in r.fix


def test_memory_for_the_servers_against_what_is_available():
    big = case("default")
    f = pr.Facts(mem_available=3 * GiB, mem_total=8 * GiB)
    r = pr.judge_memory(big, 2, f)
    assert r.check == "memory" and "for 2 servers loaded at once" in r.problem
    assert "3 GiB of 8 GiB available now" in r.problem and "--unpaired" in r.fix
    one = pr.judge_memory(dataclasses.replace(big), 1, pr.Facts(mem_available=GiB // 2))
    assert "for the server" in one.problem and "--size" in one.fix and "dataset.keys" in one.fix
    assert pr.judge_memory(case("tiny"), 2, f) is None
    assert pr.judge_memory(big, 2, pr.Facts(mem_available=None)) is None       # cannot tell: no refusal


# ---------------------------------------------------------------- disk

def test_disk_sums_what_lands_on_each_file_system():
    needs = [(Path("/c/builds"), 300 * 2**20, "the build of mine"), (Path("/c/datasets"), GiB, "the dataset snapshot"),
             (Path("/r/runs"), GiB, "the run directory")]
    devices = {"/c/builds": 1, "/c/datasets": 1, "/r/runs": 2}
    assert pr.judge_disk(needs, devices, pr.Facts(free={1: 2 * GiB, 2: 2 * GiB})) is None
    r = pr.judge_disk(needs, devices, pr.Facts(free={1: GiB, 2: 2 * GiB}))
    assert r.check == "disk" and "the build of mine 300 MiB in /c/builds" in r.problem
    assert "the run directory" not in r.problem and "STALLSCOPE_CACHE" in r.fix and "--out" in r.fix


def test_disk_needs_count_only_what_the_cache_lacks(tmp_path, monkeypatch):
    from tests.test_dir_variant import redis_like
    from collectors.variants.builder import build_variant
    from collectors.variants.spec import parse_variant
    monkeypatch.setenv("STALLSCOPE_CACHE", str(tmp_path / "cache"))
    tree = redis_like(tmp_path)
    specs = parse_variants([f"a=dir:{tree}", f"b=dir:{tree}+config=save="])
    needs = pr.disk_needs(case("tiny"), specs, opts(), tmp_path / "runs")
    assert [n[2] for n in needs] == ["the build of a", "the dataset snapshot", "the run directory"]
    build_variant(parse_variant(f"a=dir:{tree}"), log=lambda m: None)
    needs = pr.disk_needs(case("tiny"), specs, opts(), tmp_path / "runs")
    assert [n[2] for n in needs] == ["the dataset snapshot", "the run directory"]
    (tmp_path / "cache" / "datasets").mkdir()
    (tmp_path / "cache" / "datasets" / "mset-50keys-tiny-0123.rdb").write_bytes(b"REDIS")
    assert [n[2] for n in pr.disk_needs(case("tiny"), specs, opts(), tmp_path / "runs")] == ["the run directory"]
    laid = pr.disk_needs(case("tiny"), specs[:1], opts(layouts=2), tmp_path / "runs")
    assert [n[2] for n in laid][:2] == ["the build of a (layout 1)", "the build of a (layout 2)"]


def test_disk_needs_the_in_cache_controls_snapshot_where_the_run_makes_one(tmp_path, monkeypatch):
    """A run that decides makes an in-cache control over at most a quarter of the cache: its
    snapshot is needed too, unless the cache already holds a second snapshot of the case."""
    monkeypatch.setenv("STALLSCOPE_CACHE", str(tmp_path / "cache"))
    big = load_case("mset-50keys", "default", {}, llc=64 * 2**20)     # a 64 MiB L3: 256 MiB and more
    specs = parse_variants(["a=bin:/bin/true", "b=bin:/bin/true"])

    def what(o, c=big):
        return {n[2]: n[1] for n in pr.disk_needs(c, specs, o, tmp_path / "runs")}
    got = what(opts(targets=True))
    assert got["the in-cache control's dataset snapshot"] == 16 * 2**20
    assert got["the dataset snapshot"] >= 4 * 64 * 2**20
    assert "the in-cache control's dataset snapshot" not in what(opts(targets=True, stalls=False))
    assert "the in-cache control's dataset snapshot" not in what(opts())          # fixed --reps
    # a dataset within a quarter of the cache is its own control
    own = load_case("mset-50keys", "tiny", {}, llc=2**30)
    assert "the in-cache control's dataset snapshot" not in what(opts(targets=True), own)
    ds = tmp_path / "cache" / "datasets"
    ds.mkdir(parents=True)
    (ds / "mset-50keys-default-0123.rdb").write_bytes(b"REDIS")
    assert list(what(opts(targets=True))) == ["the in-cache control's dataset snapshot", "the run directory"]
    (ds / "mset-50keys-default-4567.rdb").write_bytes(b"REDIS")
    assert list(what(opts(targets=True))) == ["the run directory"]


# ---------------------------------------------------------------- load generator

def test_a_prebuilt_server_needs_its_benchmark(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    server = tmp_path / "redis-server"
    shutil.copy("/bin/true", server)
    specs = parse_variants([f"a=bin:{server}", f"b=bin:{tmp_path / 'nope'}"])
    found = pr.judge_load(case("tiny"), specs, opts())
    assert [r.check for r in found] == ["load-generator", "load-generator"]
    assert "no redis-benchmark/valkey-benchmark beside" in found[0].problem and "does not exist" in found[1].problem
    shutil.copy("/bin/true", tmp_path / "redis-benchmark")
    assert len(pr.judge_load(case("tiny"), specs, opts())) == 1
    from collectors.load.memtier import MemtierError
    monkeypatch.setenv("MEMTIER", str(tmp_path / "no-memtier"))
    with pytest.raises(MemtierError, match="MEMTIER=.*does not exist"):
        pr.judge_load(case("tiny"), specs, opts(load_generator="memtier"))


# ---------------------------------------------------------------- as a non-root user, for real

USER = "stallscope-pf"


def _as_user(argv: list[str], env: dict[str, str]) -> list[str]:
    """The command as USER: runuser when USER can reach this interpreter; else setpriv with the
    one capability that reads root's private home (CAP_DAC_READ_SEARCH: the venv's Python is
    under /root here), which says nothing to perf (it asks CAP_PERFMON or CAP_SYS_ADMIN)."""
    env_args = ["env", "-i", *[f"{k}={v}" for k, v in env.items()]]
    p = subprocess.run(["runuser", "-u", USER, "--", *env_args, argv[0], "-c", "pass"], capture_output=True)
    if p.returncode == 0:
        return ["runuser", "-u", USER, "--", *env_args, *argv]
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", *env_args, *argv]


@pytest.fixture
def throwaway_user():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd to make a throwaway user")
    made = False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        made = True
    home = Path(tempfile.mkdtemp(prefix="stallscope-pf-"))
    shutil.chown(home, USER, USER)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if made:
            subprocess.run(["userdel", USER], check=False)


@pytest.fixture
def paranoid_above_1():
    """kernel.perf_event_paranoid > 1 for the test (2 where it is lower), put back after."""
    knob = Path("/proc/sys/kernel/perf_event_paranoid")
    before = knob.read_text().strip()
    if int(before) <= 1:
        knob.write_text("2\n")
    try:
        yield int(knob.read_text())
    finally:
        if knob.read_text().strip() != before:
            knob.write_text(before + "\n")


def test_non_root_user_without_perf_permission_is_stopped_before_any_build(throwaway_user, paranoid_above_1):
    from tests.test_dir_variant import redis_like
    home = throwaway_user
    tree = redis_like(home)
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(home)], check=True)
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO),
           "STALLSCOPE_CACHE": str(home / "cache"), "STALLSCOPE_RECORDS": str(home / "records"), "LC_ALL": "C.UTF-8"}
    argv = [sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
            "--variant", "base=debsrc:redis", "--variant", f"mine=dir:{tree}", "--out", str(home / "runs")]
    t0 = time.monotonic()
    p = subprocess.run(_as_user(argv, env), cwd=home, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode == 2, p.stderr[-3000:]
    assert took < 60, took
    err = p.stderr
    assert "refused before any build or preload" in err
    assert f"kernel.perf_event_paranoid={paranoid_above_1}" in err and "not root" in err
    assert "hint: perf: run as root, or allow perf for your user: sudo sysctl kernel.perf_event_paranoid=1" in err
    assert "Traceback" not in err and "building" not in err
    assert not (home / "cache" / "builds").exists() and not (home / "runs").exists()
