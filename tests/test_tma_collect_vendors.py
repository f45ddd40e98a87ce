"""Top-down collection per CPU vendor: the CPU identified from real cpuinfo text, the exact
command lines (Intel unchanged, AMD Zen 4/5 PipelineL1/L2, Arm TopdownL1 / topdown-tool),
the preflight's findings per vendor, `stallscope doctor` on this machine, and whole reps
replayed through the `$PERF` harness with REAL recorded AMD and Arm outputs."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.inputs.host import HostFacts
from analysis.tma import catalog
from analysis.tma.formats import parse_file
from collectors.collector import RepContext
from collectors.host import cpuid
from collectors.host import preflight as pre
from collectors.host.cpuid import CpuId, identify, identify_file
from collectors.profilers.tma import commands as tma_commands
from collectors.profilers.tma import plugin as tma
from collectors.profilers.tma import TmaCollector
from collectors.profilers.tma.commands import TmaConfig, TmaConfigError
from tests.conftest import HAS_PMU
from tests.test_tma_collect import REPLAY, _replay   # the $PERF replay harness

CPUINFO = Path("/proc/cpuinfo")


def _fields(text: str, *keys: str) -> str:
    """The named `key : value` lines of a cpuinfo text, as it printed them."""
    return "".join(m.group(0) + "\n" for k in keys
                   for m in [re.search(rf"^{re.escape(k)}\s*:.*$", text, re.M)] if m)


# Three fields of x86 cpuinfo, for the mapping of perf's mapfile.csv (vendor, family, model
# in decimal as cpuinfo prints them): this VM's own (AMD EPYC, family 25 model 17, Genoa);
# Zen 3 family 25 model 0x21 (the "Using CPUID AuthenticAMD-25-21-0" perf printed in the
# perf-tools posts); Zen 5 family 26 model 68 (likwid-perfctr's Ryzen 9 9950X3D).
def amd(family: int, model: int) -> CpuId:
    return identify(f"vendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: {model}\n")


ZEN4 = amd(25, 17)
ZEN3 = amd(25, 0x21)
ZEN5 = amd(26, 68)


def arm_parts(fixtures_dir: Path) -> dict[str, tuple[int, int, str]]:
    """catalogue model -> (implementer, part, product) from Arm's published telemetry
    specifications (product_configuration)."""
    out = {}
    for f in sorted((fixtures_dir / "tma/definitions").glob("arm_telemetry_solution_neoverse-*.json")):
        pc = json.loads(f.read_text())["product_configuration"]
        model = f.stem.removeprefix("arm_telemetry_solution_")
        out[model] = (int(pc["implementer"], 16), int(pc["part_num"], 16), pc["product_name"])
    return out


def arm(implementer: int, part: int) -> CpuId:
    return identify(f"CPU implementer\t: {implementer:#04x}\nCPU part\t: {part:#05x}\n")


def n2() -> CpuId:
    # N2 has no telemetry specification among the fixtures; its part is perf's (cpuid.py).
    part = next(p for p, (_, cat) in cpuid.ARM_PARTS.items() if cat == "neoverse-n2")
    return arm(cpuid.ARM_IMPLEMENTER, part)


# -- the CPU, from real cpuinfo text ------------------------------------------------------

def test_this_machines_cpuinfo():
    text = CPUINFO.read_text()
    cpu = identify_file(CPUINFO)
    assert cpu == identify(text)
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", text, re.M)
    if not vendor or vendor.group(1) != "AuthenticAMD":
        pytest.skip("not an AMD machine: the AMD identity is checked on the AMD VM")
    family = int(re.search(r"^cpu family\s*:\s*(\d+)", text, re.M).group(1))
    model = int(re.search(r"^model\s*:\s*(\d+)", text, re.M).group(1))
    assert (cpu.vendor, cpu.family, cpu.model) == ("amd", family, model)
    assert cpu.model_name == re.search(r"^model name\s*:\s*(.+)$", text, re.M).group(1).strip()
    if (family, model) == (25, 17):     # this VM: AMD EPYC, Zen 4 (Genoa)
        assert cpu.name == "AMD Zen 4 (family 0x19 model 0x11)"
        assert (cpu.catalog, cpu.method, cpu.why_not) == ("amdzen4", "amd-pipeline", None)
        assert catalog.load(cpu.catalog).vendor == "amd"
        assert cpuid.amd_mapfile_key(family, model) == "AuthenticAMD-25-11"


def test_epyc9254_rig_lscpu_fields_name_no_family_or_model(fixtures_dir):
    # The rig's metadata quotes lscpu's Model name and Flags only: no vendor, family or
    # model, so no Zen generation may be guessed from the marketing name.
    rig = (fixtures_dir / "tma/amd/amd_epyc9254_rusttcp_rig_metadata.txt").read_text()
    lines = _fields(rig, "Model name", "Flags", "Thread(s) per core")
    assert lines.startswith("Model name:")
    cpu = identify(lines)
    assert cpu.model_name == "AMD EPYC 9254 24-Core Processor"
    assert (cpu.vendor, cpu.family, cpu.model, cpu.catalog, cpu.method) == \
        ("unknown", None, None, None, "none")
    assert "names no vendor_id" in cpu.why_not


@pytest.mark.parametrize("family,model,gen,cat", [
    (23, 0x01, "Zen 1", None), (23, 0x2f, "Zen 1", None), (23, 0x31, "Zen 2", None),
    (25, 0x01, "Zen 3", None), (25, 0x0f, "Zen 3", None), (25, 0x10, "Zen 4", "amdzen4"),
    (25, 0x11, "Zen 4", "amdzen4"), (25, 0x1f, "Zen 4", "amdzen4"), (25, 0x21, "Zen 3", None),
    (25, 0x5f, "Zen 3", None), (25, 0x61, "Zen 4", "amdzen4"), (25, 0xa0, "Zen 4", "amdzen4"),
    (26, 0x44, "Zen 5", "amdzen5")])
def test_amd_generations_follow_perfs_mapfile(family, model, gen, cat):
    cpu = amd(family, model)
    assert cpu.generation == gen and cpu.catalog == cat
    assert cpu.name == f"AMD {gen} (family {family:#04x} model {model:#04x})"
    if cat:
        assert cpu.method == "amd-pipeline" and catalog.load(cat).vendor == "amd"
    else:
        assert cpu.method == "none"
        assert cpu.why_not == (f"AMD {gen} (family {family:#04x} model {model:#04x}) has no "
                               "pipeline-utilization metrics (perf's PipelineL1/L2 exist for Zen 4 "
                               "and later only)")


def test_arm_parts_from_arms_published_specifications(fixtures_dir):
    parts = arm_parts(fixtures_dir)
    assert set(parts) == {"neoverse-n1", "neoverse-v1", "neoverse-v2", "neoverse-v3"}
    for model, (implementer, part, product) in parts.items():
        cpu = arm(implementer, part)
        assert (cpu.vendor, cpu.part, cpu.catalog, cpu.method) == ("arm", part, model, "arm-topdown")
        assert cpu.name.startswith(f"Arm {product} (CPU part {part:#05x}")
        cat = catalog.load(cpu.catalog)
        assert cat.vendor == "arm" and product in cat.title
    assert "AWS Graviton2" in arm(*parts["neoverse-n1"][:2]).name
    assert "AWS Graviton3" in arm(*parts["neoverse-v1"][:2]).name
    assert "AWS Graviton4" in arm(*parts["neoverse-v2"][:2]).name
    assert n2().catalog == "neoverse-n2" and n2().name.startswith("Arm Neoverse N2 (CPU part 0xd49")
    # A part no catalogue names: the generic arm64 tree (perf's TopdownL1 names no core).
    other = arm(cpuid.ARM_IMPLEMENTER, 0x000)
    assert (other.catalog, other.method) == ("arm64", "arm-topdown")
    assert catalog.load("arm64").generic


# -- command lines ------------------------------------------------------------------------

def collector(cpu: CpuId | None, monkeypatch, **cfg) -> TmaCollector:
    monkeypatch.setenv("PERF", str(REPLAY / "replay-perf"))
    c = TmaCollector(TmaConfig(**cfg), cpu=cpu)
    c._perf, c._perf_version = "perf", (6, 8)
    return c


def cmd(c: TmaCollector, tmp_path: Path, rep: int = 1, **ctx) -> str:
    """The command line for a rep: by pid 4242, or by the cores given as cpus=."""
    c.config.attach = "cpus" if "cpus" in ctx else "pid"
    ctx = ctx if "cpus" in ctx else {"pid": 4242, **ctx}
    return shlex.join(c.command(RepContext(rep_dir=tmp_path, window_s=20, rep=rep, **ctx)))


def test_intel_command_unchanged(monkeypatch, tmp_path):
    for cpu in (None, identify("vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n")):
        c = collector(cpu, monkeypatch, backend="perf")
        assert cmd(c, tmp_path) == (f"perf stat -M TopdownL1,TopdownL2,TopdownL3,TopdownL4 -j -o "
                                    f"{tmp_path}/tma.json --metric-no-threshold -p 4242 -- sleep 20")


@pytest.mark.parametrize("cpu", [ZEN4, ZEN5], ids=["zen4", "zen5"])
def test_amd_commands(monkeypatch, tmp_path, cpu):
    c = collector(cpu, monkeypatch, backend="perf", level=4)
    assert c.level == 2 and c.raw_name == "tma.json" and c.catalog == cpu.catalog
    assert cmd(c, tmp_path) == (f"perf stat -M PipelineL1,PipelineL2 -j -o {tmp_path}/tma.json "
                                f"--metric-no-threshold -p 4242 -- sleep 20")
    assert cmd(c, tmp_path, cpus=[0, 2]) == (f"perf stat -M PipelineL1,PipelineL2 -j -o "
                                             f"{tmp_path}/tma.json --metric-no-threshold -a -C 0,2 "
                                             f"-- sleep 20")
    one = collector(cpu, monkeypatch, backend="perf", level=1)
    one._perf_version = (6, 2)      # 6.2/6.3 know no --metric-no-threshold
    assert cmd(one, tmp_path) == f"perf stat -M PipelineL1 -j -o {tmp_path}/tma.json -p 4242 -- sleep 20"
    # --tma-split: one set, every rep.
    s = collector(cpu, monkeypatch, backend="perf", level=3, split=True)
    assert {cmd(s, tmp_path, rep=r).split()[3] for r in (1, 2, 3, 5)} == {"PipelineL1,PipelineL2"}
    assert tma_commands.split_sets(4, cpu) == [(["PipelineL1", "PipelineL2"], None)]


def test_amd_auto_is_perf_and_toplev_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("TOPLEV", str(REPLAY / "replay-toplev"))
    assert TmaCollector(TmaConfig(backend="auto")).backend == "toplev"   # CPU not known yet
    assert TmaCollector(TmaConfig(backend="auto"), cpu=ZEN4).backend == "perf"
    c = collector(ZEN4, monkeypatch, backend="toplev")
    with pytest.raises(TmaConfigError, match=r"--tma toplev: toplev \(pmu-tools\) has no AMD support "
                       r"\(its TMA model is Intel's\); this is AMD Zen 4 \(family 0x19 model 0x11\): "
                       r"use --tma perf, or auto"):
        cmd(c, tmp_path)
    with pytest.raises(TmaConfigError, match="topdown-tool counts Arm Neoverse cores only"):
        cmd(collector(ZEN4, monkeypatch, backend="topdown-tool"), tmp_path)


def test_arm_perf_commands(monkeypatch, tmp_path, fixtures_dir):
    parts = arm_parts(fixtures_dir)
    v2 = arm(*parts["neoverse-v2"][:2])
    c = collector(v2, monkeypatch, backend="perf", level=4)
    assert c.level == 1 and c.catalog == "neoverse-v2"
    assert cmd(c, tmp_path) == (f"perf stat -M TopdownL1 -j -o {tmp_path}/tma.json "
                                f"--metric-no-threshold -p 4242 -- sleep 20")
    # N1: perf's N1 metrics have no TopdownL1; their level 1 is group Cycle_Accounting.
    n1 = collector(arm(*parts["neoverse-n1"][:2]), monkeypatch, backend="perf")
    assert cmd(n1, tmp_path, cpus=[1]) == (f"perf stat -M Cycle_Accounting -j -o {tmp_path}/tma.json "
                                           f"--metric-no-threshold -a -C 1 -- sleep 20")
    with pytest.raises(TmaConfigError, match="toplev .* has no Arm support.*use --tma perf or topdown-tool"):
        cmd(collector(v2, monkeypatch, backend="toplev"), tmp_path)


def test_arm_topdown_tool_commands(monkeypatch, tmp_path, fixtures_dir):
    v2 = arm(*arm_parts(fixtures_dir)["neoverse-v2"][:2])
    c = collector(v2, monkeypatch, backend="topdown-tool", level=2)
    c._topdown_tool = ["topdown-tool"]
    assert c.raw_name == "tma.csv" and c.level == 2
    c._csv_style = "file"       # the first tool: --csv FILE
    assert cmd(c, tmp_path) == (f"topdown-tool -s all --csv {tmp_path}/tma.csv --perf-output "
                                f"{tmp_path}/tma.perf-stat.txt --perf-path perf -p 4242")
    assert cmd(c, tmp_path, cpus=[0, 2]).endswith("--perf-path perf -a -C 0,2")
    c._csv_style = "dir"        # the refactored tool: a CSV directory
    assert cmd(c, tmp_path) == (f"topdown-tool -s all --cpu-generate-csv metrics --csv-output-path "
                                f"{tmp_path}/tma.topdown-tool --perf-path perf -p 4242")
    one = collector(v2, monkeypatch, backend="topdown-tool", level=1)
    one._topdown_tool, one._csv_style = ["topdown-tool"], "dir"
    assert cmd(one, tmp_path, cpus=[3]) == (f"topdown-tool -s topdown --cpu-generate-csv metrics "
                                            f"--csv-output-path {tmp_path}/tma.topdown-tool "
                                            f"--perf-path perf -C 3")
    with pytest.raises(TmaConfigError, match="topdown-tool needs a pid or the server's cpus"):
        tma_commands.topdown_tool_command(["topdown-tool"], "o", 1)


def test_arm_auto_prefers_topdown_tool(monkeypatch, tmp_path, fixtures_dir):
    v1 = arm(*arm_parts(fixtures_dir)["neoverse-v1"][:2])
    tool = tmp_path / "topdown-tool"
    tool.write_text("#!/bin/sh\nexit 0\n")          # not executable: run with its #! interpreter
    monkeypatch.setenv("TOPDOWN_TOOL", str(tool))
    assert tma_commands.find_topdown_tool() == ["/bin/sh", str(tool)]
    assert TmaCollector(TmaConfig(backend="auto"), cpu=v1).backend == "topdown-tool"
    monkeypatch.setenv("TOPDOWN_TOOL", str(tmp_path / "absent"))
    assert TmaCollector(TmaConfig(backend="auto"), cpu=v1).backend == "perf"


def test_topdown_tool_csv_into_tma_csv(tmp_path):
    # The refactored tool's layout (README.CPU.md): <dir>/<timestamp>/cpu/<product>_metrics.csv;
    # with -C one file per core and the aggregate.
    cpu_dir = tmp_path / "tma.topdown-tool" / "2026_01_02_03_04_05" / "cpu"
    cpu_dir.mkdir(parents=True)
    for name in ("neoverse_v2_core_0_metrics.csv", "neoverse_v2_core_2_metrics.csv",
                 "neoverse_v2_core_aggregate_(0,2)_metrics.csv", "neoverse_v2_core_0_events.csv"):
        (cpu_dir / name).write_text(name)
    assert tma_commands.collect_topdown_csv(tmp_path / "tma.csv") is None
    assert (tmp_path / "tma.csv").read_text() == "neoverse_v2_core_aggregate_(0,2)_metrics.csv"
    empty = tmp_path / "e"
    empty.mkdir()
    assert "wrote no *_metrics.csv" in tma_commands.collect_topdown_csv(empty / "tma.csv")


# -- preflight per vendor (facts as such machines report them) ---------------------------

def facts(cpu: CpuId, **kw) -> pre.HostFacts:
    base = dict(perf_path="/usr/bin/perf", perf_version=(6, 8), cycles_supported=True,
                cycles_evidence="1234567,,cycles,1000,100.00,,",
                pmu_sysfs=["armv8_pmuv3_0"] if cpu.vendor == "arm" else ["cpu"], paranoid=2,
                nmi_watchdog=0, smt_active=False, vendor=None, cpu_model=cpu.model_name,
                is_root=True, hypervisor=False, cpu=cpu)
    base.update(kw)
    return pre.HostFacts(**base)


def vendor_finding(pf: pre.Preflight) -> pre.Finding:
    return next(f for f in pf.findings if f.check == "vendor")


def test_amd_zen4_path_named_and_available():
    pf = pre.evaluate(facts(ZEN4, metric_groups=["PipelineL1", "PipelineL2", "tlb"]), "perf")
    assert pf.available and pf.reason is None
    v = vendor_finding(pf)
    assert (v.ok, v.message) == (True, "AMD Zen 4 (family 0x19 model 0x11): pipeline utilization via "
                                       "perf stat -M PipelineL1,PipelineL2")
    zen5 = pre.evaluate(facts(ZEN5, metric_groups=["PipelineL1", "PipelineL2"]), "perf")
    assert zen5.available and vendor_finding(zen5).message.startswith("AMD Zen 5 (family 0x1a model 0x44)")


def test_amd_old_perf_blocks_with_the_fix():
    # perf 6.1 as on this VM: its `perf list metricgroups` (branch_prediction ... tlb).
    pf = pre.evaluate(facts(ZEN4, perf_version=(6, 1, 187), metric_groups=[
        "branch_prediction", "data_fabric", "decoder", "l2_cache", "l3_cache", "tlb"]), "perf")
    assert not pf.available
    v = vendor_finding(pf)
    assert v.blocking and v.message == (
        "AMD Zen 4 (family 0x19 model 0x11): pipeline utilization via perf stat -M "
        "PipelineL1,PipelineL2, which this perf cannot count: perf 6.1.187 is older than 6.2, the "
        "first perf with Zen 4's pipeline metrics; `perf list metricgroups` (perf 6.1.187) lists no "
        "PipelineL1 group")
    assert v.fix.startswith("install perf >= 6.2")
    assert pf.reason == f"{v.message} (fix: {v.fix})"
    # A new enough perf that still lists no PipelineL1 (a distribution's stripped build).
    nogroup = pre.evaluate(facts(ZEN4, perf_version=(6, 5), metric_groups=["tlb"]), "perf")
    assert not nogroup.available and "lists no PipelineL1 group" in nogroup.reason
    assert "older than" not in nogroup.reason
    zen5 = vendor_finding(pre.evaluate(facts(ZEN5, perf_version=(6, 5), metric_groups=["tlb"]), "perf"))
    assert zen5.blocking and zen5.fix.startswith("install a perf that knows Zen 5")
    # perf answered and listed no group at all: it has no tables for this CPU (perf 6.1 on
    # a Zen 5, tests/data/machines): it cannot count PipelineL1 either. Not asked: no verdict.
    none_listed = pre.evaluate(facts(ZEN5, perf_version=(6, 1, 187), metric_groups=[]), "perf")
    assert not none_listed.available and "lists no PipelineL1 group" in none_listed.reason
    assert pre.evaluate(facts(ZEN4, metric_groups=None), "perf").available


def test_amd_zen3_and_older_have_no_pipeline_metrics():
    for cpu in (ZEN3, amd(23, 0x31)):
        pf = pre.evaluate(facts(cpu), "perf")
        v = vendor_finding(pf)
        assert not pf.available and v.blocking
        assert v.message.endswith("has no pipeline-utilization metrics (perf's PipelineL1/L2 exist "
                                  "for Zen 4 and later only)")
        assert v.fix.startswith("run the TMA reps on Zen 4+ or Intel")


def test_amd_toplev_refused_and_levels_said():
    pf = pre.evaluate(facts(ZEN4), "toplev", "cpus", toplev=["toplev"])
    v = vendor_finding(pf)
    assert not pf.available and v.blocking
    assert v.message.startswith("--tma toplev: toplev (pmu-tools) has no AMD support")
    assert v.fix == "use --tma perf, or auto"
    deep = pre.evaluate(facts(ZEN4, metric_groups=["PipelineL1", "PipelineL2"]), "perf",
                        level=4, split=True)
    assert deep.available                         # a warning, not a blocker
    lvl = next(f for f in deep.warnings if f.check == "level")
    assert "no level 3" in lvl.message and "--tma-level 4 counts levels 1-2" in lvl.message
    assert "--tma-split has nothing to split here: every rep counts PipelineL1,PipelineL2" in lvl.message
    assert lvl.fix == "--tma-level 2; drop --tma-split"
    assert not [f for f in pre.evaluate(facts(ZEN4), "perf", level=2).findings if f.check == "level"]


def test_arm_perf_and_topdown_tool(fixtures_dir):
    parts = arm_parts(fixtures_dir)
    v2 = arm(*parts["neoverse-v2"][:2])
    ok = pre.evaluate(facts(v2, metric_groups=["Default", "TopdownL1"]), "perf", level=4)
    assert ok.available
    assert vendor_finding(ok).message == ("Arm Neoverse V2 (CPU part 0xd4f, AWS Graviton4): top-down "
                                          "via perf stat -M TopdownL1")
    assert "--tma-level 4 counts level 1" in next(f for f in ok.warnings if f.check == "level").message
    old = pre.evaluate(facts(v2, metric_groups=["Cache", "TLB"]), "perf")
    v = vendor_finding(old)
    assert not old.available and "lists no TopdownL1 group" in v.message
    assert "--tma topdown-tool" in v.fix
    n1 = pre.evaluate(facts(arm(*parts["neoverse-n1"][:2]), metric_groups=["Cycle_Accounting"]), "perf")
    assert n1.available and vendor_finding(n1).message.endswith("via perf stat -M Cycle_Accounting")
    # topdown-tool: found or not; as non-root it needs perf_event_paranoid=-1.
    missing = pre.evaluate(facts(v2), "topdown-tool")
    assert missing.blockers[0].check == "topdown-tool"
    assert "TOPDOWN_TOOL=/path/to/topdown-tool" in missing.blockers[0].fix
    found = pre.evaluate(facts(v2), "topdown-tool", topdown_tool=["/usr/local/bin/topdown-tool"])
    assert found.available
    assert vendor_finding(found).message.endswith("top-down via Arm's topdown-tool")
    user = pre.evaluate(facts(v2, is_root=False, paranoid=1), "topdown-tool",
                        topdown_tool=["topdown-tool"])
    assert not user.available and "needs -1" in user.reason
    assert pre.evaluate(facts(v2), "toplev", toplev=["toplev"]).blockers[0].message.startswith(
        "--tma toplev: toplev (pmu-tools) has no Arm support")


def test_other_vendors_and_intel():
    hygon = identify("vendor_id\t: HygonGenuine\ncpu family\t: 24\nmodel\t\t: 0\n")
    pf = pre.evaluate(facts(hygon), "perf")
    assert not pf.available and vendor_finding(pf).message.startswith(
        "no top-down tree on this CPU: CPU vendor HygonGenuine has no top-down metrics "
        "stallscope knows")
    assert pf.findings[0] is vendor_finding(pf)     # the first reason, before the PMU's
    intel = pre.evaluate(facts(identify("vendor_id\t: GenuineIntel\n"), vendor="GenuineIntel"), "perf")
    assert intel.available
    assert vendor_finding(intel).message == "CPU vendor GenuineIntel: the TMA tree applies"
    refused = pre.evaluate(facts(identify("vendor_id\t: GenuineIntel\n")), "topdown-tool",
                           topdown_tool=["topdown-tool"])
    assert not refused.available and "counts Arm Neoverse cores only" in refused.reason


# -- this machine, for real, whatever CPU it is (tests/test_cpu_models.py replays every ---
# -- model's recorded facts, so each model's path runs on any machine) ----------------------

@pytest.mark.heavy
def test_doctor_names_this_cpus_path_and_why_not_here(repo_root):
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    env.pop("STALLSCOPE_PARCA_URL", None)
    env.pop("PERF", None)
    p = subprocess.run([sys.executable, "-m", "collectors", "doctor", "--json"], cwd=repo_root,
                       capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, p.stderr
    checks = {c["name"]: c for c in json.loads(p.stdout)}
    perf = checks["TMA via perf"]
    cpu = identify_file()
    facts_here = pre.probe_host()
    judged = pre.evaluate(facts_here, "perf")
    assert perf["available"] is judged.available
    if not cpu.has_tree:
        assert perf["detail"].startswith("no top-down tree on this CPU: ")
    elif cpu.vendor in ("amd", "arm") and not perf["available"]:
        assert cpu.name in perf["detail"], perf
    if not HAS_PMU:
        assert not perf["available"] and "no hardware PMU" in perf["detail"]
        assert "pmu=on" in perf["fix"]
    if cpu.method == "amd-pipeline" and facts_here.metric_groups is not None \
            and "PipelineL1" not in facts_here.metric_groups:
        assert "lists no PipelineL1 group" in perf["detail"]
    if cpu.vendor == "amd":
        toplev = checks["TMA via toplev"]
        assert toplev["available"] is False
        assert ("has no AMD support" in toplev["detail"] or
                "no top-down tree on this CPU" in toplev["detail"])


def test_runner_manifest_on_this_machine_records_the_cpu(monkeypatch):
    import argparse
    from commands.options import add_run_flags
    from collectors.runner.options import RunOptions
    monkeypatch.delenv("PERF", raising=False)
    monkeypatch.setattr(tma, "_PREFLIGHTS", {})
    p = argparse.ArgumentParser()
    add_run_flags(p, tma.RUN_FLAGS)
    assert "Intel CPU" not in p.format_help()
    block = tma.manifest_sections(RunOptions(extra=vars(p.parse_args([]))), host=HostFacts()).tma
    cpu = identify_file()
    assert block.backend == "perf" or cpu.method == "intel"
    assert (block.vendor, block.cpu.name, block.tree) == (cpu.vendor, cpu.name, cpu.has_tree)
    assert block.catalog == (cpu.catalog if cpu.has_tree else None)
    if cpu.max_level is not None and cpu.max_level < 4:
        assert (block.level, block.level_used) == (4, cpu.max_level)
        assert any("no level 3" in w or "one top-down level" in w for w in block.warnings)
    if not cpu.has_tree:
        assert block.reason.startswith("no top-down tree on this CPU: ")
    if not HAS_PMU:
        assert block.status == "unavailable" and "no hardware PMU" in block.reason


# -- whole reps replayed through the $PERF harness (REAL recorded outputs) ---------------

def replay(monkeypatch, tmp_path, fixture: Path, cpu: CpuId, **cfg):
    """A whole rep with back end auto on this CPU, through tests/test_tma_collect.py's
    harness; auto chose perf (the replayed perf ran `stat`)."""
    status, rep_dir, argv = _replay(monkeypatch, tmp_path, fixture, "auto", cpu=cpu, **cfg)
    assert argv[0] == str(REPLAY / "replay-perf") and argv[1] == "stat"
    return status, rep_dir, argv


def test_replay_amd_epyc9254_rep(monkeypatch, tmp_path, fixtures_dir):
    # Recorded on an EPYC 9254 (Genoa: Zen 4, as this VM): perf attached to a server by pid.
    fx = fixtures_dir / "tma/amd/amd_epyc9254_rusttcp_epoll-et.txt"
    here = identify_file()
    status, rep_dir, argv = replay(monkeypatch, tmp_path, fx,
                                   here if here.catalog == "amdzen4" else ZEN4)
    assert argv[1:] == ["stat", "-M", "PipelineL1,PipelineL2", "-j", "-o", str(rep_dir / "tma.json"),
                        "--metric-no-threshold", "-p", "31337", "--", "sleep", "2"]
    assert (rep_dir / "tma.json").read_bytes() == fx.read_bytes()
    assert status.files == ["tma.cmd", "tma.json", "tma.rc", "tma.stderr"]
    assert status.status == "ok" and status.reason is None, status
    assert status.max_level == 2
    r = parse_file(rep_dir / "tma.json", catalog="amdzen4")
    assert r.get("backend_bound.backend_bound_memory") == pytest.approx(18.0)
    assert r.get("frontend_bound.frontend_bound_latency") == pytest.approx(52.3)


def test_replay_amd_rep_not_counted_names_the_nmi_watchdog(monkeypatch, tmp_path, fixtures_dir):
    fx = fixtures_dir / "tma/amd/amd_epyc9254_rusttcp_forking.txt"
    status, rep_dir, _ = replay(monkeypatch, tmp_path, fx, ZEN4)
    assert status.status in ("failed", "unavailable")
    assert "nmi_watchdog" in status.reason
    assert "echo 0 > /proc/sys/kernel/nmi_watchdog" in status.reason


def test_replay_arm_neoverse_n2_rep(monkeypatch, tmp_path, fixtures_dir):
    fx = fixtures_dir / "tma/arm/arm_neoverse_n2_lkml_v4_topdownl1.txt"
    monkeypatch.setenv("TOPDOWN_TOOL", str(tmp_path / "none"))     # auto -> perf
    status, rep_dir, argv = replay(monkeypatch, tmp_path, fx, n2(), level=4)
    assert argv[1:] == ["stat", "-M", "TopdownL1", "-j", "-o", str(rep_dir / "tma.json"),
                        "--metric-no-threshold", "-p", "31337", "--", "sleep", "2"]
    assert status.status == "ok", status
    r = parse_file(rep_dir / "tma.json", catalog="neoverse-n2")
    assert r.get("backend_bound") == pytest.approx(69.4)
    assert r.get("frontend_bound") == pytest.approx(27.1)


# A stand-in for Arm's topdown-tool, run exactly like it: it follows the pid until Ctrl-C
# (SIGINT), then writes a REAL recorded topdown-tool CSV ($STALLSCOPE_REPLAY) where its
# options say: --csv FILE (the first tool) or --csv-output-path DIR (the refactored one, in
# its documented <DIR>/<timestamp>/cpu/<product>_metrics.csv layout). Its --help prints the
# usage line the real tool of that kind printed ($TDT_HELP).
TOPDOWN_STANDIN = """#!/usr/bin/env python3
import json, os, pathlib, shutil, signal, sys, time
argv = sys.argv[1:]
if argv == ["--help"]:
    print(os.environ["TDT_HELP"])
    sys.exit(0)
pathlib.Path(os.environ["TDT_ARGV"]).write_text(json.dumps(argv))
def done(*_):
    if "--csv" in argv:
        dst = pathlib.Path(argv[argv.index("--csv") + 1])
    else:
        d = pathlib.Path(argv[argv.index("--csv-output-path") + 1]) / "2026_01_02_03_04_05" / "cpu"
        d.mkdir(parents=True)
        dst = d / "neoverse_v2_metrics.csv"
    shutil.copyfile(os.environ["STALLSCOPE_REPLAY"], dst)
    sys.exit(0)
signal.signal(signal.SIGINT, done)
print("Monitoring PID. Hit Ctrl-C to stop.", flush=True)
while True:
    time.sleep(0.05)
"""
# The usage lines the two real tools print for --help (the first: telemetry-solution
# @ daf55d6; the refactored one @ 917257c, pip-installed), cut to the CSV options.
HELP_FIRST = "usage: topdown_tool [-h] [--all-cpus] [--pid PIDS] ... [--perf-output PERF_OUTPUT] [--csv CSV]"
HELP_REFACTORED = "usage: topdown-tool [--perf-path PERF_PATH] ... [--csv-output-path CSV_OUTPUT_PATH]"


@pytest.mark.parametrize("help_text,style", [(HELP_FIRST, "file"), (HELP_REFACTORED, "dir")])
def test_replay_arm_topdown_tool_rep_interrupted_at_the_windows_end(monkeypatch, tmp_path,
                                                                    fixtures_dir, help_text, style):
    fx = fixtures_dir / "tma/arm/arm_neoverse_v2_topdowntool_readme_cpu_7.txt"
    tool = tmp_path / "topdown-tool"
    tool.write_text(TOPDOWN_STANDIN)
    tool.chmod(0o755)
    monkeypatch.setenv("TOPDOWN_TOOL", str(tool))
    monkeypatch.setenv("TDT_HELP", help_text)
    monkeypatch.setenv("TDT_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("STALLSCOPE_REPLAY", str(fx))
    monkeypatch.setenv("PERF", str(REPLAY / "replay-perf"))
    v2 = arm(*arm_parts(fixtures_dir)["neoverse-v2"][:2])
    assert tma_commands.topdown_tool_csv_style([str(tool)]) == style
    rep_dir = tmp_path / "base" / "1"
    ctx = RepContext(rep_dir=rep_dir, window_s=0.5, pid=31337)
    c = TmaCollector(TmaConfig(backend="auto", level=1), cpu=v2)
    assert c.backend == "topdown-tool"
    c.start(ctx)
    status = c.stop(ctx)
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[:2] == ["-s", "topdown"] and argv[-2:] == ["-p", "31337"]
    assert (rep_dir / "tma.csv").read_bytes() == fx.read_bytes()
    assert (rep_dir / "tma.rc").read_text() == "rc=0\n"
    assert status.status == "ok", status
    r = parse_file(rep_dir / "tma.csv", catalog="neoverse-v2")
    assert r.get("frontend_bound") == pytest.approx(37.11)
    assert r.get("retiring") == pytest.approx(17.02)


# -- analysis: the manifest's catalogue, and trees that do not compare -------------------

def fake_run(tmp_path: Path, sides: dict[str, list[Path]], tma_block: dict):
    from analysis.inputs.manifest import TmaPlan
    reps = {}
    for variant, files in sides.items():
        reps[variant] = []
        for i, f in enumerate(files, 1):
            d = tmp_path / variant / str(i)
            d.mkdir(parents=True)
            (d / "tma.json").write_bytes(f.read_bytes())
            reps[variant].append(SimpleNamespace(dir=f"{variant}/{i}", path=d))
    # separate reps only (a paired rep's TMA is tests/test_tma_windows.py)
    manifest = SimpleNamespace(tma=TmaPlan.from_json(tma_block),
                               reps=lambda v=None, kind=None: [] if kind == "paired" else reps[v])
    return SimpleNamespace(manifest=manifest, rep_dir=lambda rep: rep.path)


def test_compare_parses_in_the_manifests_catalogue(tmp_path, fixtures_dir, monkeypatch):
    from analysis.compare import tma as compare_tma
    amd_dir = fixtures_dir / "tma/amd"
    run = fake_run(tmp_path, {"base": [amd_dir / "amd_epyc9254_rusttcp_epoll-et.txt"],
                              "cand": [amd_dir / "amd_epyc9254_rusttcp_epoll-lt.txt"]},
                   {"backend": "perf", "status": "ok", "vendor": "amd", "catalog": "amdzen4"})
    seen = []
    real = compare_tma.formats.parse_file
    monkeypatch.setattr(compare_tma.formats, "parse_file",
                        lambda p, **kw: seen.append(kw.get("catalog")) or real(p, **kw))
    section = compare_tma.tma(run, "base", "cand")
    assert seen == ["amdzen4", "amdzen4"]
    assert section.status == "measured", section.reason


def test_compare_refuses_different_trees(tmp_path, fixtures_dir):
    from analysis.compare import tma as compare_tma
    run = fake_run(tmp_path, {"base": [fixtures_dir / "tma/amd/amd_epyc9254_rusttcp_epoll-et.txt"],
                              "cand": [fixtures_dir / "tma/arm/arm_neoverse_n2_lkml_v4_topdownl1.txt"]},
                   {"backend": "perf", "status": "ok"})     # a run that recorded no catalogue
    section = compare_tma.tma(run, "base", "cand")
    assert section.status == "absent"
    assert "different top-down methods" in section.reason
