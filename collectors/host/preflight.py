"""Preflight for hardware-counter collection (TMA): what this machine lacks, and the fix.

Top-down collection needs a hardware PMU, permission to count the server's process or
cores, free counters, and a CPU with a top-down method and a tool that counts it
(collectors/host/cpuid.py): Intel TMA (toplev, or perf TopdownL1..Ln where its tables know
the CPU), AMD Zen 4/5 pipeline utilization (perf >= 6.2: PipelineL1/L2), Arm top-down (perf
TopdownL1, or topdown-tool). Each check yields a `Finding`; `Preflight.available` is False
when a blocking one fails, `Preflight.reason` the sentence the manifest and report carry.
Facts are probed once (`probe_host`: `perf stat -e cycles` through collectors.host.pmu,
`perf list metricgroups`, /proc/cpuinfo) and judged by the pure `evaluate`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, asdict
from pathlib import Path

from analysis.inputs.tma_plan import TmaFinding, TmaPlan
from analysis.toolpaths import perf_binary
from collectors.host import cpuid, pmu, versions
from collectors.host.cpuid import CpuId
from collectors.host.toplev import describe as describe_toplev, missing as toplev_missing

NO_PMU_FIX = ("run on bare metal, or on a VM with the PMU passed through (KVM/libvirt: "
              "`<cpu mode='host-passthrough'>` with `<pmu state='on'/>`, QEMU `-cpu host,pmu=on`; "
              "on cloud VMs pick an instance type that exposes perf counters, e.g. a full-socket "
              "or metal size)")


@dataclass
class Finding:
    check: str                 # pmu | perf | toplev | topdown-tool | paranoid | nmi_watchdog |
                               # smt | hybrid | vendor | level
    ok: bool
    message: str               # what is true on this machine
    fix: str | None = None     # how to fix it (None when nothing to do)
    blocking: bool = False     # True: TMA cannot be collected until fixed


@dataclass
class Preflight:
    backend: str                               # toplev | perf | topdown-tool | parca
    findings: list[Finding] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return not any(f.blocking and not f.ok for f in self.findings)

    @property
    def blockers(self) -> list[Finding]:
        return [f for f in self.findings if f.blocking and not f.ok]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if not f.blocking and not f.ok]

    @property
    def reason(self) -> str | None:
        """One line for the manifest/report: every blocker with its fix."""
        if self.available:
            return None
        return "; ".join(f"{f.message} (fix: {f.fix})" if f.fix else f.message
                         for f in self.blockers)

    def to_manifest(self) -> TmaPlan:
        """The manifest's "tma" block (docs/run-directory.md)."""
        return TmaPlan(backend=self.backend, status="ok" if self.available else "unavailable",
                       reason=self.reason,
                       warnings=[f.message + (f" (fix: {f.fix})" if f.fix else "") for f in self.warnings],
                       findings=[TmaFinding.from_json(asdict(f), "tma.findings") for f in self.findings])

    def render(self) -> str:
        lines = [f"TMA via {self.backend}: {'available' if self.available else 'NOT available'}"]
        for f in self.findings:
            mark = "ok  " if f.ok else ("FAIL" if f.blocking else "warn")
            lines.append(f"  [{mark}] {f.check}: {f.message}")
            if f.fix and not f.ok:
                lines.append(f"         fix: {f.fix}")
        return "\n".join(lines)


@dataclass
class HostFacts:
    """What the checks need to know about the machine (probed by `probe_host`)."""
    perf_path: str | None = None
    perf_version: tuple[int, ...] | None = None
    cycles_supported: bool | None = None      # real `perf stat -e cycles` said so
    cycles_evidence: str = ""                 # the line perf printed for cycles
    pmu_sysfs: list[str] = field(default_factory=list)   # cpu, cpu_core, cpu_atom present
    paranoid: int | None = None
    nmi_watchdog: int | None = None
    smt_active: bool | None = None
    vendor: str | None = None                 # GenuineIntel / AuthenticAMD / ...
    cpu_model: str | None = None
    is_root: bool = False
    hypervisor: bool = False
    cpu: CpuId | None = None                  # /proc/cpuinfo identified (None: from `vendor`)
    metric_groups: list[str] | None = None    # `perf list metricgroups` (None: not asked)

    def cpu_id(self) -> CpuId:
        """The CPU identity; facts built without one get it from the vendor string (Intel if unknown)."""
        if self.cpu is not None:
            return self.cpu
        if self.vendor == "AuthenticAMD":
            return cpuid.identify(f"vendor_id : AuthenticAMD\nmodel name : {self.cpu_model or ''}\n")
        return cpuid.identify(f"vendor_id : {self.vendor or 'GenuineIntel'}\n"
                              f"model name : {self.cpu_model or ''}\n")


# --------------------------------------------------------------------------------------
# Probing (reads /proc and /sys, runs perf once).

def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def probe_host(proc: str | Path = "/proc", sys: str | Path = "/sys", run_perf: bool = True) -> HostFacts:
    proc, sys = Path(proc), Path(sys)
    f = HostFacts()
    f.perf_path = perf_binary()
    if f.perf_path and run_perf:
        f.perf_version = versions.perf_version(f.perf_path)
        cycles = pmu.probe_cycles(f.perf_path)
        f.cycles_supported, f.cycles_evidence = cycles.counts, cycles.evidence
        f.metric_groups = pmu.metric_groups(f.perf_path)
    devs = sys / "bus/event_source/devices"
    f.pmu_sysfs = [d for d in ("cpu", "cpu_core", "cpu_atom") if (devs / d).exists()]
    # Arm's core PMU is armv8_pmuv3 / armv8_pmuv3_0 (one per core type), not cpu/.
    f.pmu_sysfs += sorted(d.name for d in devs.glob("armv8_pmuv3*")) if devs.is_dir() else []
    f.paranoid = _read_int(proc / "sys/kernel/perf_event_paranoid")
    f.nmi_watchdog = _read_int(proc / "sys/kernel/nmi_watchdog")
    smt = _read_int(sys / "devices/system/cpu/smt/active")
    f.smt_active = None if smt is None else bool(smt)
    try:
        cpuinfo = (proc / "cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    m = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo, re.M)
    f.vendor = m.group(1) if m else None
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    f.cpu_model = m.group(1).strip() if m else None
    f.hypervisor = bool(re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M))
    f.cpu = cpuid.identify(cpuinfo)
    f.is_root = os.geteuid() == 0
    return f


# --------------------------------------------------------------------------------------
# Judging (pure).

def check_pmu(f: HostFacts) -> Finding:
    sysfs = ", ".join(f"/sys/bus/event_source/devices/{d}/" for d in f.pmu_sysfs)
    if f.cycles_supported is False or (f.cycles_supported is None and not f.pmu_sysfs):
        where = " (this is a VM: the hypervisor does not expose the PMU)" if f.hypervisor else ""
        evidence = (f"`perf stat -e cycles` printed '{f.cycles_evidence}'" if f.cycles_evidence
                    else "perf was not run")
        dirs = ("armv8_pmuv3*/" if f.cpu is not None and f.cpu.vendor == "arm"
                else "cpu/ or cpu_core/")
        return Finding("pmu", False,
                       f"no hardware PMU{where}: {evidence}; no "
                       f"/sys/bus/event_source/devices/{dirs} PMU directory"
                       if not f.pmu_sysfs else
                       f"no hardware PMU{where}: {evidence} although {sysfs} exists",
                       NO_PMU_FIX, blocking=True)
    if f.cycles_supported is None:
        return Finding("pmu", False, f"could not verify the PMU: {f.cycles_evidence}",
                       "run `perf stat -e cycles true` by hand and read its error", blocking=False)
    return Finding("pmu", True, f"hardware PMU present ({sysfs or 'sysfs entry not found'}; "
                   f"cycles counted: {f.cycles_evidence})")


def check_paranoid(f: HostFacts, attach: str, backend: str = "perf") -> Finding:
    p = f.paranoid
    if p is None:
        return Finding("paranoid", False, "/proc/sys/kernel/perf_event_paranoid not readable",
                       "is this Linux with perf_events? (CONFIG_PERF_EVENTS)", blocking=True)
    if f.is_root:
        return Finding("paranoid", True, f"perf_event_paranoid={p}; running as root, so no limit applies")
    if backend == "topdown-tool" and p > -1:
        # Its README: "This tool requires either perf_event_paranoid=-1, CAP_PERFMON, or
        # CAP_SYS_ADMIN" (it counts system-wide, also while it follows a pid).
        return Finding("paranoid", False,
                       f"perf_event_paranoid={p}: topdown-tool counts system-wide and needs -1 "
                       f"(or CAP_PERFMON) for a non-root user",
                       "sysctl kernel.perf_event_paranoid=-1 (as root), or run as root",
                       blocking=True)
    if attach == "cpus" and p > 0:
        return Finding("paranoid", False,
                       f"perf_event_paranoid={p} forbids counting whole CPUs (-a/-C, toplev --core) "
                       f"for a non-root user (needs <= 0)",
                       "sysctl kernel.perf_event_paranoid=0 (as root), run as root, or attach by pid",
                       blocking=True)
    if p >= 3:
        return Finding("paranoid", False,
                       f"perf_event_paranoid={p} (Debian/Ubuntu level 3) forbids all perf use by "
                       f"non-root users",
                       "sysctl kernel.perf_event_paranoid=1 (as root), or run as root", blocking=True)
    if p >= 2:
        return Finding("paranoid", False,
                       f"perf_event_paranoid={p}: a non-root user counts user space only, so the "
                       f"server's kernel time (syscalls, networking) is missing from the TMA slots",
                       "sysctl kernel.perf_event_paranoid=1 (as root), or run as root")
    return Finding("paranoid", True, f"perf_event_paranoid={p} allows this mode ({attach})")


def check_nmi_watchdog(f: HostFacts) -> Finding:
    if f.nmi_watchdog == 1:
        return Finding("nmi_watchdog", False,
                       "the NMI watchdog holds one general-purpose counter, so TMA groups "
                       "multiplex more (estimated values)",
                       "sysctl kernel.nmi_watchdog=0 (as root; set it back to 1 afterwards)")
    return Finding("nmi_watchdog", True,
                   "nmi_watchdog=0: all counters free" if f.nmi_watchdog == 0
                   else "nmi_watchdog not present (no counter taken)")


def _has_group(f: HostFacts, group: str) -> bool | None:
    """Does `perf list metricgroups` name the group (case-insensitively)? None when it could
    not be told; an empty list is a no: no tables for this CPU (perf 6.1 on Zen 5 or EMR)."""
    if f.metric_groups is None:
        return None
    return group.lower() in {g.lower() for g in f.metric_groups}


def _perf_v(f: HostFacts) -> str:
    return "perf " + (".".join(map(str, f.perf_version)) if f.perf_version else "(unknown version)")


def check_vendor(f: HostFacts, backend: str) -> Finding:
    """Which top-down method this CPU has, and whether the chosen tool and this perf can
    count it. Blocking only when it cannot work, with the reason and the fix."""
    cpu = f.cpu_id()
    if cpu.vendor == "unknown":
        return Finding("vendor", False, f"{cpu.why_not}: assuming Intel's TMA tree",
                       "check /proc/cpuinfo")
    if cpu.method == "intel":
        if backend == "topdown-tool":
            return Finding("vendor", False, "--tma topdown-tool: Arm's topdown-tool counts Arm "
                           "Neoverse cores only, and this CPU is Intel",
                           "use --tma perf, toplev or auto", blocking=True)
        return _intel_vendor(f, backend)
    if cpu.method == "none":
        fix = ("run the TMA reps on Zen 4+ or Intel; use the CPU profile (perf/parca) here"
               if cpu.vendor == "amd" else
               "run the TMA reps on Intel, AMD Zen 4+ or Arm Neoverse; use the CPU profile "
               "(perf/parca) here")
        return Finding("vendor", False, cpu.no_tree_reason, fix, blocking=True)
    vendor = "AMD" if cpu.vendor == "amd" else "Arm"
    if backend == "toplev":
        return Finding("vendor", False, f"--tma toplev: toplev (pmu-tools) has no {vendor} "
                       f"support (its TMA model is Intel's); this is {cpu.name}",
                       f"use --tma perf{' or topdown-tool' if vendor == 'Arm' else ''}, or auto",
                       blocking=True)
    if backend == "topdown-tool" and cpu.vendor != "arm":
        return Finding("vendor", False, f"--tma topdown-tool: Arm's topdown-tool counts Arm "
                       f"Neoverse cores only ({cpu.name})", "use --tma perf or auto", blocking=True)
    method = cpu.describe(backend)
    if backend == "topdown-tool":
        # topdown-tool runs perf with raw events from its own per-core files: no perf group.
        return Finding("vendor", True, method)
    if cpu.method == "amd-pipeline":
        old = cpu.catalog == "amdzen4" and f.perf_version is not None and f.perf_version < (6, 2)
        has = _has_group(f, "PipelineL1")
        if old or has is False:
            why = []
            if old:
                why.append(f"{_perf_v(f)} is older than 6.2, the first perf with Zen 4's "
                           f"pipeline metrics")
            if has is False:
                why.append(f"`perf list metricgroups` ({_perf_v(f)}) lists no PipelineL1 group")
            need = "perf >= 6.2" if cpu.catalog == "amdzen4" else "a perf that knows Zen 5"
            return Finding("vendor", False, f"{method}, which this perf cannot count: "
                           + "; ".join(why),
                           f"install {need} (one whose `perf list metricgroups` lists "
                           f"PipelineL1 and PipelineL2), or point PERF= at it", blocking=True)
        return Finding("vendor", True, method)
    group = cpu.perf_groups(1)[0]               # TopdownL1 (Cycle_Accounting on N1)
    if _has_group(f, group) is False:
        return Finding("vendor", False, f"{method}, which this perf cannot count: "
                       f"`perf list metricgroups` ({_perf_v(f)}) lists no {group} group",
                       f"install a perf whose `perf list metricgroups` lists {group}, or use "
                       f"Arm's topdown-tool (--tma topdown-tool; docs/tma-collection.md)",
                       blocking=True)
    return Finding("vendor", True, method)


def _intel_vendor(f: HostFacts, backend: str) -> Finding:
    if backend != "toplev" and _has_group(f, "TopdownL1") is False:     # perf 6.1 on Emerald Rapids
        return Finding("vendor", False, f"CPU vendor {f.vendor}: the TMA tree applies, but `perf list "
                       f"metricgroups` ({_perf_v(f)}) lists no TopdownL1 group: no tables for this CPU",
                       "use --tma toplev (make setup installs it), or a perf that knows this CPU",
                       blocking=True)
    return Finding("vendor", True, f"CPU vendor {f.vendor or 'unknown'}: the TMA tree applies")


def check_level(f: HostFacts, backend: str, level: int | None, split: bool) -> Finding | None:
    """AMD has two levels, Arm's perf groups one: what a deeper --tma-level gets, no --tma-split."""
    cpu = f.cpu_id()
    if cpu.max_level is None or backend not in ("perf", "topdown-tool"):
        return None
    notes, fixes = [], []
    if level is not None and backend == "perf" and level > cpu.max_level:
        fixes.append(f"--tma-level {cpu.max_level}")
        if cpu.method == "amd-pipeline":
            notes.append(f"AMD's pipeline utilization has two levels (PipelineL1, PipelineL2; no "
                         f"level 3: nothing under backend_bound_memory): --tma-level {level} "
                         f"counts levels 1-2")
        else:
            notes.append(f"perf's Arm metrics have one top-down level ({cpu.perf_groups(1)[0]}): "
                         f"--tma-level {level} counts level 1")
            fixes.append("Arm's topdown-tool adds the Stage-2 groups (--tma topdown-tool)")
    if split:
        what = ",".join(cpu.perf_groups(level or 4)) if backend == "perf" else "topdown-tool's stages"
        notes.append(f"--tma-split has nothing to split here: every rep counts {what} (one set)")
        fixes.append("drop --tma-split")
    return Finding("level", False, "; ".join(notes), "; ".join(fixes)) if notes else None


def check_smt(f: HostFacts, backend: str, attach: str) -> Finding:
    if not f.smt_active:
        return Finding("smt", True, "SMT off (or unknown): each core's counters see one thread")
    if backend == "toplev" and attach == "pid":
        return Finding("smt", False,
                       "SMT is on: toplev refuses -p/--pid on CPUs before Ice Lake (full TMA "
                       "needs both hyperthreads of a core counted together)",
                       "attach to the server's pinned cores instead (--tma-attach cpus), or turn "
                       "SMT off: echo off > /sys/devices/system/cpu/smt/control")
    return Finding("smt", False,
                   "SMT is on: the sibling hyperthread shares the core's pipeline; keep it idle "
                   "(pin nothing else to it) or the core-level nodes mix both threads",
                   "echo off > /sys/devices/system/cpu/smt/control, or pin the server to whole cores")


def check_hybrid(f: HostFacts) -> Finding | None:
    if "cpu_core" in f.pmu_sysfs and "cpu_atom" in f.pmu_sysfs:
        return Finding("hybrid", False,
                       "hybrid CPU (P-cores cpu_core + E-cores cpu_atom): the TMA tree differs "
                       "per core type and perf prints both",
                       "pin the server to P-cores; stallscope reads the cpu_core values")
    return None


def check_tool(f: HostFacts, backend: str, toplev: list[str] | None,
               topdown_tool: list[str] | None = None) -> Finding:
    if not f.perf_path:
        return Finding("perf", False, "perf not found on PATH (nor $PERF)",
                       "apt-get install linux-perf (Debian) / linux-tools-$(uname -r) (Ubuntu), "
                       "or set PERF=/path/to/perf", blocking=True)
    if backend == "topdown-tool":
        if not topdown_tool:
            return Finding("topdown-tool", False,
                           "topdown-tool not found (not on PATH, $TOPDOWN_TOOL not set)",
                           "install Arm's topdown-tool (github.com/ARM-software/telemetry-solution, "
                           "tools/topdown_tool: python3 -m pip install .) and put it on PATH, or "
                           "set TOPDOWN_TOOL=/path/to/topdown-tool", blocking=True)
        return Finding("topdown-tool", True, f"topdown-tool: {' '.join(topdown_tool)} (runs "
                       f"{f.perf_path})")
    if backend == "toplev":
        if not toplev:
            return Finding("toplev", False, toplev_missing(),
                           "make setup (installs pmu-tools into .venv), or set "
                           "TOPLEV=/path/to/pmu-tools/toplev.py (see docs/tma-collection.md)",
                           blocking=True)
        return Finding("toplev", True, describe_toplev(toplev))
    v = ".".join(map(str, f.perf_version)) if f.perf_version else "unknown version"
    if f.perf_version and f.perf_version < (5, 10):
        return Finding("perf", False, f"perf {v} predates the TopdownL1..L4 metric groups",
                       "install perf >= 6.1", blocking=True)
    return Finding("perf", True, f"perf {v} at {f.perf_path}")


def evaluate(f: HostFacts, backend: str, attach: str = "pid",
             toplev: list[str] | None = None, *, topdown_tool: list[str] | None = None,
             level: int | None = None, split: bool = False) -> Preflight:
    """Judge the facts for one back end (toplev | perf | topdown-tool) and attach mode
    (pid | cpus); level/split: what the run asks for (AMD and Arm say what they give)."""
    pf = Preflight(backend)
    vendor = check_vendor(f, backend)
    # A CPU without a top-down tree: that is the reason, whatever else is missing here.
    first = [vendor] if not f.cpu_id().has_tree else []
    pf.findings.extend(first)
    pf.findings.append(check_tool(f, backend, toplev, topdown_tool))
    pf.findings.append(check_pmu(f))
    if not first:
        pf.findings.append(vendor)
    lvl = check_level(f, backend, level, split)
    if lvl:
        pf.findings.append(lvl)
    pf.findings.append(check_paranoid(f, attach, backend))
    pf.findings.append(check_nmi_watchdog(f))
    pf.findings.append(check_smt(f, backend, attach))
    hybrid = check_hybrid(f)
    if hybrid:
        pf.findings.append(hybrid)
    return pf
