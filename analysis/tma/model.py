"""The TMA (top-down microarchitecture analysis) model: one tree for every tool.

toplev prints dotted node paths with a count domain ("% Slots", "% Stalls"); perf prints
flat names (tma_mem_latency) and no domain. Both are parsed into `TmaResult` (a flat list
of `TmaValue`, one per node x CPU scope x interval) which can be collapsed into a tree of
`TmaNode` keyed by toplev's dotted names. The catalogue below says where every perf name
sits in the tree and which domain it counts in.

Public API: parse_file(), parse_output(), detect_format(), TmaParseError, NoPmuError,
CATALOG, by_perf_name(), domain_label().
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import mean

FORMATS = ("toplev", "toplev-csv", "perf", "perf-csv", "perf-json")


class TmaParseError(Exception):
    """Input that cannot be read as a TMA measurement; the message names file:line."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.reason = source, line, message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


class NoPmuError(TmaParseError):
    """The tool ran on a machine without a hardware PMU, so no TMA metric exists."""

    HINT = ("TMA needs a hardware PMU (performance monitoring unit); this machine has none "
            "exposed, which is typical of VMs and CI runners. Check with "
            "`perf stat -e cycles true`: '<not supported>' cycles means no PMU. Run on bare "
            "metal or a VM with PMU passthrough (e.g. KVM `-cpu host,pmu=on`).")

    def __init__(self, source: str, line: int | None, evidence: str):
        self.evidence = evidence
        super().__init__(source, line, f"no TMA metrics: {evidence}. {self.HINT}")


# --------------------------------------------------------------------------------------
# Catalogue. Transcribed from the SPR tree documented in tma_tree_spr.txt (pmu-tools
# spr_server_ratios.py "5.1-full" for names/levels/domains/areas/thresholds; Linux perf
# spr-metrics.json for the perf names, which are always "tma_" + lower(leaf name)).
# Indentation (4 spaces per level) encodes the parent. Columns: name, count domain
# (toplev Unit without "% "), toplev area, toplev own threshold (fraction).
_SPR_TREE = """
Frontend_Bound                           Slots             FE       0.15
    Fetch_Latency                        Slots             FE       0.1
        ICache_Misses                    Clocks            FE       0.05
            Code_L2_Hit                  Clocks_Retired    FE       0.05
            Code_L2_Miss                 Clocks_Retired    FE       0.05
        ITLB_Misses                      Clocks            FE       0.05
            Code_STLB_Hit                Clocks_Retired    FE       0.05
            Code_STLB_Miss               Clocks_Retired    FE       0.05
        Branch_Resteers                  Clocks            FE       0.05
            Mispredicts_Resteers         Clocks            FE       0.05
            Clears_Resteers              Clocks            FE       0.05
            Unknown_Branches             Clocks            FE       0.05
        MS_Switches                      Clocks_est        FE       0.05
        LCP                              Clocks            FE       0.05
        DSB_Switches                     Clocks            FE       0.05
    Fetch_Bandwidth                      Slots             FE       0.2
        MITE                             Slots_est         FE       0.1
            Decoder0_Alone               Slots_est         FE       0.1
        DSB                              Slots_est         FE       0.15
        MS                               Slots_est         FE       0.05
Bad_Speculation                          Slots             BAD      0.15
    Branch_Mispredicts                   Slots             BAD      0.1
        Other_Mispredicts                Slots             BAD      0.05
    Machine_Clears                       Slots             BAD      0.1
        Other_Nukes                      Slots             BAD      0.05
Backend_Bound                            Slots             BE       0.2
    Memory_Bound                         Slots             BE/Mem   0.2
        L1_Bound                         Stalls            BE/Mem   0.1
            DTLB_Load                    Clocks_est        BE/Mem   0.1
            Store_Fwd_Blk                Clocks_est        BE/Mem   0.1
            L1_Latency_Dependency        Clocks_est        BE/Mem   0.1
            Lock_Latency                 Clocks            BE/Mem   0.2
            Split_Loads                  Clocks_calc       BE/Mem   0.3
            FB_Full                      Clocks_calc       BE/Mem   0.3
        L2_Bound                         Stalls            BE/Mem   0.05
            L2_Hit_Latency               Clocks_Retired    BE/Mem   0.05
        L3_Bound                         Stalls            BE/Mem   0.05
            Contested_Accesses           Clocks_est        BE/Mem   0.05
            Data_Sharing                 Clocks_est        BE/Mem   0.05
            L3_Hit_Latency               Clocks_est        BE/Mem   0.1
            SQ_Full                      Clocks            BE/Mem   0.3
        DRAM_Bound                       Stalls            BE/Mem   0.1
            MEM_Bandwidth                Clocks            BE/Mem   0.2
            MEM_Latency                  Clocks            BE/Mem   0.1
        CXL_Mem_Bound                    Stalls            BE/Mem   0.1
        Store_Bound                      Stalls            BE/Mem   0.2
            Store_Latency                Clocks_est        BE/Mem   0.1
            False_Sharing                Clocks_est        BE/Mem   0.05
            Split_Stores                 Core_Utilization  BE/Mem   0.2
            Streaming_Stores             Clocks_est        BE/Mem   0.2
            DTLB_Store                   Clocks_est        BE/Mem   0.05
    Core_Bound                           Slots             BE/Core  0.1
        Divider                          Clocks            BE/Core  0.2
            FP_Divider                   Clocks            BE/Core  0.2
            INT_Divider                  Clocks            BE/Core  0.2
        Serializing_Operation            Clocks            BE/Core  0.1
            Slow_Pause                   Clocks            BE/Core  0.05
            C01_Wait                     Clocks            BE/Core  0.05
            C02_Wait                     Clocks            BE/Core  0.05
            Memory_Fence                 Clocks            BE/Core  0.05
        Ports_Utilization                Clocks            BE/Core  0.15
            Ports_Utilized_0             Clocks            BE/Core  0.2
            Ports_Utilized_1             Clocks            BE/Core  0.2
            Ports_Utilized_2             Clocks            BE/Core  0.15
            Ports_Utilized_3m            Clocks            BE/Core  0.4
Retiring                                 Slots             RET      0.7
    Light_Operations                     Slots             RET      0.6
        FP_Arith                         Uops              RET      0.2
            X87_Use                      Uops              RET      0.1
            FP_Scalar                    Uops              RET      0.1
            FP_Vector                    Uops              RET      0.1
        Int_Operations                   Uops              RET      0.1
            Int_Vector_128b              Uops              RET      0.1
            Int_Vector_256b              Uops              RET      0.1
        Memory_Operations                Slots             RET      0.1
        Fused_Instructions               Slots             RET      0.1
        Non_Fused_Branches               Slots             RET      0.1
        Other_Light_Ops                  Slots             RET      0.3
            Nop_Instructions             Slots             RET      0.1
            Shuffles_256b                Slots             RET      0.1
    Heavy_Operations                     Slots             RET      0.1
        Few_Uops_Instructions            Slots             RET      0.05
        Microcode_Sequencer              Slots             RET      0.05
            Assists                      Slots_est         RET      0.1
            CISC                         Slots             RET      0.1
"""

# Nodes below L4 or only in perf's SPR tables (no toplev unit in the source: domain None).
_EXTRA = [
    ("Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency.Local_MEM", 5, None, "BE/Mem"),
    ("Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency.Remote_MEM", 5, None, "BE/Mem"),
    ("Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency.Remote_Cache", 5, None, "BE/Mem"),
    ("Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Bandwidth.MBA_Stalls", 5, None, "BE/Mem"),
    ("Backend_Bound.Core_Bound.AMX_Busy", 3, None, "BE/Core"),
]


@dataclass(frozen=True)
class CatalogNode:
    path: str                 # dotted toplev name, e.g. Backend_Bound.Memory_Bound
    level: int                # 1 = Frontend_Bound/Bad_Speculation/Backend_Bound/Retiring
    domain: str | None        # Slots, Stalls, Clocks, Clocks_est, Uops, ...
    area: str                 # FE, BAD, BE/Mem, BE/Core, RET
    threshold: float | None   # toplev's own threshold (fraction of the domain)
    order: int                # position in a depth-first walk (toplev print order)

    @property
    def leaf(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str | None:
        return self.path.rsplit(".", 1)[0] if "." in self.path else None

    @property
    def perf_name(self) -> str:
        return "tma_" + self.leaf.lower()


def _build_catalog() -> dict[str, CatalogNode]:
    out: dict[str, CatalogNode] = {}
    stack: list[str] = []
    for raw in _SPR_TREE.strip("\n").splitlines():
        indent = (len(raw) - len(raw.lstrip(" "))) // 4
        name, domain, area, thr = raw.split()
        del stack[indent:]
        stack.append(name)
        path = ".".join(stack)
        out[path] = CatalogNode(path, indent + 1, domain, area, float(thr), len(out))
    for path, level, domain, area in _EXTRA:
        out[path] = CatalogNode(path, level, domain, area, None, len(out))
    return out


CATALOG: dict[str, CatalogNode] = _build_catalog()
_BY_PERF: dict[str, CatalogNode] = {n.perf_name: n for n in CATALOG.values()}
# Older/other-core perf tables spell a few SPR nodes differently (same tree position).
_BY_PERF.update({"tma_shuffles": CATALOG["Retiring.Light_Operations.Other_Light_Ops.Shuffles_256b"]})
assert len(_BY_PERF) == len(CATALOG) + 1, "perf names must be unique"

L1_NODES = ("Frontend_Bound", "Bad_Speculation", "Backend_Bound", "Retiring")
# The path to the memory stalls a prefetch change is meant to move.
MEMORY_PATH = (
    "Backend_Bound", "Backend_Bound.Memory_Bound",
    "Backend_Bound.Memory_Bound.L1_Bound", "Backend_Bound.Memory_Bound.L2_Bound",
    "Backend_Bound.Memory_Bound.L3_Bound", "Backend_Bound.Memory_Bound.DRAM_Bound",
    "Backend_Bound.Memory_Bound.Store_Bound",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Bandwidth",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency",
)


def by_perf_name(name: str) -> CatalogNode | None:
    """Catalogue node for a flat perf metric name (tma_mem_latency), or None if unknown."""
    return _BY_PERF.get(name.lower())


def domain_label(domain: str | None) -> str:
    """How a domain is printed in tables: '% Slots', or '%' when it is unknown."""
    return f"% {domain}" if domain else "%"


def tree_order(path: str) -> tuple:
    """Sort key that walks the tree depth-first in toplev's order; unknown nodes last
    under their nearest known ancestor."""
    parts = path.split(".")
    key = []
    for i in range(1, len(parts) + 1):
        node = CATALOG.get(".".join(parts[:i]))
        key.append((0, node.order, "") if node else (1, 0, parts[i - 1]))
    return tuple(key)


# --------------------------------------------------------------------------------------
# The model.

# Any TMA node is a fraction of something in [0, 1]; toplev/perf print small negative or
# >100 values from rounding and counter skew, but far outside means broken counters
# (pmu-tools#369: Bad_Speculation 13273.4%, Backend_Bound -13254.6%).
PLAUSIBLE_RANGE = (-10.0, 110.0)


@dataclass
class TmaValue:
    """One measured node value (percent) in one CPU scope and one interval."""
    name: str                      # dotted path (tree nodes) or the raw name (unknown perf)
    value: float | None            # percent of `domain`; None = NaN / not counted
    domain: str | None             # Slots, Stalls, Clocks, ... (None = not known)
    level: int | None
    scope: str | None = None       # None = global; S0-C0, S0-C0-T0, C0, CPU3, cpu_core ...
    interval: float | None = None  # interval end timestamp (s); None = whole run / summary
    multiplex: float | None = None # % of time the counters ran; None = not reported
    below_threshold: bool | None = None  # toplev "<" (None: the tool does not say)
    bottleneck: bool = False       # toplev "<=="
    perf_threshold: str | None = None    # perf -j "metric-threshold": good/bad/...
    raw_name: str = ""             # the name exactly as the tool printed it
    known: bool = True             # in the catalogue
    in_tree: bool = True           # has a tree position (False: unknown flat perf name)
    line: int = 0                  # 1-based line in the source
    implausible: str | None = None # why the value cannot be right, if it cannot

    @property
    def multiplexed(self) -> bool:
        return self.multiplex is not None and self.multiplex < 99.995


@dataclass
class TmaNode:
    """One node of a collapsed tree: one value per node."""
    name: str
    value: float | None
    domain: str | None
    level: int
    multiplex: float | None = None
    below_threshold: bool | None = None
    bottleneck: bool = False
    implausible: str | None = None
    samples: int = 1               # how many values were averaged (intervals/CPUs)
    children: list["TmaNode"] = field(default_factory=list)

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def multiplexed(self) -> bool:
        return self.multiplex is not None and self.multiplex < 99.995


@dataclass
class TmaResult:
    """Everything one toplev/perf output said about TMA."""
    source: str
    fmt: str
    values: list[TmaValue] = field(default_factory=list)
    tool_version: str | None = None   # "5.01-full-perf" (toplev) / "perf 6.13" when known
    cpu_name: str | None = None       # "Intel(R) Xeon(R) Platinum 8488C [spr/sapphire_rapids]"
    commands: list[str] = field(default_factory=list)   # command lines found in the file
    notes: list[str] = field(default_factory=list)      # stray lines kept, "line N: text"
    warnings: list[str] = field(default_factory=list)   # implausible values, duplicates ...
    overall_multiplex: float | None = None              # toplev MUX row

    # -- queries ------------------------------------------------------------------
    def scopes(self) -> list[str | None]:
        return sorted({v.scope for v in self.values}, key=lambda s: (s is not None, s or ""))

    def intervals(self) -> list[float | None]:
        return sorted({v.interval for v in self.values}, key=lambda t: (t is not None, t or 0.0))

    def unknown(self) -> list[TmaValue]:
        """Names that are not in the catalogue (kept, flagged, not silently dropped)."""
        return [v for v in self.values if not v.known]

    def default_scope(self) -> str | None:
        scopes = self.scopes()
        if None in scopes or not scopes:
            return None
        if len(scopes) == 1:
            return scopes[0]
        # Hybrid parts: the P-core (cpu_core) carries the full TMA tree.
        if "cpu_core" in scopes:
            return "cpu_core"
        return "mean"

    def collapse(self, scope: str | None = "auto", interval: float | str | None = "mean"
                 ) -> dict[str, TmaNode]:
        """One value per tree node.

        scope: "auto" (global if present, the only scope, cpu_core on hybrids, else the
        mean over CPUs), None (global only), "mean" (mean over all scopes) or a scope name.
        interval: "mean" (summary rows if present, else mean over intervals), "last", or
        an interval timestamp.
        """
        if scope == "auto":
            scope = self.default_scope()
        vals = [v for v in self.values if v.in_tree]
        if scope != "mean":
            vals = [v for v in vals if v.scope == scope]
            if not vals and self.values:
                raise KeyError(f"{self.source}: no values for CPU scope {scope!r}; "
                               f"scopes present: {', '.join(str(s) for s in self.scopes())}")
        ivs = {v.interval for v in vals}
        if interval == "mean":
            if None in ivs and len(ivs) > 1:
                vals = [v for v in vals if v.interval is None]
        elif interval == "last":
            last = max((t for t in ivs if t is not None), default=None)
            vals = [v for v in vals if v.interval == last]
        else:
            vals = [v for v in vals if v.interval == interval]
        groups: dict[str, list[TmaValue]] = {}
        for v in vals:
            groups.setdefault(v.name, []).append(v)
        out: dict[str, TmaNode] = {}
        for name, vs in groups.items():
            usable = [v for v in vs if v.value is not None and not v.implausible]
            muxes = [v.multiplex for v in vs if v.multiplex is not None]
            first = vs[0]
            out[name] = TmaNode(
                name=name,
                value=mean(v.value for v in usable) if usable else None,
                domain=first.domain,
                level=first.level or name.count(".") + 1,
                multiplex=mean(muxes) if muxes else None,
                below_threshold=(all(v.below_threshold for v in vs)
                                 if all(v.below_threshold is not None for v in vs) else None),
                bottleneck=any(v.bottleneck for v in vs),
                implausible="; ".join(sorted({v.implausible for v in vs if v.implausible})) or None,
                samples=len(usable),
            )
        return out

    def tree(self, scope: str | None = "auto", interval: float | str | None = "mean"
             ) -> list[TmaNode]:
        """The collapsed values as a tree (roots = L1 nodes, in toplev order)."""
        flat = self.collapse(scope, interval)
        roots: list[TmaNode] = []
        for name in sorted(flat, key=tree_order):
            node = flat[name]
            parent = name.rsplit(".", 1)[0] if "." in name else None
            # Walk up to the nearest present ancestor (a level may not have been measured).
            while parent is not None and parent not in flat:
                parent = parent.rsplit(".", 1)[0] if "." in parent else None
            (flat[parent].children if parent else roots).append(node)
        return roots

    def get(self, name: str, scope: str | None = "auto") -> float | None:
        """Collapsed value of a node by dotted path, leaf name or perf name."""
        flat = self.collapse(scope)
        path = resolve_name(name)
        node = flat.get(path)
        return node.value if node else None


def resolve_name(name: str) -> str:
    """Dotted path for a dotted path, a unique leaf name (DRAM_Bound) or a perf name."""
    if name in CATALOG:
        return name
    cat = by_perf_name(name) if name.lower().startswith("tma_") else None
    if cat:
        return cat.path
    leaves = [p for p in CATALOG if p.rsplit(".", 1)[-1].lower() == name.lower()]
    return leaves[0] if len(leaves) == 1 else name


def check_plausible(v: TmaValue) -> str | None:
    """A message when a percent value cannot be a TMA fraction (broken counters)."""
    if v.value is None or math.isnan(v.value):
        return None
    lo, hi = PLAUSIBLE_RANGE
    if lo <= v.value <= hi:
        return None
    return (f"{v.raw_name or v.name} = {v.value:g} {domain_label(v.domain)} is outside the "
            f"possible range {lo:g}..{hi:g} % (a TMA node is a fraction of its domain): the "
            f"counters were unreliable (typical of SMT siblings sharing counters or an "
            f"unsupported CPU model); the value is excluded from comparisons")


def finish(result: TmaResult) -> TmaResult:
    """Common post-processing: plausibility flags, unknown-name warnings, emptiness."""
    for v in result.values:
        v.implausible = v.implausible or check_plausible(v)
        if v.implausible:
            result.warnings.append(f"line {v.line}: {v.implausible}")
    unknown = sorted({v.raw_name for v in result.values if not v.known})
    if unknown:
        result.warnings.append(
            "names not in the TMA catalogue (kept, not placed in the tree): " + ", ".join(unknown))
    return result
