"""TMA preflight: for real on this machine (KVM guest, AMD EPYC model, no PMU, root), and
the judgement of other machines' facts (paranoid, NMI watchdog, SMT, hybrid, toplev)."""
from __future__ import annotations

from pathlib import Path

import pytest

from collectors.host import preflight as pre
from collectors.profilers.tma import TmaCollector
from collectors.profilers.tma_commands import TmaConfig
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
    assert pmu.message == ("no hardware PMU (this is a VM: the hypervisor does not expose the PMU): "
                           "`perf stat -e cycles` printed '<not supported>,,cycles,0,100.00,,'; no "
                           "/sys/bus/event_source/devices/cpu/ or cpu_core/ PMU directory")
    assert "pmu=on" in pmu.fix and "bare metal" in pmu.fix
    assert pf.reason.startswith("no hardware PMU (this is a VM")
    block = pf.to_manifest()
    assert block.status == "unavailable" and block.backend == backend
    assert block.reason == pf.reason
    assert [f.check for f in block.findings] == [f.check for f in pf.findings]
    # Root here: paranoid does not matter.
    par = next(f for f in pf.findings if f.check == "paranoid")
    assert par.ok and "running as root" in par.message


def test_this_machine_names_its_vendors_top_down_path(facts):
    """On AMD the finding names the AMD path (pipeline utilization, perf -M PipelineL1,
    PipelineL2) and blocks only when this perf cannot count it (older than 6.2, or no
    PipelineL1 group in its metric list), saying which."""
    pf = pre.evaluate(facts, "perf")
    vendor = next(f for f in pf.findings if f.check == "vendor")
    if facts.vendor == "AuthenticAMD":
        assert vendor.message.startswith(facts.cpu.describe("perf"))
        assert "PipelineL1" in vendor.message
        old = facts.perf_version is not None and facts.perf_version < (6, 2)
        assert vendor.blocking == (old or "PipelineL1" not in (facts.metric_groups or ())), vendor
        if old:
            assert "older than 6.2" in vendor.message
    else:
        assert vendor.ok == (facts.vendor == "GenuineIntel")


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
    assert tool.message == "toplev not found (not on PATH, $TOPLEV not set)"
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
