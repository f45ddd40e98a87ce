"""The slot-normalised view of a TMA result: every node in pipeline slots.

L1/L2 nodes are % of slots already. A deeper node (L3 memory nodes are % of stall cycles,
L4 nodes % of clocks) gets its parent's slots × node / sum of its siblings: Intel's own
rule for the bottleneck metrics. That sum is only the siblings' sum when every sibling was
measured. toplev in its default mode prints only the nodes it flags: a lone DRAM_Bound
then divides by itself and takes 100% of Memory_Bound's slots whatever its value, and the
cometlake `perf stat -M TopdownL3` output in the fixtures lists no tma_l1_bound. So a node
is normalised only when the catalogue's siblings are all present, and otherwise the
reason is given (`SlotView.skipped`). AMD's nodes are all % of slots already; Arm's deeper
nodes and Stage-2 groups have no slot share.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from analysis.tma.catalog import Catalog
from analysis.tma.model import TmaNode

# Siblings that may be absent without making the sum wrong: CXL_Mem_Bound counts stalls on
# CXL-attached memory, which only parts with CXL memory have (toplev and perf print it
# there; elsewhere the node does not exist and its share is 0).
OPTIONAL = frozenset({"CXL_Mem_Bound"})

HOW_TO_FIX = ("toplev prints only the nodes it flags unless given -v; perf stat -M "
              "TopdownL<n> prints every node of that level")


@dataclass
class SlotView:
    shares: dict[str, float] = field(default_factory=dict)   # node -> % of slots
    skipped: dict[str, str] = field(default_factory=dict)    # node -> why not normalised


def _usable(flat: dict[str, TmaNode], name: str) -> bool:
    n = flat.get(name)
    return n is not None and n.value is not None and not n.implausible


def _siblings(catalog: Catalog, parent: str) -> list[str] | None:
    """The parent's children a complete output prints (perf-only nodes, domain "-",
    excluded); None when the catalogue does not know the parent."""
    if parent not in catalog:
        return None
    return [n.path for n in catalog.nodes.values()
            if n.parent == parent and n.domain not in (None, "-") and n.leaf not in OPTIONAL]


def slot_view(flat: dict[str, TmaNode], catalog: Catalog) -> SlotView:
    out = SlotView()
    for name in sorted(flat, key=catalog.tree_order):
        node = flat[name]
        if not _usable(flat, name):
            continue
        known = catalog.get(name)
        if known is not None and (known.stage2 or known.ratio):
            continue           # Arm's Stage-2 groups: no slots at all
        if catalog.vendor == "arm" and node.domain != "Slots":
            out.skipped[name] = ("Arm's deeper nodes are % of cycles relative to their parent, "
                                 "not shares of slots (Arm publishes no slot rule for them)")
            continue
        if node.domain == "Slots" or "." not in name:
            out.shares[name] = node.value
            continue
        parent = name.rsplit(".", 1)[0]
        if parent not in out.shares:
            out.skipped[name] = (f"its parent {parent.rsplit('.', 1)[-1]} has no slot share "
                                 f"({'not measured' if not _usable(flat, parent) else 'not normalised'})")
            continue
        sibs = _siblings(catalog, parent)
        if sibs is None:
            out.skipped[name] = f"{parent} is not in the {catalog.model} catalogue"
            continue
        missing = [s.rsplit(".", 1)[-1] for s in sibs if not _usable(flat, s)]
        if missing:
            out.skipped[name] = (f"{', '.join(missing)} (under {parent.rsplit('.', 1)[-1]}) "
                                 f"not measured, so the siblings' sum is unknown ({HOW_TO_FIX})")
            continue
        total = sum(max(0.0, flat[s].value) for s in sibs if _usable(flat, s)) + sum(
            max(0.0, flat[f"{parent}.{o}"].value) for o in OPTIONAL if _usable(flat, f"{parent}.{o}"))
        out.shares[name] = out.shares[parent] * max(0.0, node.value) / total if total > 0 else 0.0
    return out
