"""TMA catalogues: where every node sits in the top-down tree of one CPU model.

toplev prints dotted paths with their count domain; perf prints flat names
(tma_mem_latency) and no domain. A catalogue says, for one CPU model, the path, level,
domain, area and toplev threshold of every node and which perf names map onto it. Each
catalogue is a data file, catalogs/<model>.tsv, named after the model key toplev prints
in its version line ("[spr/sapphire_rapids]"), so another CPU model is one more file.

Three vendors publish top-down trees and they are not the same tree: Intel's TMA (four
level-1 nodes, deeper levels in stall cycles or clocks), AMD Zen 4/5 pipeline utilization
(five level-1 buckets incl. smt_contention; level 2 absolute shares of all slots, no
level 3) and Arm Neoverse top-down (four level-1 nodes in slots, or two stalled-cycle
nodes on N1; deeper V3 nodes % of cycles relative to the parent) with "Stage 2" metric
groups (MPKI, miss ratios) that are not a tree at all. A catalogue file says which with
`@key<TAB>value` lines before its header (Intel's defaults when absent): vendor, roots,
perf_prefix, slots, memory, detect, generic. Rows outside the roots whose area starts
with "stage2" are such group metrics (CatalogNode.stage2). analysis/tma/catalog_build.py
writes the AMD and Arm files from the published definitions.

This module is the bottom of analysis.tma: it imports nothing from the package.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from analysis.errors import UserError


CATALOG_DIR = Path(__file__).with_name("catalogs")
# Used when a file names no CPU model (perf never does) or one without a catalogue: the
# L1/L2 names are the same on every Intel core since Ice Lake, and deeper names mostly.
DEFAULT_MODEL = "spr"
COLUMNS = ("node", "domain", "area", "threshold", "perf_aliases")
# Intel's level 1 (the default roots of a catalogue that names none).
L1_NODES = ("Frontend_Bound", "Bad_Speculation", "Backend_Bound", "Retiring")
VENDORS = ("intel", "amd", "arm")
# Directives a catalogue may set before its header (`@key<TAB>value`).
DIRECTIVES = ("vendor", "roots", "perf_prefix", "slots", "memory", "detect", "generic", "title")
# Units that are no percentage (Arm's Stage-2 groups): never checked against 0..100 %,
# never slot-normalised, changes in the unit itself rather than in points.
RATIO_UNITS = ("MPKI", "PKI")


def is_ratio(domain: str | None) -> bool:
    """True for a unit such as MPKI or 'per cache access'; False for % of a domain."""
    return bool(domain) and (domain in RATIO_UNITS or domain.startswith("per ")
                             or " per " in domain)


class CatalogError(UserError):
    """A catalogue file that cannot be read; the message names file:line and the fix."""


@dataclass(frozen=True)
class CatalogNode:
    path: str                 # dotted toplev name, e.g. Backend_Bound.Memory_Bound
    level: int                # 1 = Frontend_Bound/Bad_Speculation/Backend_Bound/Retiring
    domain: str | None        # Slots, Stalls, Clocks, Clocks_est, Uops, ...
    area: str                 # FE, BAD, BE/Mem, BE/Core, RET
    threshold: float | None   # toplev's own threshold (fraction of the domain)
    order: int                # row number in the file: toplev's depth-first print order
    perf_aliases: tuple[str, ...] = ()   # perf names besides perf_name (other perf tables)
    perf_prefix: str = "tma_"            # Intel's perf names are tma_<leaf>; AMD/Arm: <leaf>

    @property
    def leaf(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str | None:
        return self.path.rsplit(".", 1)[0] if "." in self.path else None

    @property
    def perf_name(self) -> str:
        return self.perf_prefix + self.leaf.lower()

    @property
    def stage2(self) -> bool:
        """A metric of Arm's "Stage 2" groups (MPKI, miss ratios ...): not a tree node,
        never summed or normalised like slots."""
        return self.area.startswith("stage2")

    @property
    def ratio(self) -> bool:
        return is_ratio(self.domain)


@dataclass(eq=False)
class Catalog:
    """The nodes of one CPU model, by dotted path and by perf name."""
    model: str                               # file stem: spr
    source: str                              # the file it was read from
    nodes: dict[str, CatalogNode]
    vendor: str = "intel"                    # intel | amd | arm
    roots: tuple[str, ...] = L1_NODES        # the level-1 nodes, in print order
    slots: int | None = None                 # pipeline slots per cycle, when published
    memory: tuple[str, ...] = ()             # the "memory stalls" headline nodes
    detect: str | None = None                # regex of events only this vendor's output holds
    generic: bool = False                    # a vendor-wide tree (no CPU model named)
    title: str = ""                          # "AMD Zen 4 pipeline utilization"
    by_perf: dict[str, CatalogNode] = field(init=False, repr=False)   # index of `nodes`

    def __post_init__(self) -> None:
        self.by_perf = {}
        for node in self.nodes.values():
            for name in (node.perf_name, *node.perf_aliases):
                other = self.by_perf.setdefault(name, node)
                if other is not node:
                    raise CatalogError(f"{self.source}: perf name {name} names both "
                                       f"{other.path} and {node.path}; give one an alias")

    def __contains__(self, path: str) -> bool:
        return path in self.nodes

    def __getitem__(self, path: str) -> CatalogNode:
        return self.nodes[path]

    def get(self, path: str) -> CatalogNode | None:
        return self.nodes.get(path)

    def by_perf_name(self, name: str) -> CatalogNode | None:
        """The node of a flat perf metric name (tma_mem_latency), or None if unknown."""
        return self.by_perf.get(name.lower())

    def resolve(self, name: str) -> str:
        """Dotted path for a dotted path, a unique leaf name (DRAM_Bound) or a perf name;
        anything else comes back unchanged."""
        if name in self.nodes:
            return name
        node = self.by_perf_name(name)
        if node:
            return node.path
        leaves = [p for p, n in self.nodes.items() if n.leaf.lower() == name.lower()]
        return leaves[0] if len(leaves) == 1 else name

    def tree_order(self, path: str) -> tuple:
        """Sort key that walks the tree depth-first in toplev's order; unknown nodes come
        last under their nearest known ancestor."""
        parts = path.split(".")
        key = []
        for i in range(1, len(parts) + 1):
            node = self.nodes.get(".".join(parts[:i]))
            key.append((0, node.order, "") if node else (1, 0, parts[i - 1]))
        return tuple(key)


    @property
    def children_sum_to_parent(self) -> bool:
        """AMD's level 2 are absolute shares of all slots that sum to their parent."""
        return self.vendor == "amd"

    def tree_roots(self) -> list[str]:
        """The level-1 nodes this catalogue has rows for, in print order."""
        return [r for r in self.roots if r in self.nodes]

    def compatible(self, other: "Catalog") -> str | None:
        """Why results placed in `other` cannot be compared with results placed in this
        one (None when they can): the vendors' trees measure different things, and two
        CPU models of one vendor differ in slots and names."""
        if self.vendor != other.vendor:
            return (f"{self.title or self.model} ({self.vendor}) and {other.title or other.model} "
                    f"({other.vendor}) are different top-down methods: their nodes count "
                    "different pipeline events, so no node of one is a node of the other; "
                    "compare runs of one vendor and CPU model")
        if self.model != other.model and not (self.generic or other.generic):
            return (f"CPU models {self.model} and {other.model} differ (slots per cycle "
                    f"{self.slots or '?'} vs {other.slots or '?'}, node names and events): a "
                    "change between them is the CPU, not the code; compare runs of one model")
        return None


def is_tree_name(name: str) -> bool:
    """A dotted name under one of the four L1 nodes (in a catalogue or not), or under an
    abbreviated one people paste (BE_Bound.Mem_Bound...; legacy_names.tsv)."""
    head = name.split(".", 1)[0]
    return head in L1_NODES or head in legacy_roots()


def _optional(text: str) -> str | None:
    return None if text in ("", "-") else text


def _row(fields: list[str], order: int, nodes: dict[str, CatalogNode], where: str,
         roots: tuple[str, ...] = L1_NODES, prefix: str = "tma_") -> CatalogNode:
    fields += [""] * (len(COLUMNS) - len(fields))
    path, domain, area, threshold, aliases = fields
    if not path or " " in path:
        raise CatalogError(f"{where}: bad node path {path!r} (a dotted name such as "
                           "Backend_Bound.Memory_Bound)")
    if path in nodes:
        raise CatalogError(f"{where}: {path} is listed twice; keep one row")
    parent = path.rsplit(".", 1)[0] if "." in path else None
    if parent is None and path not in roots and not area.startswith("stage2"):
        raise CatalogError(f"{where}: {path} is not under an L1 node ({', '.join(roots)}) "
                           "and not a Stage-2 group metric (area 'stage2:<groups>')")
    if parent is not None and parent not in nodes:
        raise CatalogError(f"{where}: the parent {parent} of {path} has no row above it; "
                           "list every parent before its children")
    try:
        thr = None if _optional(threshold) is None else float(threshold)
    except ValueError:
        raise CatalogError(f"{where}: threshold {threshold!r} is not a number or '-'") from None
    return CatalogNode(path, path.count(".") + 1, _optional(domain), area, thr, order,
                       tuple(a.strip().lower() for a in aliases.split(",") if a.strip()), prefix)


def _directive(line: str, where: str, meta: dict[str, str]) -> None:
    key, _, value = line[1:].partition("\t")
    key, value = key.strip(), value.strip()
    if key not in DIRECTIVES:
        raise CatalogError(f"{where}: unknown directive @{key} (known: "
                           f"{', '.join('@' + d for d in DIRECTIVES)})")
    if key in meta:
        raise CatalogError(f"{where}: @{key} given twice")
    if key == "vendor" and value not in VENDORS:
        raise CatalogError(f"{where}: @vendor {value!r}: choose one of {', '.join(VENDORS)}")
    if key == "slots" and not value.isdigit():
        raise CatalogError(f"{where}: @slots {value!r} is not a whole number of slots per cycle")
    meta[key] = value


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def parse_catalog(text: str, model: str, source: str) -> Catalog:
    """Read a catalogue: '#' comment lines, `@key<TAB>value` directives, a header row
    naming COLUMNS, one row per node."""
    nodes: dict[str, CatalogNode] = {}
    meta: dict[str, str] = {}
    header_seen = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        where = f"{source}:{lineno}"
        if line.startswith("@"):
            if header_seen:
                raise CatalogError(f"{where}: directives go before the header row")
            _directive(line, where, meta)
            continue
        fields = [f.strip() for f in line.split("\t")]
        if not header_seen:
            if tuple(fields) != COLUMNS:
                raise CatalogError(f"{where}: expected the tab-separated header "
                                   f"{' '.join(COLUMNS)!r}, found {line!r}")
            header_seen = True
            roots = _split(meta.get("roots")) or L1_NODES
            continue
        if len(fields) > len(COLUMNS):
            raise CatalogError(f"{where}: {len(fields)} tab-separated fields, at most "
                               f"{len(COLUMNS)} ({', '.join(COLUMNS)})")
        node = _row(fields, len(nodes), nodes, where, roots, meta.get("perf_prefix", "tma_"))
        nodes[node.path] = node
    if not nodes:
        raise CatalogError(f"{source}: no node rows (expected the header, then one row per node)")
    memory = _split(meta.get("memory"))
    for name in memory:
        if name not in nodes:
            raise CatalogError(f"{source}: @memory names {name}, which has no row")
    return Catalog(model, source, nodes, vendor=meta.get("vendor", "intel"),
                   roots=_split(meta.get("roots")) or L1_NODES,
                   slots=int(meta["slots"]) if meta.get("slots") else None, memory=memory,
                   detect=meta.get("detect") or None, generic=meta.get("generic") == "yes",
                   title=meta.get("title", ""))


def models() -> list[str]:
    """The CPU models with a catalogue file."""
    return sorted(p.stem for p in CATALOG_DIR.glob("*.tsv"))


@lru_cache(maxsize=None)
def load(model: str) -> Catalog:
    """The catalogue of one CPU model (catalogs/<model>.tsv), read once."""
    path = CATALOG_DIR / f"{model}.tsv"
    if not path.is_file():
        raise CatalogError(f"no TMA catalogue for CPU model {model!r}; available: "
                           f"{', '.join(models())} (add catalogs/{model}.tsv, see docs/tma.md)")
    return parse_catalog(path.read_text(encoding="utf-8"), model, str(path))


def default() -> Catalog:
    return load(DEFAULT_MODEL)


def _words(text: str) -> set[str]:
    """Every name the text could hold, lower case: perf's flat names as printed and
    topdown-tool's titles with their spaces as '_' ("Backend Bound" -> backend_bound)."""
    low = text.lower()
    joined = re.sub(r"(?<=[a-z0-9]) (?=[a-z0-9])", "_", low)
    return set(re.findall(r"[a-z][\w]*", low)) | set(re.findall(r"[a-z][\w]*", joined))


def guess(text: str) -> tuple[Catalog, str | None]:
    """The catalogue of an output that names no CPU model (perf never does), from the
    names it prints, with a note saying so; Intel's default when no AMD or Arm catalogue
    claims it.

    A non-Intel catalogue is a candidate only when its @detect events are in the text
    (AMD's and Arm's level-1 names are the same words, and toplev's Backend_Bound reads
    as backend_bound); among candidates the most names printed wins, then the most
    level-1 roots printed, then the vendor-wide (generic) tree, then the smallest tree.
    """
    words = _words(text)
    best, best_key = None, None
    for model in models():
        cat = load(model)
        if cat.vendor == "intel" or not cat.detect or not re.search(cat.detect, text):
            continue
        names = {n for n in cat.by_perf if n in words}
        roots = sum(1 for r in cat.roots if r.lower() in words)
        key = (len(names), roots, cat.generic, -len(cat.nodes))
        if names and (best_key is None or key > best_key):
            best, best_key = cat, key
    if best is None:
        return default(), None
    printed = {n for n in best.by_perf if n in words}
    tied = [m for m in models() if m != best.model and load(m).vendor == best.vendor
            and not load(m).generic and printed <= load(m).by_perf.keys()]
    note = (f"the output names no CPU model: catalogue {best.model} ({best.title}) chosen from "
            f"the names it prints" + (f"; {', '.join(tied)} would fit too (--catalog MODEL "
                                      "to choose)" if tied else ""))
    return best, note


def for_cpu(tag: str | None) -> Catalog:
    """The catalogue for toplev's CPU tag ("spr/sapphire_rapids", "skx"): the first
    '/'-separated key with a file, else the default."""
    have = set(models())
    for key in (tag or "").lower().split("/"):
        if key.strip() in have:
            return load(key.strip())
    return default()


# ----------------------------------------------------------------- older names
# toplev 3.x printed `Retiring.Base` and `Retiring.Microcode_Sequencer` where TMA 4.1+
# has `Retiring.Light_Operations` and `Retiring.Heavy_Operations.Microcode_Sequencer`, and
# people paste toplev output with abbreviations (`BE_Bound.Mem_Bound.DRAM_Bound`). A name
# a catalogue does not know is rewritten prefix by prefix, longest first, until no row of
# legacy_names.tsv applies (analysis.tma.formats places it; TmaValue.raw_name keeps the
# printed one).

LEGACY_TABLE = Path(__file__).with_name("legacy_names.tsv")


@lru_cache(maxsize=None)
def legacy_renames() -> tuple[tuple[str, str], ...]:
    """(old prefix, current path), longest old prefix first."""
    rows = []
    for lineno, line in enumerate(LEGACY_TABLE.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 3 or not cols[0] or not cols[1]:
            raise CatalogError(f"{LEGACY_TABLE}:{lineno}: expected 'old<TAB>current<TAB>source', "
                                   f"got {line[:60]!r}")
        rows.append((cols[0], cols[1]))
    return tuple(sorted(rows, key=lambda r: -len(r[0])))


def legacy_roots() -> frozenset[str]:
    """First segments older or abbreviated names start with (FE_Bound, BE_Bound)."""
    return frozenset(old.split(".", 1)[0] for old, _ in legacy_renames() if "." not in old)


def legacy_current(name: str) -> str | None:
    """The current path of an older name, or None when no row applies."""
    out = name
    for _ in range(8):          # a chain of renames is short; never loop forever
        for old, new in legacy_renames():
            if out == old or out.startswith(old + "."):
                out = new + out[len(old):]
                break
        else:
            break
    return out if out != name else None
