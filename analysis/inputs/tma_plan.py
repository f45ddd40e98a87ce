"""manifest.json `tma`: how top-down was (or why it was not) collected for the run.

Written by the TMA run plugin's manifest_sections (collectors/profilers/tma/plugin.py) before
anything is built; per-rep status is in rep.json (collector_facts.TmaFacts). Analysis
reads `catalog` to parse the reps' outputs in the right vendor's tree (docs/tma.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from analysis.inputs.records import Record


@dataclass
class TmaFinding(Record):
    """One preflight check (collectors/host/preflight.py): what is true here, how to fix it."""
    check: str = ""                      # pmu | perf | toplev | topdown-tool | paranoid | ...
    ok: bool = False
    message: str = ""
    fix: str | None = None
    blocking: bool = False               # True: TMA cannot be collected until fixed


@dataclass
class TmaCpu(Record):
    """The CPU as the collector identified it (collectors/host/cpuid.py)."""
    vendor: str = "unknown"              # intel | amd | arm | the raw vendor id
    family: int | None = None            # x86 `cpu family`
    model: int | None = None             # x86 `model`
    part: int | None = None              # Arm `CPU part`
    name: str = ""                       # "AMD Zen 4 (family 0x19 model 0x11)"
    catalog: str | None = None           # its top-down catalogue; None: an Intel core with none
    method: str = ""                     # how top-down is counted on it
    why_not: str | None = None           # method "none": why
    model_name: str | None = None        # cpuinfo `model name`
    stepping: int | None = None          # x86 `stepping`


@dataclass
class TmaGroupSet(Record):
    """One set of the split schedule: the perf metric groups (and toplev nodes) of a rep."""
    perf: list[str] = field(default_factory=list)
    toplev: str | None = None


@dataclass
class TmaPlan(Record):
    """How TMA was (or why it was not) collected; per-rep status is in rep.json."""
    backend: str = "off"                 # toplev | perf | topdown-tool | replay | off
    status: str = "not collected"        # ok | unavailable | replay | not collected
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    # the top-down catalogue the collector identified the CPU as (amdzen4, neoverse-v2 ...);
    # None: Intel's (the output or the default names it), or a run made before it was kept
    catalog: str | None = None
    findings: list[TmaFinding] | None = None
    level: int | None = None             # --tma-level asked
    level_used: int | None = None        # the deepest the CPU's method has, when less
    attach: str | None = None            # pid | cpus
    split: bool | None = None            # --tma-split: groups spread over reps
    reps: str | None = None              # which reps collect: throughput | profile | all
    vendor: str | None = None
    cpu: TmaCpu | None = None
    schedule: list[TmaGroupSet] | None = None   # --tma-split: rep i uses set (i-1) % len
    # False: the CPU has no top-down tree (AMD before Zen 4 ...): nothing was planned, the
    # reason starts "no top-down tree on this CPU"; None: not recorded (older runs)
    tree: bool | None = None
    # Written only by the plugin (a replayed or TMA-less run has none of them): left out
    # while None so such a manifest keeps exactly its keys.
    OMIT_IF_NONE: ClassVar[frozenset[str]] = frozenset(
        {"findings", "level", "level_used", "attach", "split", "reps", "vendor", "cpu", "schedule",
         "tree"})
