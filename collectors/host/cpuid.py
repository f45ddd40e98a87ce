"""Which CPU is this, and which top-down method and catalogue fit it: from /proc/cpuinfo.

One job: read the cpuinfo text and say vendor, family/model (x86) or CPU part (Arm), the
human name, the TMA catalogue model (analysis/tma/catalogs/<model>.tsv) and the method:

  intel          Intel TMA (toplev, or perf stat -M TopdownL1..Ln)
  amd-pipeline   AMD Zen 4/5 pipeline utilization (perf stat -M PipelineL1,PipelineL2)
  arm-topdown    Arm top-down (perf stat -M TopdownL1, or Arm's topdown-tool)
  none           no top-down metrics; why_not says why

Intel cores get the catalogue of the TMA model toplev runs on them (pmu-tools' own table of
family-6 models and steppings, analysis/tma/intel_cpus.tsv: 143 and 207, Sapphire and
Emerald Rapids, run spr; 106/108 icx; 85 stepping 4 skx, 5-10 clx; 173/174 gnr), where a
catalogue of that model exists (every server core); client cores have none here.

AMD generations follow Linux perf's tools/perf/pmu-events/arch/x86/mapfile.csv, which
matches the CPUID string "AuthenticAMD-<family decimal>-<model hex>":

  AuthenticAMD-23-([12][0-9A-F]|[0-9A-F])           amdzen1
  AuthenticAMD-23-[[:xdigit:]]+                      amdzen2
  AuthenticAMD-25-([245][[:xdigit:]]|[[:xdigit:]])   amdzen3
  AuthenticAMD-25-[[:xdigit:]]+                      amdzen4
  AuthenticAMD-26-[[:xdigit:]]+                      amdzen5

(the lines as the patches "perf vendor events amd: Add Zen 4 mapping" and "... Zen 5
mapping" left them). Only amdzen4/amdzen5 have the PipelineL1/L2 metric groups. A later
perf patch ("Add Zen 6 mapping", family 0x1a models 0x50-0x57) narrows the Zen 5 line; its
exact regex was not available here, so family 0x1a is Zen 5 throughout.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.tma.catalog import models as catalog_models
from analysis.tma.intel_cpus import toplev_key

# (regex on "AuthenticAMD-<family>-<MODEL hex>", perf's directory, generation, catalogue)
AMD_MAPFILE: tuple[tuple[str, str, str, str | None], ...] = (
    (r"AuthenticAMD-23-([12][0-9A-F]|[0-9A-F])", "amdzen1", "Zen 1", None),
    (r"AuthenticAMD-23-[0-9A-F]+", "amdzen2", "Zen 2", None),
    (r"AuthenticAMD-25-([245][0-9A-F]|[0-9A-F])", "amdzen3", "Zen 3", None),
    (r"AuthenticAMD-25-[0-9A-F]+", "amdzen4", "Zen 4", "amdzen4"),
    (r"AuthenticAMD-26-[0-9A-F]+", "amdzen5", "Zen 5", "amdzen5"),
)

ARM_IMPLEMENTER = 0x41
# CPU part -> (name, catalogue). Part numbers as Arm's telemetry specifications publish
# them (product_configuration.part_num: N1, V1, V2, V3); N2's as perf's arm64 mapfile.csv
# lists its MIDR (0x00000000410fd490 -> arm/neoverse-n2).
ARM_PARTS: dict[int, tuple[str, str]] = {
    0xd0c: ("Neoverse N1", "neoverse-n1"),
    0xd40: ("Neoverse V1", "neoverse-v1"),
    0xd49: ("Neoverse N2", "neoverse-n2"),
    0xd4f: ("Neoverse V2", "neoverse-v2"),
    0xd84: ("Neoverse V3", "neoverse-v3"),
}
# Cloud names people know them by.
ARM_ALSO_KNOWN_AS = {0xd0c: "AWS Graviton2", 0xd40: "AWS Graviton3", 0xd4f: "AWS Graviton4"}

METHODS = ("intel", "amd-pipeline", "arm-topdown", "none")


@dataclass(frozen=True)
class CpuId:
    vendor: str                 # intel | amd | arm | the raw vendor_id (HygonGenuine ...) |
                                # unknown (no vendor_id, no CPU implementer)
    family: int | None          # x86 `cpu family` (decimal in cpuinfo)
    model: int | None           # x86 `model`
    part: int | None            # Arm `CPU part`
    name: str                   # "AMD Zen 4 (family 0x19 model 0x11)", "Arm Neoverse V2 (CPU part 0xd4f)"
    catalog: str | None         # catalogue model (amdzen4, neoverse-v2, arm64, spr, icx ...);
                                # None: an Intel core without one (the output names it, else
                                # the default) or no top-down at all
    method: str                 # one of METHODS
    why_not: str | None = None  # method "none": the sentence saying why
    model_name: str | None = None   # cpuinfo `model name`, when there is one
    stepping: int | None = None     # x86 `stepping` (toplev tells Skylake-SP from Cascade Lake by it)

    @property
    def has_tree(self) -> bool:
        """Does this CPU have a top-down tree stallscope can plan? False for AMD before Zen 4
        and unknown vendors (Hygon ...); a text that names no vendor at all is taken as
        Intel's, as the collector always did (check_vendor says it assumed so)."""
        return self.method != "none" or self.vendor == "unknown"

    @property
    def no_tree_reason(self) -> str | None:
        """The sentence a plan, doctor and the report carry when there is no tree."""
        if self.has_tree:
            return None
        return f"no top-down tree on this CPU: {self.why_not or self.name}"

    @property
    def max_level(self) -> int | None:
        """Levels of the method's perf groups: AMD 2 (PipelineL1/L2; no level 3), Arm 1
        (TopdownL1); None for Intel (toplev and perf go down to level 6)."""
        return {"amd-pipeline": 2, "arm-topdown": 1}.get(self.method)

    def perf_groups(self, level: int) -> list[str]:
        """The `perf stat -M` metric groups of the method, down to a level; none where the
        CPU has no top-down tree (Intel's groups on an AMD Zen 3 would count nothing)."""
        if not self.has_tree:
            return []
        if self.method == "amd-pipeline":
            return ["PipelineL1"] if level <= 1 else ["PipelineL1", "PipelineL2"]
        if self.method == "arm-topdown":
            # perf's neoverse-n1 metrics.json has no TopdownL1 (sbsa.json's needs STALL_SLOT
            # events): its level 1 is frontend/backend_stalled_cycles, group Cycle_Accounting.
            return ["Cycle_Accounting"] if self.catalog == "neoverse-n1" else ["TopdownL1"]
        return [f"TopdownL{i}" for i in range(1, level + 1)]

    def describe(self, backend: str) -> str:
        """The method in one phrase, for a back end (perf | toplev | topdown-tool)."""
        if self.method == "amd-pipeline":
            return f"{self.name}: pipeline utilization via perf stat -M PipelineL1,PipelineL2"
        if self.method == "arm-topdown":
            tool = ("Arm's topdown-tool" if backend == "topdown-tool"
                    else f"perf stat -M {','.join(self.perf_groups(1))}")
            return f"{self.name}: top-down via {tool}"
        if self.method == "intel":
            return f"{self.name}: Intel TMA via {'toplev' if backend == 'toplev' else 'perf stat -M TopdownL1..'}"
        return self.why_not or f"{self.name}: no top-down metrics"

    @property
    def generation(self) -> str | None:
        """'Zen 4' for AMD (None elsewhere)."""
        m = re.match(r"AMD (Zen \d)", self.name)
        return m.group(1) if m else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# lscpu spells the same fields differently ("Vendor ID:", "CPU family:", "Model:").
_LSCPU = {"vendor_id": "Vendor ID", "cpu family": "CPU family", "model": "Model",
          "model name": "Model name", "stepping": "Stepping"}


def _field(text: str, key: str) -> str | None:
    for k in (key, _LSCPU.get(key)):
        if k is None:
            continue
        # newer lscpu indents its fields under "Vendor ID:" / "Model name:"
        m = re.search(rf"^[ \t]*{re.escape(k)}\s*:\s*(.*?)\s*$", text, re.M)
        if m:
            return m.group(1)
    return None


def _int(value: str | None, base: int = 10) -> int | None:
    try:
        return int(value, base) if value is not None else None
    except ValueError:
        return None


def identify(cpuinfo: str) -> CpuId:
    """The CPU the cpuinfo text describes (its first processor block)."""
    vendor_id = _field(cpuinfo, "vendor_id")
    model_name = _field(cpuinfo, "model name")
    if vendor_id == "GenuineIntel":
        return _intel(_int(_field(cpuinfo, "cpu family")), _int(_field(cpuinfo, "model")),
                      _int(_field(cpuinfo, "stepping")), model_name)
    if vendor_id == "AuthenticAMD":
        return _amd(_int(_field(cpuinfo, "cpu family")), _int(_field(cpuinfo, "model")), model_name)
    implementer = _int(_field(cpuinfo, "CPU implementer"), 16)
    if implementer is not None:
        return _arm(implementer, _int(_field(cpuinfo, "CPU part"), 16), model_name)
    if vendor_id is None:
        return CpuId("unknown", None, None, None, model_name or "unidentified CPU", None, "none",
                     "cannot tell the CPU: the text names no vendor_id (x86) and no CPU "
                     "implementer (Arm)", model_name)
    raw = vendor_id
    return CpuId(raw, _int(_field(cpuinfo, "cpu family")), _int(_field(cpuinfo, "model")), None,
                 model_name or f"CPU vendor {raw}", None, "none",
                 f"CPU vendor {raw} has no top-down metrics stallscope knows (Intel TMA, AMD Zen 4+ "
                 f"pipeline utilization, Arm top-down)", model_name)


def identify_file(path: str | Path = "/proc/cpuinfo") -> CpuId:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        text = ""
    return identify(text)


def amd_mapfile_key(family: int, model: int) -> str:
    """The string perf's mapfile.csv regexes are matched against (stepping left off)."""
    return f"AuthenticAMD-{family}-{model:X}"


def _intel(family: int | None, model: int | None, stepping: int | None,
           model_name: str | None) -> CpuId:
    """Intel: the catalogue is the model toplev runs on this CPU (pmu-tools' own table,
    analysis/tma/intel_cpus.tsv: family 6 model 207, Emerald Rapids, runs spr) when there is
    a catalogue of it; else None (the output names it, else the default)."""
    key = toplev_key(family, model, stepping, model_name)
    name = (f"Intel {model_name}" if model_name and "Intel" not in model_name
            else (model_name or "Intel CPU"))
    return CpuId("intel", family, model, None, name, key if key in catalog_models() else None,
                 "intel", None, model_name, stepping)


def _amd(family: int | None, model: int | None, model_name: str | None) -> CpuId:
    where = (f"family {family:#04x} model {model:#04x}" if family is not None and model is not None
             else "family/model not in /proc/cpuinfo")
    if family is not None and model is not None:
        key = amd_mapfile_key(family, model)
        for regex, _perf_dir, gen, catalog in AMD_MAPFILE:
            if re.fullmatch(regex, key):
                name = f"AMD {gen} ({where})"
                if catalog:
                    return CpuId("amd", family, model, None, name, catalog, "amd-pipeline", None,
                                 model_name)
                return CpuId("amd", family, model, None, name, None, "none",
                             f"{name} has no pipeline-utilization metrics (perf's PipelineL1/L2 "
                             f"exist for Zen 4 and later only)", model_name)
    name = f"AMD CPU ({where})"
    return CpuId("amd", family, model, None, name, None, "none",
                 f"{name} is no Zen generation perf maps to pipeline-utilization metrics "
                 f"(Zen 4: family 0x19, Zen 5: family 0x1a)", model_name)


def _arm(implementer: int, part: int | None, model_name: str | None) -> CpuId:
    part_s = f"CPU part {part:#05x}" if part is not None else "no CPU part"
    if implementer == ARM_IMPLEMENTER and part in ARM_PARTS:
        core, catalog = ARM_PARTS[part]
        aka = f", {ARM_ALSO_KNOWN_AS[part]}" if part in ARM_ALSO_KNOWN_AS else ""
        return CpuId("arm", None, None, part, f"Arm {core} ({part_s}{aka})", catalog,
                     "arm-topdown", None, model_name)
    who = "Arm" if implementer == ARM_IMPLEMENTER else f"Arm-architecture (implementer {implementer:#04x})"
    # perf's generic arm64 TopdownL1 (sbsa.json) names no core: the generic catalogue.
    return CpuId("arm", None, None, part, f"{who} core ({part_s}; no Neoverse catalogue: generic "
                 f"arm64 top-down)", "arm64", "arm-topdown", None, model_name)
