"""TMA catalogues: where every node sits in the top-down tree of one CPU model.

toplev prints dotted paths with their count domain; perf prints flat names
(tma_mem_latency) and no domain. A catalogue says, for one CPU model, the path, level,
domain, area and toplev threshold of every node and which perf names map onto it. Each
catalogue is a data file, catalogs/<model>.tsv, named after the model key toplev prints
in its version line ("[spr/sapphire_rapids]"), so another CPU model is one more file.

This module is the bottom of analysis.tma: it imports nothing from the package.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


CATALOG_DIR = Path(__file__).with_name("catalogs")
# Used when a file names no CPU model (perf never does) or one without a catalogue: the
# L1/L2 names are the same on every Intel core since Ice Lake, and deeper names mostly.
DEFAULT_MODEL = "spr"
COLUMNS = ("node", "domain", "area", "threshold", "perf_aliases")
L1_NODES = ("Frontend_Bound", "Bad_Speculation", "Backend_Bound", "Retiring")


class CatalogError(Exception):
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

    @property
    def leaf(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str | None:
        return self.path.rsplit(".", 1)[0] if "." in self.path else None

    @property
    def perf_name(self) -> str:
        return "tma_" + self.leaf.lower()


@dataclass(eq=False)
class Catalog:
    """The nodes of one CPU model, by dotted path and by perf name."""
    model: str                               # file stem: spr
    source: str                              # the file it was read from
    nodes: dict[str, CatalogNode]
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
        node = self.by_perf_name(name) if name.lower().startswith("tma_") else None
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


def is_tree_name(name: str) -> bool:
    """A dotted name under one of the four L1 nodes (in a catalogue or not), or under an
    abbreviated one people paste (BE_Bound.Mem_Bound...; legacy_names.tsv)."""
    head = name.split(".", 1)[0]
    return head in L1_NODES or head in legacy_roots()


def _optional(text: str) -> str | None:
    return None if text in ("", "-") else text


def _row(fields: list[str], order: int, nodes: dict[str, CatalogNode], where: str) -> CatalogNode:
    fields += [""] * (len(COLUMNS) - len(fields))
    path, domain, area, threshold, aliases = fields
    if not path or " " in path:
        raise CatalogError(f"{where}: bad node path {path!r} (a dotted name such as "
                           "Backend_Bound.Memory_Bound)")
    if path in nodes:
        raise CatalogError(f"{where}: {path} is listed twice; keep one row")
    parent = path.rsplit(".", 1)[0] if "." in path else None
    if parent is None and path not in L1_NODES:
        raise CatalogError(f"{where}: {path} is not under an L1 node ({', '.join(L1_NODES)})")
    if parent is not None and parent not in nodes:
        raise CatalogError(f"{where}: the parent {parent} of {path} has no row above it; "
                           "list every parent before its children")
    try:
        thr = None if _optional(threshold) is None else float(threshold)
    except ValueError:
        raise CatalogError(f"{where}: threshold {threshold!r} is not a number or '-'") from None
    return CatalogNode(path, path.count(".") + 1, _optional(domain), area, thr, order,
                       tuple(a.strip().lower() for a in aliases.split(",") if a.strip()))


def parse_catalog(text: str, model: str, source: str) -> Catalog:
    """Read a catalogue: '#' comment lines, a header row naming COLUMNS, one row per node."""
    nodes: dict[str, CatalogNode] = {}
    header_seen = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t")]
        where = f"{source}:{lineno}"
        if not header_seen:
            if tuple(fields) != COLUMNS:
                raise CatalogError(f"{where}: expected the tab-separated header "
                                   f"{' '.join(COLUMNS)!r}, found {line!r}")
            header_seen = True
            continue
        if len(fields) > len(COLUMNS):
            raise CatalogError(f"{where}: {len(fields)} tab-separated fields, at most "
                               f"{len(COLUMNS)} ({', '.join(COLUMNS)})")
        node = _row(fields, len(nodes), nodes, where)
        nodes[node.path] = node
    if not nodes:
        raise CatalogError(f"{source}: no node rows (expected the header, then one row per node)")
    return Catalog(model, source, nodes)


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
