"""TMA preflight: for real on this machine (checked against what it is: its CPU, perf, PMU, user), and
the judgement of other machines' facts (paranoid, NMI watchdog, SMT, hybrid, toplev)."""
from __future__ import annotations

from pathlib import Path

import pytest

from collectors.host import preflight as pre
from collectors.profilers.tma import TmaCollector
from collectors.profilers.tma.commands import TmaConfig
from tests.conftest import HAS_PMU, no_pmu_only


@pytest.fixture(scope="module")
def facts() -> pre.HostFacts:
    return pre.probe_host()


def test_this_machine_facts_are_probed_for_real(facts):
    assert facts.perf_path and facts.perf_version and facts.perf_version[0] >= 5
    # The preflight's verdict must agree with an independent probe (tests/conftest.py).
    assert facts.cycles_supported is HAS_PMU
    if not HAS_PMU:
        assert facts.cycles_evidence.startswith("<not supported>,,cycles")
    assert facts.paranoid == int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    assert facts.nmi_watchdog == int(Path("/proc/sys/kernel/nmi_watchdog").read_text())
    assert facts.hypervisor == ("hypervisor" in Path("/proc/cpuinfo").read_text())


@no_pmu_only
def test_this_machine_has_no_pmu_directory(facts):
    assert facts.pmu_sysfs == []


@no_pmu_only
@pytest.mark.parametrize("backend,attach", [("perf", "pid"), ("perf", "cpus")])
def test_this_machine_reports_missing_pmu_precisely(facts, backend, attach):
    pf = pre.evaluate(facts, backend, attach)
    assert not pf.available
    pmu = next(f for f in pf.findings if f.check == "pmu")
    assert not pmu.ok and pmu.blocking
    # The words follow this machine's facts: a VM or not, the line this perf printed.
    vm = " (this is a VM: the hypervisor does not expose the PMU)" if facts.hypervisor else ""
    assert facts.cycles_evidence.startswith("<not supported>,,cycles")
    assert pmu.message == (f"no hardware PMU{vm}: `perf stat -e cycles` printed "
                           f"'{facts.cycles_evidence}'; no "
                           "/sys/bus/event_source/devices/cpu/ or cpu_core/ PMU directory")
    assert "pmu=on" in pmu.fix and "bare metal" in pmu.fix
    # ... and it is the run's reason, after "no top-down tree" on a CPU that has none.
    first = "" if facts.cpu.has_tree else f"{facts.cpu.no_tree_reason} (fix: "
    assert pf.reason.startswith(first or f"no hardware PMU{vm}")
    assert f"no hardware PMU{vm}" in pf.reason
    block = pf.to_manifest()
    assert block.status == "unavailable" and block.backend == backend
    assert block.reason == pf.reason
    assert [f.check for f in block.findings] == [f.check for f in pf.findings]
    # Root here: paranoid does not matter.
    par = next(f for f in pf.findings if f.check == "paranoid")
    assert par.ok == (facts.is_root or facts.paranoid <= (0 if attach == "cpus" else 1))
    if facts.is_root:
        assert "running as root" in par.message


def test_this_machine_names_its_vendors_top_down_path(facts):
    """Checked against what this machine is (tests/test_cpu_models.py replays every model's
    recorded facts): a CPU without a tree says so first; on AMD Zen 4/5 the finding names
    the AMD path (pipeline utilization, perf -M PipelineL1,PipelineL2) and blocks only when
    this perf cannot count it (older than 6.2, or no PipelineL1 group in its metric list,
    an empty list included), saying which."""
    pf = pre.evaluate(facts, "perf")
    vendor = next(f for f in pf.findings if f.check == "vendor")
    if not facts.cpu.has_tree:
        # AMD before Zen 4 (this CI's Zen 3 hosts), Hygon ...: no tree is the first reason.
        assert facts.cpu.method == "none" and facts.vendor != "GenuineIntel"
        assert vendor.message.startswith("no top-down tree on this CPU: "), vendor
        assert vendor.blocking and pf.findings[0] is vendor and not pf.available
    elif facts.vendor == "AuthenticAMD":
        assert vendor.message.startswith(facts.cpu.describe("perf"))
        assert "PipelineL1" in vendor.message
        # 6.2 is where perf's Zen 4 tables came (the Zen 5 ones came later: no version
        # claimed for them, the metric list decides)
        old = (facts.cpu.catalog == "amdzen4" and facts.perf_version is not None
               and facts.perf_version < (6, 2))
        listed = facts.metric_groups is not None and "PipelineL1" not in facts.metric_groups
        assert vendor.blocking == (old or listed), vendor
        if old:
            assert "older than 6.2" in vendor.message
    else:   # Intel: the tree applies where this perf lists its TopdownL1 group (6.1: not on EMR)
        listed = facts.metric_groups is None or "topdownl1" in {g.lower() for g in facts.metric_groups}
        assert vendor.ok == (facts.vendor == "GenuineIntel" and listed), vendor


@no_pmu_only
def test_collector_preflight_on_this_machine(monkeypatch):
    monkeypatch.delenv("PERF", raising=False)
    pf = TmaCollector(TmaConfig(backend="perf")).preflight()
    assert not pf.available and "no hardware PMU" in pf.reason
    off = TmaCollector(TmaConfig(backend="off")).preflight()
    assert off.to_manifest().status == "unavailable"
    assert off.reason.startswith("TMA collection switched off (--tma off)")


def test_toplev_missing_is_named(facts, monkeypatch):
    monkeypatch.setenv("TOPLEV", "/nonexistent/pmu-tools/toplev.py")
    pf = pre.evaluate(facts, "toplev", "cpus", toplev=None)
    tool = pf.findings[0]
    assert (tool.check, tool.ok, tool.blocking) == ("toplev", False, True)
    assert tool.message == ("toplev not found: $TOPLEV=/nonexistent/pmu-tools/toplev.py is no "
                            "file and no command on PATH")
    assert tool.fix.startswith("make setup (installs pmu-tools into .venv)")
    assert "TOPLEV=/path/to/pmu-tools/toplev.py" in tool.fix


# -- judgement of other machines (facts as such machines report them) --------------------

def intel_bare_metal(**kw) -> pre.HostFacts:
    base = dict(perf_path="/usr/bin/perf", perf_version=(6, 8), cycles_supported=True,
                cycles_evidence="1234567,,cycles,1000,100.00,,", pmu_sysfs=["cpu"], paranoid=2,
                nmi_watchdog=0, smt_active=False, vendor="GenuineIntel", cpu_model="Xeon",
                is_root=True, hypervisor=False)
    base.update(kw)
    return pre.HostFacts(**base)


def test_intel_bare_metal_as_root_is_available():
    pf = pre.evaluate(intel_bare_metal(), "perf")
    assert pf.available and pf.reason is None and pf.warnings == []
    assert pf.to_manifest().status == "ok"


def test_paranoid_blocks_cores_for_non_root():
    pf = pre.evaluate(intel_bare_metal(is_root=False, paranoid=2), "perf", "cpus")
    assert not pf.available
    assert pf.blockers[0].message == ("perf_event_paranoid=2 forbids counting whole CPUs (-a/-C, "
                                      "toplev --core) for a non-root user (needs <= 0)")
    pid = pre.evaluate(intel_bare_metal(is_root=False, paranoid=2), "perf", "pid")
    assert pid.available and "user space only" in pid.warnings[0].message
    deb = pre.evaluate(intel_bare_metal(is_root=False, paranoid=3), "perf", "pid")
    assert not deb.available and "forbids all perf use" in deb.reason


def test_nmi_watchdog_smt_hybrid_warnings():
    pf = pre.evaluate(intel_bare_metal(nmi_watchdog=1, smt_active=True,
                                       pmu_sysfs=["cpu_core", "cpu_atom"]), "toplev", "pid",
                      toplev=["toplev"])
    assert pf.available  # warnings, not blockers
    by = {f.check: f for f in pf.warnings}
    assert by["nmi_watchdog"].fix == "sysctl kernel.nmi_watchdog=0 (as root; set it back to 1 afterwards)"
    assert "toplev refuses -p/--pid" in by["smt"].message and "--tma-attach cpus" in by["smt"].fix
    assert "hybrid CPU" in by["hybrid"].message


def test_perf_missing_blocks():
    pf = pre.evaluate(intel_bare_metal(perf_path=None), "perf")
    assert not pf.available and pf.blockers[0].check == "perf"
    assert "apt-get install linux-perf" in pf.blockers[0].fix


def test_render_lists_every_check(facts):
    text = pre.evaluate(facts, "perf").render()
    assert text.splitlines()[0] == "TMA via perf: NOT available"
    for check in ("perf:", "pmu:", "vendor:", "paranoid:", "nmi_watchdog:", "smt:"):
        assert check in text
