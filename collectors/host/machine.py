"""Host facts for the manifest ("host"): what a reader needs to judge whether two runs
are comparable (CPU, caches, kernel knobs that move memory-bound numbers, PMU, compiler).

Everything is read from /proc and /sys (the PMU from collectors.host.pmu, the compiler
from collectors.host.versions); a fact that cannot be read is None, never a guess. Tool
versions are collectors.host.versions.tool_versions.
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from analysis.inputs.host import HostFacts
from collectors.host import pmu, versions

SYS_CPU = Path("/sys/devices/system/cpu")


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _int(path: str | Path) -> int | None:
    v = _read(path)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _bracketed(v: str | None) -> str | None:
    """THP files read like 'always [madvise] never': the selected word is bracketed."""
    if v is None:
        return None
    m = re.search(r"\[([^\]]+)\]", v)
    return m.group(1) if m else v


def parse_size(s: str) -> int | None:
    """sysfs cache sizes: '48K', '2048K', '32768K', '32M' -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", s or "")
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2)]


def cache_sizes(cpu_dir: Path = SYS_CPU / "cpu0") -> dict[str, int | None]:
    out: dict[str, int | None] = {"l1d_bytes": None, "l1i_bytes": None, "l2_bytes": None, "l3_bytes": None}
    for idx in sorted((cpu_dir / "cache").glob("index*")):
        level, typ = _read(idx / "level"), _read(idx / "type")
        size = parse_size(_read(idx / "size") or "")
        key = {("1", "Data"): "l1d_bytes", ("1", "Instruction"): "l1i_bytes",
               ("2", "Unified"): "l2_bytes", ("3", "Unified"): "l3_bytes"}.get((level, typ))
        if key:
            out[key] = size
    return out


def cpuinfo(text: str | None = None) -> dict[str, Any]:
    text = text if text is not None else (_read("/proc/cpuinfo") or "")
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    flagset = set(flags.group(1).split()) if flags else set()
    return {"cpu_model": model.group(1).strip() if model else platform.processor() or None,
            "hypervisor_flag": "hypervisor" in flagset}


def topology() -> dict[str, Any]:
    online = os.cpu_count() or 1
    cores = set()
    for c in SYS_CPU.glob("cpu[0-9]*"):
        pkg, core = _read(c / "topology/physical_package_id"), _read(c / "topology/core_id")
        if core is not None:
            cores.add((pkg, core))
    n_cores = len(cores) or online
    return {"logical_cpus": online, "cores": n_cores,
            "threads_per_core": max(1, online // n_cores) if n_cores else None}


def mitigations() -> str | None:
    """One line: 'name: state; ...' for each vulnerability file (short states only)."""
    d = SYS_CPU / "vulnerabilities"
    if not d.is_dir():
        return None
    parts = []
    for f in sorted(d.iterdir()):
        v = _read(f) or "?"
        short = "vulnerable" if v.startswith("Vulnerable") else \
            "not affected" if v.startswith("Not affected") else "mitigated"
        parts.append(f"{f.name}: {short}")
    return "; ".join(parts)


def _detect_virt(flag: str) -> str | None:
    try:
        r = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    v = r.stdout.strip()
    return v if v and v != "none" else None


def virtualization(hypervisor_flag: bool) -> str | None:
    """The hypervisor (KVM, ...) and, separately, a container: a VM decides whether a PMU
    exists, a container only what /sys shows."""
    vm = _detect_virt("--vm")
    ct = _detect_virt("--container")
    if vm is None and hypervisor_flag:
        vm = "unknown hypervisor"
    vm = vm.upper() if vm in ("kvm", "xen", "qemu") else vm
    if vm and ct:
        return f"{vm} (container: {ct})"
    return vm or (f"container: {ct}" if ct else None)


def host_facts() -> HostFacts:
    """What manifest.json records of this host (analysis.inputs.host.HostFacts)."""
    ci = cpuinfo()
    topo = topology()
    smt = _read(SYS_CPU / "smt/control")
    cycles = pmu.probe_cycles()
    return HostFacts.from_json({
        "cpu_model": ci["cpu_model"],
        **topo,
        **cache_sizes(),
        "kernel": platform.release(),
        "os": _os_release(),
        "governor": _read(SYS_CPU / "cpu0/cpufreq/scaling_governor"),
        "thp": _bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
        "thp_defrag": _bracketed(_read("/sys/kernel/mm/transparent_hugepage/defrag")),
        "smt": smt if smt is not None else ("on" if (topo["threads_per_core"] or 1) > 1 else "off"),
        "mitigations": mitigations(),
        "perf_event_paranoid": _int("/proc/sys/kernel/perf_event_paranoid"),
        "nmi_watchdog": _int("/proc/sys/kernel/nmi_watchdog"),
        "virtualization": virtualization(ci["hypervisor_flag"]),
        "pmu": cycles.counts is True,
        "pmu_note": cycles.note,
        "compiler": versions.compiler(),
        "memory_bytes": _meminfo_total(),
    }, "host")


def _os_release() -> str | None:
    t = _read("/etc/os-release") or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', t, re.M)
    return m.group(1) if m else None


def _meminfo_total() -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+) kB", _read("/proc/meminfo") or "", re.M)
    return int(m.group(1)) * 1024 if m else None
