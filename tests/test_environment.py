"""collectors/host/machine.py, pmu.py and versions.py against this host, cross-checked
with independent tools (getconf, lscpu, perf itself) rather than against values typed
into the test."""
from __future__ import annotations

import os
import platform
import re
import subprocess

import pytest

from analysis.toolpaths import which_tool
from collectors.host import machine as env
from collectors.host import pmu, versions


def _lscpu_caches() -> dict[str, int]:
    """lscpu -C ONE-SIZE: the size of one cache instance, read by util-linux independently."""
    r = subprocess.run(["lscpu", "-C=NAME,ONE-SIZE", "--bytes"], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def test_parse_size_units():
    assert env.parse_size("48K") == 49152
    assert env.parse_size("32768K") == 33554432
    assert env.parse_size("32M") == 33554432
    assert env.parse_size("512") == 512
    assert env.parse_size("lots") is None


def test_cache_sizes_match_lscpu():
    c = env.cache_sizes()
    want = _lscpu_caches()
    assert want, "lscpu -C printed no caches"
    for key, name in (("l1d_bytes", "L1d"), ("l1i_bytes", "L1i"), ("l2_bytes", "L2"), ("l3_bytes", "L3")):
        if name in want:
            assert c[key] == want[name], (key, c[key], want[name])


def test_cpuinfo_parses_model_and_hypervisor_flag():
    text = ("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
            "flags\t\t: fpu vme hypervisor avx512f\n")
    assert env.cpuinfo(text) == {"cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "hypervisor_flag": True}
    assert env.cpuinfo("processor: 0\n")["hypervisor_flag"] is False


def test_host_facts_are_complete_and_true_for_this_host():
    facts = env.host_facts()
    assert not facts.extra, facts.extra          # every fact has a declared field (HostFacts)
    h = facts.to_json()
    for k in ("cpu_model", "cores", "threads_per_core", "l1d_bytes", "l2_bytes", "l3_bytes", "kernel",
              "governor", "thp", "thp_defrag", "smt", "mitigations", "perf_event_paranoid",
              "nmi_watchdog", "virtualization", "pmu", "pmu_note", "compiler"):
        assert k in h, k
    assert h["kernel"] == platform.release()
    assert h["logical_cpus"] == os.cpu_count()
    assert h["cores"] * h["threads_per_core"] <= h["logical_cpus"] + h["cores"]
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        assert h["perf_event_paranoid"] == int(f.read())
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    assert f"[{h['thp']}]" in thp
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    m = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    if m:
        assert h["cpu_model"] == m.group(1).strip()
    assert re.fullmatch(r"(gcc|clang) \d+\.\d+(\.\d+)?", h["compiler"])
    assert "spectre_v2: " in h["mitigations"]


def _cycles_line(text: str) -> str:
    return next((l.strip() for l in text.splitlines() if ",cycles" in l), "")


def test_pmu_detection_agrees_with_perf_stat():
    """The probe against perf itself, run independently: which verdict and which note are
    true here is decided by what perf prints on this host, not assumed."""
    r = subprocess.run(["perf", "stat", "-x,", "-e", "cycles", "true"], capture_output=True, text=True)
    line = _cycles_line(r.stderr)
    probe = pmu.probe_cycles()
    if r.returncode == 0 and re.match(r"^\d", line):
        assert probe.counts is True and probe.note == f"`perf stat -e cycles` counts: {line}"
    elif "<not supported>" in line or "<not counted>" in line:
        assert probe.counts is False
        assert probe.note == f"no hardware PMU: `perf stat -e cycles` printed '{line}'"
    else:
        assert probe.counts is None and probe.note.startswith("PMU not verified: ")
    h = env.host_facts()
    assert (h.pmu, h.pmu_note) == (probe.counts is True, probe.note)


@pytest.mark.parametrize("stderr,rc,counts,note", [
    ("<not supported>,,cycles,0,100.00,,", 0, False,
     "no hardware PMU: `perf stat -e cycles` printed '<not supported>,,cycles,0,100.00,,'"),
    ("<not counted>,,cycles,0,0.00,,", 0, False,
     "no hardware PMU: `perf stat -e cycles` printed '<not counted>,,cycles,0,0.00,,'"),
    ("1234567,,cycles,1000,100.00,,", 0, True, "`perf stat -e cycles` counts: 1234567,,cycles,1000,100.00,,"),
    ("Error: Access to performance monitoring and observability operations is limited.", 255, None,
     "PMU not verified: Error: Access to performance monitoring and observability operations is limited."),
])
def test_pmu_probe_reads_what_perf_prints(tmp_path, monkeypatch, stderr, rc, counts, note):
    """Each of perf's answers gives its own verdict: the check above cannot pass on a
    host whose perf says something else."""
    fake = tmp_path / "perf"
    fake.write_text(f"#!/bin/sh\necho '{stderr}' >&2\nexit {rc}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PERF", str(fake))
    probe = pmu.probe_cycles()
    assert (probe.perf, probe.counts, probe.note) == (str(fake), counts, note)


def test_tool_versions_match_the_tools():
    t = versions.tool_versions()
    perf = subprocess.run(["perf", "--version"], capture_output=True, text=True).stdout
    assert t["perf"] and t["perf"] in perf
    assert t["python"] == platform.python_version()
    if which_tool("inferno-collapse-perf"):
        assert re.fullmatch(r"\d+\.\d+\.\d+", t["inferno"] or "")


def test_one_version_probe_runs_tools_and_one_parser_reads_them(tmp_path):
    """versions.version_output is the one way a tool is asked for its version (through
    procs, never raising) and version_tuple the one parser: perf's version, a server's
    (binary.server_version) and the snapshot's oldest-server choice all go through them."""
    from collectors.variants.binary import BinaryError, server_version
    from tests.conftest_run import base_variant
    assert versions.version_tuple("perf version 6.1.187.g0a1b") == (6, 1, 187)
    assert versions.version_tuple("Redis server v=8.0.6 sha=00000000:0") == (8, 0, 6)
    assert versions.version_tuple("unstable") is None
    perf = subprocess.run(["perf", "version"], capture_output=True, text=True).stdout
    assert versions.perf_version() == tuple(map(int, re.search(r"\d+(?:\.\d+)*", perf)[0].split(".")[:3]))
    missing = versions.version_output([str(tmp_path / "no-such-tool"), "--version"])
    assert missing.error and "not found" in missing.error and missing.text == ""
    v = base_variant()
    real = subprocess.run([v.server_bin, "--version"], capture_output=True, text=True).stdout
    assert server_version(v.server_bin)[0] in real and server_version(v.server_bin)[0] == v.version
    script = tmp_path / "redis-server"
    script.write_text("#!/bin/sh\necho 'Redis server v=7.2.4 sha=abc' \n")
    with pytest.raises(BinaryError, match="cannot run it .*not executable"):
        server_version(str(script))
    script.chmod(0o755)
    assert server_version(str(script)) == ("7.2.4", "abc")
