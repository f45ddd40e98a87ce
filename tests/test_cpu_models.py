"""Every CPU model the catalogues know, on any machine: each model's recorded facts
(tests/data/machines/: its cpuinfo or lscpu, perf's version, perf 6.1's `perf list
metricgroups` for it; SOURCES.md says where each came from) go through the preflight, the
TMA plan the manifest records, and doctor's TMA rows. The expectations are written out per
model below (what is true of that CPU), not derived from the code under test.

Two ways in:
- the facts as data (every model, any host): HostFacts built from the recordings;
- the facts as the machine (x86 models, root with mount namespaces, as CI is): the real
  `stallscope doctor` and the real TMA plan run with the recording bind-mounted over
  /proc/cpuinfo and perf told the model's CPUID (PERF_CPUID), so the whole probe path runs
  as it would on that host.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from collectors.host import pmu
from collectors.host import preflight as pre
from collectors.host.cpuid import identify
from collectors.profilers.tma import TmaCollector, plan_of
from collectors.profilers.tma.commands import TmaConfig

MACHINES = Path(__file__).parent / "data" / "machines"
NO_TREE = "no top-down tree on this CPU: "
INTEL_SPLIT = [["TopdownL1", "TopdownL2"], ["tma_memory_bound_group"],
               ["tma_dram_bound_group", "tma_l3_bound_group"],
               ["tma_l1_bound_group", "tma_store_bound_group"],
               ["tma_core_bound_group", "tma_frontend_bound_group", "tma_bad_speculation_group",
                "tma_retiring_group"]]


@dataclass(frozen=True)
class Model:
    folder: str
    name: str                    # CpuId.name
    catalog: str | None
    tree: bool
    groups: list[list[str]]      # the plan's schedule with --tma-split at level 4
    perf61_counts: bool          # can perf 6.1 (recorded list) count its tree, given a PMU?
    perf_cpuid: str | None       # what perf is told the CPU is (x86 only)


MODELS = [
    Model("amd-zen2-epyc7b12", "AMD Zen 2 (family 0x17 model 0x31)", None, False, [], False,
          "AuthenticAMD-23-31-0"),
    Model("amd-zen3-epyc7763", "AMD Zen 3 (family 0x19 model 0x01)", None, False, [], False,
          "AuthenticAMD-25-1-1"),
    Model("amd-zen4-epyc9r14", "AMD Zen 4 (family 0x19 model 0x11)", "amdzen4", True,
          [["PipelineL1", "PipelineL2"]], False, "AuthenticAMD-25-11-1"),
    Model("amd-zen5-this-vm", "AMD Zen 5 (family 0x1a model 0x02)", "amdzen5", True,
          [["PipelineL1", "PipelineL2"]], False, "AuthenticAMD-26-2-1"),
    # Intel: the catalogue of the model toplev runs (clx, icx, spr); Coffee Lake's (skl) is a
    # client core, which has none
    Model("intel-cascadelake-xeon8280", "Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz", "clx",
          True, INTEL_SPLIT, True, "GenuineIntel-6-55-7"),
    Model("intel-coffeelake-i7-8700", "", None, True, INTEL_SPLIT, True, "GenuineIntel-6-9E-A"),
    Model("intel-icelake-xeon8358", "", "icx", True, INTEL_SPLIT, True, "GenuineIntel-6-6A-6"),
    Model("intel-sapphirerapids-xeon8462y", "Intel(R) Xeon(R) Platinum 8462Y+", "spr", True,
          INTEL_SPLIT, True, "GenuineIntel-6-8F-8"),
    # Emerald Rapids runs toplev's SPR model; perf 6.1 has no tables for it (an empty list)
    Model("intel-emeraldrapids-this-vm", "", "spr", True, INTEL_SPLIT, False, "GenuineIntel-6-CF-2"),
    Model("arm-neoverse-n1-altra", "Arm Neoverse N1 (CPU part 0xd0c, AWS Graviton2)",
          "neoverse-n1", True, [["Cycle_Accounting"]], False, None),
    Model("arm-neoverse-v1-graviton3", "Arm Neoverse V1 (CPU part 0xd40, AWS Graviton3)",
          "neoverse-v1", True, [["TopdownL1"]], False, None),
    Model("arm-neoverse-n2-cobalt100", "Arm Neoverse N2 (CPU part 0xd49)", "neoverse-n2", True,
          [["TopdownL1"]], False, None),
    Model("arm-neoverse-v2-grace", "Arm Neoverse V2 (CPU part 0xd4f, AWS Graviton4)",
          "neoverse-v2", True, [["TopdownL1"]], False, None),
]
IDS = [m.folder for m in MODELS]


def cpu_text(folder: Path) -> str:
    for name in ("cpuinfo.txt", "lscpu.txt"):
        if (folder / name).is_file():
            return (folder / name).read_text()
    raise AssertionError(f"{folder}: no cpuinfo.txt or lscpu.txt")


def recorded_facts(m: Model, *, pmu_counts: bool, newer: bool = False) -> pre.HostFacts:
    """The model's facts as the probe would have them: its CPU, the recorded perf version
    and metric groups (or, newer=True, the groups of the published definitions a later perf
    builds its list from), a PMU that counts or the no-PMU line a VM's perf prints."""
    d = MACHINES / m.folder
    cpu = identify(cpu_text(d))
    version = tuple(int(x) for x in
                    (d / "perf_version.txt").read_text().split()[-1].split(".")[:3])
    listing = d / ("perf-newer_metricgroups.txt" if newer else "perf6.1_list_metricgroups.txt")
    groups = (listing.read_text().split() if newer
              else pmu.parse_metric_groups(listing.read_text()))
    if cpu.vendor == "arm":
        groups = None     # perf 6.1 on x86 cannot be asked about arm64 (SOURCES.md): not asked
    return pre.HostFacts(
        perf_path="/usr/bin/perf", perf_version=(6, 8) if newer else version,
        cycles_supported=pmu_counts,
        cycles_evidence=("1234567,,cycles,1000,100.00,," if pmu_counts
                         else "<not supported>,,cycles,0,100.00,,"),
        pmu_sysfs=(["armv8_pmuv3_0"] if cpu.vendor == "arm" else ["cpu"]) if pmu_counts else [],
        paranoid=-1, nmi_watchdog=0, smt_active=False, is_root=True, hypervisor=not pmu_counts,
        vendor={"amd": "AuthenticAMD", "intel": "GenuineIntel"}.get(cpu.vendor),
        cpu_model=cpu.model_name, cpu=cpu, metric_groups=groups)


def plan(facts: pre.HostFacts, backend: str = "perf"):
    c = TmaCollector(TmaConfig(backend=backend, split=True, level=4), cpu=facts.cpu)
    return plan_of(c, c.preflight(facts))


@pytest.mark.parametrize("m", MODELS, ids=IDS)
def test_recorded_facts_name_the_model(m):
    cpu = identify(cpu_text(MACHINES / m.folder))
    assert cpu.has_tree is m.tree and cpu.catalog == m.catalog
    if m.name:
        assert cpu.name == m.name
    assert cpu.vendor == m.folder.split("-")[0]


@pytest.mark.parametrize("m", MODELS, ids=IDS)
def test_plan_for_each_model(m):
    """The manifest's tma block on that model (no PMU, as a VM or CI sees it): no tree is
    said first and plans nothing; every model with a tree plans its own vendor's groups."""
    p = plan(recorded_facts(m, pmu_counts=False))
    assert p.status == "unavailable" and "no hardware PMU" in p.reason
    assert p.tree is m.tree
    assert [s.perf for s in p.schedule] == m.groups
    if not m.tree:
        assert p.reason.startswith(NO_TREE) and p.findings[0].check == "vendor"
        assert "TopdownL" not in json.dumps(p.to_json()["schedule"])
    else:
        assert not p.reason.startswith(NO_TREE)


@pytest.mark.parametrize("m", MODELS, ids=IDS)
def test_with_a_pmu_each_model_counts_only_what_its_perf_can(m):
    """With a PMU, perf 6.1 (the recorded list) counts Intel's tree; it has no PipelineL1 for
    Zen 4 (its map sends family 25 to Zen 3's tables) or Zen 5 (no family-26 tables), and
    nothing at all for Zen 2/3; a perf whose list has the groups counts Zen 4/5."""
    facts = recorded_facts(m, pmu_counts=True)
    pf = pre.evaluate(facts, "perf", level=4)
    vendor = next(f for f in pf.findings if f.check == "vendor")
    if m.folder.startswith("arm-"):
        assert pf.available, pf.reason               # perf not asked: no verdict about groups
        return
    assert pf.available is m.perf61_counts, pf.reason
    if not m.tree:
        assert vendor.message.startswith(NO_TREE) and vendor.blocking
    elif m.catalog == "amdzen4":
        assert "older than 6.2" in vendor.message and "lists no PipelineL1 group" in vendor.message
    elif m.catalog == "amdzen5":
        assert "lists no PipelineL1 group" in vendor.message
        assert vendor.fix.startswith("install a perf that knows Zen 5")
    elif not m.perf61_counts:       # an Intel core perf 6.1 has no tables for
        assert "lists no TopdownL1 group" in vendor.message and vendor.blocking
        assert vendor.fix.startswith("use --tma toplev")
    if m.catalog in ("amdzen4", "amdzen5"):
        newer = pre.evaluate(recorded_facts(m, pmu_counts=True, newer=True), "perf", level=4)
        assert newer.available, newer.reason


def test_doctor_rows_for_each_model():
    """doctor's TMA rows judge each model's facts as the plan does (collectors/doctor.py)."""
    from collectors import doctor
    for m in MODELS:
        rows = {c.name: c for c in doctor.check_tma(recorded_facts(m, pmu_counts=False))}
        perf = rows["TMA via perf"]
        assert not perf.available
        if not m.tree:
            assert perf.detail.startswith(NO_TREE), (m.folder, perf.detail)
            assert "Zen 4+" in perf.fix
        else:
            assert perf.detail.startswith("no hardware PMU"), (m.folder, perf.detail)
        other = rows.get("TMA via toplev") or rows["TMA via topdown-tool"]
        assert not other.available


# -- the recording as the machine: the real probe, doctor and plan -------------------------

def _can_bind_mount() -> bool:
    return (os.geteuid() == 0 and shutil.which("unshare") is not None and
            subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0)


as_machine = pytest.mark.skipif(not _can_bind_mount(),
                                reason="needs root and mount namespaces (unshare -m), as CI has")


def _as_machine(m: Model, code: str, repo_root: Path) -> subprocess.CompletedProcess:
    """Run python code with the model's recording over /proc/cpuinfo and perf told its
    CPUID, in a mount namespace of its own (nothing outside it changes)."""
    text = MACHINES / m.folder / ("cpuinfo.txt" if (MACHINES / m.folder / "cpuinfo.txt").is_file()
                                  else "lscpu.txt")
    script = 'mount --bind "$1" /proc/cpuinfo && exec "$2" -c "$3"'
    env = dict(os.environ, PYTHONPATH=str(repo_root), PERF_CPUID=m.perf_cpuid)
    env.pop("PERF", None)
    env.pop("STALLSCOPE_PARCA_URL", None)
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(text), sys.executable,
                           code], cwd=repo_root, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.heavy
@as_machine
@pytest.mark.parametrize("m", [m for m in MODELS if m.perf_cpuid and m.folder.startswith("amd-")],
                         ids=lambda m: m.folder)
def test_doctor_and_a_runs_tma_plan_on_that_machine(m, repo_root):
    """`stallscope doctor` and the manifest's tma block (the run plugin's manifest_sections,
    as `stallscope run` writes it) on a Zen 2/3/4/5 host: no Intel groups on any of them."""
    code = ("import json, sys\n"
            "from commands.table import entry\n"
            "from collectors.profilers import tma\n"
            "from collectors.runner.options import RunOptions\n"
            "from analysis.inputs.host import HostFacts\n"
            "import argparse\n"
            "from commands.options import add_run_flags\n"
            "p = argparse.ArgumentParser(); add_run_flags(p, tma.RUN_FLAGS)\n"
            "opts = RunOptions(extra=vars(p.parse_args(['--tma', 'perf', '--tma-split'])))\n"
            "block = tma.manifest_sections(opts, host=HostFacts()).tma\n"
            "print(json.dumps(block.to_json()))\n"
            "sys.argv = ['stallscope', 'doctor', '--json']\n"
            "entry()\n")
    p = _as_machine(m, code, repo_root)
    assert p.returncode == 0, p.stderr
    first, rest = p.stdout.split("\n", 1)
    block = json.loads(first)
    checks = {c["name"]: c for c in json.loads(rest)}
    assert block["cpu"]["name"] == m.name and block["tree"] is m.tree
    assert [s["perf"] for s in block["schedule"]] == m.groups
    perf = checks["TMA via perf"]
    if not m.tree:
        assert block["reason"].startswith(NO_TREE)
        assert perf["detail"].startswith(NO_TREE)
    else:
        # perf 6.1 told it is this CPU lists no PipelineL1 group for it
        assert "lists no PipelineL1 group" in perf["detail"], perf["detail"]
        assert "lists no PipelineL1 group" in block["reason"]
