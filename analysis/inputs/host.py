"""The host a run measured on, as manifest.json keeps it (`host`), and the summary of it a
sweep plan or the noise store needs (`HostSummary`: what makes two hosts measure alike).

Written by collectors.host.machine.host_facts() when a run is planned; read by the
comparison (logical CPUs for saturation), the report's environment table and the noise
store. Unknown keys (a newer writer's) are kept in `extra`, as every Record does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from analysis.inputs.latency import MemoryLatency
from analysis.inputs.records import Record


@dataclass
class HostSummary(Record):
    """Enough to tell two kinds of machine apart and to size a dataset against them."""
    cpu_model: str | None = None
    logical_cpus: int | None = None      # online CPUs
    cores: int | None = None
    memory_bytes: int | None = None      # MemTotal
    l3_bytes: int | None = None          # one L3 instance (a dataset larger than it is DRAM-bound)
    kernel: str | None = None

    def key(self) -> str:
        """"AMD EPYC 7B13 | 2 CPUs | 23 GiB | 32 MiB L3": runs compare only on the same kind
        of machine. The L3 is part of it because a guest's CPU name may not tell two hosts
        apart ("Intel(R) Xeon(R) Processor" on a 480 MiB and a 260 MiB L3 alike), and the
        sizes a case's records are kept under are taken of the L3 (docs/cases.md)."""
        cpus = self.logical_cpus or self.cores or self.extra.get("cpus")
        mem = self.memory_bytes
        l3 = f" | {round(self.l3_bytes / 2**20)} MiB L3" if self.l3_bytes else ""
        return (f"{self.cpu_model or 'unknown CPU'} | {cpus} CPUs | "
                f"{round(mem / 2**30) if mem else '?'} GiB{l3}")

    def summary(self) -> "HostSummary":
        """Only the summary's fields (what a sweep plan records)."""
        return HostSummary(self.cpu_model, self.logical_cpus, self.cores, self.memory_bytes,
                           self.l3_bytes, self.kernel)


@dataclass
class HostFacts(HostSummary):
    """Everything manifest.json records of the host (docs/run-directory.md, `host`)."""
    threads_per_core: int | None = None
    l1d_bytes: int | None = None
    l1i_bytes: int | None = None
    l2_bytes: int | None = None
    os: str | None = None                # PRETTY_NAME of /etc/os-release
    governor: str | None = None          # cpu0's cpufreq governor; None on most VMs
    thp: str | None = None               # transparent huge pages: always | madvise | never
    thp_defrag: str | None = None
    smt: str | None = None               # on | off | notsupported ...
    mitigations: str | None = None
    perf_event_paranoid: int | None = None
    nmi_watchdog: int | None = None      # 1 holds a PMU counter (TMA groups then multiplex)
    virtualization: str | None = None    # KVM, a container, or None on bare metal
    pmu: bool | None = None              # `perf stat -e cycles` counts
    pmu_note: str | None = None
    compiler: str | None = None
    # the pointer chase's DRAM and L3 latency (collectors/host/latency.py), measured for a run
    # with an in-cache control; None: not measured
    memory_latency: MemoryLatency | None = None
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset({"memory_latency"})


@dataclass
class RunnerHost(Record):
    """Where one sweep point ran (sweep.json's point `host`, a fanned-out point's): what
    the merged report names and what makes two runners measure alike."""
    hostname: str | None = None
    cpu_model: str | None = None
    logical_cpus: int | None = None

    def model(self) -> str:
        """"AMD EPYC 7B13, 2 logical CPUs": the host model a note compares."""
        cpus = self.logical_cpus
        return f"{self.cpu_model or 'CPU unknown'}, {cpus if cpus is not None else '?'} logical CPUs"
