"""Preflight for hardware-counter collection (TMA): what this machine lacks, and the fix.

TMA needs a hardware PMU, permission to count the server's process or cores, free
counters, and an Intel CPU (the TMA tree is Intel's). Each check yields a `Finding`;
`Preflight.available` is False when a blocking one fails, and `Preflight.reason` is the
sentence the manifest's "tma" block and the report carry.

Facts are probed once (`probe_host`, which really runs `perf stat -e cycles` through
collectors.host.pmu) and judged by the pure `evaluate`, so the judgement can be tested
with any facts.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any

from analysis.toolpaths import perf_binary
from collectors.host import pmu

NO_PMU_FIX = ("run on bare metal, or on a VM with the PMU passed through (KVM/libvirt: "
              "`<cpu mode='host-passthrough'>` with `<pmu state='on'/>`, QEMU `-cpu host,pmu=on`; "
              "on cloud VMs pick an instance type that exposes perf counters, e.g. a full-socket "
              "or metal size)")


@dataclass
class Finding:
    check: str                 # pmu | perf | toplev | paranoid | nmi_watchdog | smt | hybrid | vendor
    ok: bool
    message: str               # what is true on this machine
    fix: str | None = None     # how to fix it (None when nothing to do)
    blocking: bool = False     # True: TMA cannot be collected until fixed


@dataclass
class Preflight:
    backend: str                               # toplev | perf | parca
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

    def to_manifest(self) -> dict[str, Any]:
        """The manifest's "tma" block (docs/run-directory.md)."""
        return {"backend": self.backend,
                "status": "ok" if self.available else "unavailable",
                "reason": self.reason,
                "warnings": [f.message + (f" (fix: {f.fix})" if f.fix else "") for f in self.warnings],
                "findings": [asdict(f) for f in self.findings]}

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
        f.perf_version = pmu.perf_version(f.perf_path)
        cycles = pmu.probe_cycles(f.perf_path)
        f.cycles_supported, f.cycles_evidence = cycles.counts, cycles.evidence
    devs = sys / "bus/event_source/devices"
    f.pmu_sysfs = [d for d in ("cpu", "cpu_core", "cpu_atom") if (devs / d).exists()]
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
        return Finding("pmu", False,
                       f"no hardware PMU{where}: {evidence}; no "
                       f"/sys/bus/event_source/devices/cpu/ or cpu_core/ PMU directory"
                       if not f.pmu_sysfs else
                       f"no hardware PMU{where}: {evidence} although {sysfs} exists",
                       NO_PMU_FIX, blocking=True)
    if f.cycles_supported is None:
        return Finding("pmu", False, f"could not verify the PMU: {f.cycles_evidence}",
                       "run `perf stat -e cycles true` by hand and read its error", blocking=False)
    return Finding("pmu", True, f"hardware PMU present ({sysfs or 'sysfs entry not found'}; "
                   f"cycles counted: {f.cycles_evidence})")


def check_paranoid(f: HostFacts, attach: str) -> Finding:
    p = f.paranoid
    if p is None:
        return Finding("paranoid", False, "/proc/sys/kernel/perf_event_paranoid not readable",
                       "is this Linux with perf_events? (CONFIG_PERF_EVENTS)", blocking=True)
    if f.is_root:
        return Finding("paranoid", True, f"perf_event_paranoid={p}; running as root, so no limit applies")
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


def check_vendor(f: HostFacts, backend: str) -> Finding:
    if f.vendor in (None, "GenuineIntel"):
        return Finding("vendor", True, f"CPU vendor {f.vendor or 'unknown'}: the TMA tree applies")
    if f.vendor == "AuthenticAMD":
        return Finding("vendor", False,
                       f"{f.cpu_model or 'AMD CPU'} is not Intel: the TMA tree (Frontend/Backend/"
                       f"Memory_Bound ...) is Intel's; AMD Zen 4+ has its own pipeline-utilization "
                       f"metrics (`perf stat -M PipelineL1,PipelineL2`, perf >= 6.2) which stallscope "
                       f"does not map onto TMA nodes",
                       "run the TMA reps on an Intel machine; use the CPU profile (perf/parca) here",
                       blocking=True)
    return Finding("vendor", False, f"CPU vendor {f.vendor} has no TMA metrics",
                   "run the TMA reps on an Intel machine", blocking=True)


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


def check_tool(f: HostFacts, backend: str, toplev: list[str] | None) -> Finding:
    if not f.perf_path:
        return Finding("perf", False, "perf not found on PATH (nor $PERF)",
                       "apt-get install linux-perf (Debian) / linux-tools-$(uname -r) (Ubuntu), "
                       "or set PERF=/path/to/perf", blocking=True)
    if backend == "toplev":
        if not toplev:
            return Finding("toplev", False, "toplev not found (not on PATH, $TOPLEV not set)",
                           "git clone pmu-tools and set TOPLEV=/path/to/pmu-tools/toplev.py "
                           "(see docs/tma-collection.md)", blocking=True)
        return Finding("toplev", True, f"toplev: {' '.join(toplev)}")
    v = ".".join(map(str, f.perf_version)) if f.perf_version else "unknown version"
    if f.perf_version and f.perf_version < (5, 10):
        return Finding("perf", False, f"perf {v} predates the TopdownL1..L4 metric groups",
                       "install perf >= 6.1", blocking=True)
    return Finding("perf", True, f"perf {v} at {f.perf_path}")


def evaluate(f: HostFacts, backend: str, attach: str = "pid",
             toplev: list[str] | None = None) -> Preflight:
    """Judge the facts for one back end (toplev | perf) and attach mode (pid | cpus)."""
    pf = Preflight(backend)
    pf.findings.append(check_tool(f, backend, toplev))
    pf.findings.append(check_pmu(f))
    pf.findings.append(check_vendor(f, backend))
    pf.findings.append(check_paranoid(f, attach))
    pf.findings.append(check_nmi_watchdog(f))
    pf.findings.append(check_smt(f, backend, attach))
    hybrid = check_hybrid(f)
    if hybrid:
        pf.findings.append(hybrid)
    return pf
