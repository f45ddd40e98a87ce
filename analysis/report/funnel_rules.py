"""The funnel's plain sentences (report prose): one per significant move, from a fixed rule
table, said at render time from the funnel's rows (results.json keeps the numbers only).

A rule is (node leaf, direction, {other leaf: direction that must also hold}, sentence);
the first that matches a move wins, so combined rules come before single-node rules.
Leaves are Intel TMA's, AMD Zen's and Arm Neoverse's (each vendor names its own nodes);
a move no rule knows is said plainly with its domain.
"""
from __future__ import annotations

from analysis.report.fmt import fmt_delta
from analysis.tma.funnel_doc import FunnelRowDoc
from analysis.tma.model import domain_label

RULES: list[tuple[str, str, dict[str, str], str]] = [
    ("DRAM_Bound", "down", {"Frontend_Bound": "up"},
     "DRAM stalls fell while Frontend_Bound rose: memory latency is now hidden, paid for with "
     "extra instructions (typically the prefetch code itself)."),
    ("Memory_Bound", "down", {"Core_Bound": "up"},
     "Memory_Bound fell and Core_Bound rose: stalls moved from waiting on memory to waiting on "
     "execution units."),
    ("Core_Bound", "up", {"Memory_Bound": "down"},
     "Core_Bound rose as Memory_Bound fell: the same stalls, now on execution rather than memory."),
    ("MEM_Bandwidth", "up", {},
     "MEM_Bandwidth rose: DRAM bandwidth is closer to saturation; prefetching may be too "
     "aggressive (lines fetched too early or never used)."),
    ("MEM_Bandwidth", "down", {}, "MEM_Bandwidth fell: fewer cycles with many DRAM reads outstanding."),
    ("MEM_Latency", "down", {}, "MEM_Latency fell: fewer cycles wait on DRAM latency; data arrives "
     "before it is needed."),
    ("MEM_Latency", "up", {}, "MEM_Latency rose: more cycles wait on DRAM latency (cache misses "
     "no longer covered by prefetch or reordering)."),
    ("DRAM_Bound", "down", {}, "DRAM_Bound fell: fewer cycles stall on loads that miss every cache level."),
    ("DRAM_Bound", "up", {}, "DRAM_Bound rose: more cycles stall on loads served from DRAM "
     "(larger working set or lost locality)."),
    ("L3_Bound", "up", {}, "L3_Bound rose: more stalls on loads that hit L3; data often moved "
     "from DRAM into L3 but not closer (prefetch too late or to the wrong level)."),
    ("L3_Bound", "down", {}, "L3_Bound fell: fewer stalls on L3 hits."),
    ("L2_Bound", "up", {}, "L2_Bound rose: more stalls on loads that hit L2."),
    ("L2_Bound", "down", {}, "L2_Bound fell: fewer stalls on L2 hits."),
    ("L1_Bound", "up", {}, "L1_Bound rose: more stalls despite L1 hits (dependent loads, DTLB "
     "misses, store forwarding)."),
    ("L1_Bound", "down", {}, "L1_Bound fell: fewer stalls on L1 hits."),
    ("Store_Bound", "up", {}, "Store_Bound rose: stores stall more (RFO misses, full store buffer)."),
    ("Store_Bound", "down", {}, "Store_Bound fell: stores stall less."),
    ("Memory_Bound", "down", {}, "Memory_Bound fell: a smaller share of pipeline slots is lost "
     "waiting on memory."),
    ("Memory_Bound", "up", {}, "Memory_Bound rose: a larger share of pipeline slots is lost "
     "waiting on memory."),
    ("Core_Bound", "up", {}, "Core_Bound rose: more slots lost to execution resources (ports, "
     "dividers); the code became compute-heavier."),
    ("Core_Bound", "down", {}, "Core_Bound fell: fewer slots lost to execution resources."),
    ("Backend_Bound", "down", {}, "Backend_Bound fell: the back end (memory + execution) blocks "
     "fewer slots."),
    ("Backend_Bound", "up", {}, "Backend_Bound rose: the back end (memory + execution) blocks "
     "more slots."),
    ("Retiring", "up", {}, "Retiring rose: more useful work per slot."),
    ("Retiring", "down", {}, "Retiring fell: less useful work per slot."),
    ("Frontend_Bound", "up", {}, "Frontend_Bound rose: instruction supply limits more often "
     "(more or branchier code, i-cache/iTLB misses)."),
    ("Frontend_Bound", "down", {}, "Frontend_Bound fell: instruction supply limits less often."),
    # AMD Zen: level 2 is an absolute share of all dispatch slots.
    ("backend_bound_memory", "down", {"frontend_bound": "up"},
     "backend_bound_memory fell while frontend_bound rose: memory latency is now hidden, paid "
     "for with extra instructions (typically the prefetch code itself)."),
    ("backend_bound_memory", "down", {}, "backend_bound_memory fell: fewer dispatch slots stall "
     "on loads that have not completed (AMD Zen has no L2/L3/DRAM split below it)."),
    ("backend_bound_memory", "up", {}, "backend_bound_memory rose: more dispatch slots stall on "
     "loads that have not completed."),
    ("backend_bound_by_memory", "down", {}, "backend_bound_by_memory fell: fewer dispatch slots "
     "stall on loads that have not completed."),
    ("backend_bound_by_memory", "up", {}, "backend_bound_by_memory rose: more dispatch slots "
     "stall on loads that have not completed."),
    # Arm: V3's memory share of backend stall cycles, and Stage-2 misses per 1000 instructions.
    ("backend_mem_bound", "down", {}, "backend_mem_bound fell: fewer backend stall cycles wait "
     "on memory."),
    ("backend_mem_bound", "up", {}, "backend_mem_bound rose: more backend stall cycles wait on memory."),
    ("ll_cache_read_mpki", "down", {}, "ll_cache_read_mpki fell: fewer last-level cache read "
     "misses per 1000 instructions (fewer trips to DRAM)."),
    ("ll_cache_read_mpki", "up", {}, "ll_cache_read_mpki rose: more last-level cache read "
     "misses per 1000 instructions."),
    ("l1d_cache_mpki", "down", {}, "l1d_cache_mpki fell: fewer L1D refills per 1000 instructions."),
    ("l1d_cache_mpki", "up", {}, "l1d_cache_mpki rose: more L1D refills per 1000 instructions."),
    ("backend_bound", "down", {}, "backend_bound fell: the back end blocks fewer slots."),
    ("backend_bound", "up", {}, "backend_bound rose: the back end blocks more slots."),
    ("Bad_Speculation", "up", {}, "Bad_Speculation rose: more slots wasted on mispredicted or "
     "cleared work."),
    ("Bad_Speculation", "down", {}, "Bad_Speculation fell: fewer slots wasted on mispredicted work."),
]


def sentence(leaf: str, direction: str, moves: dict[str, str], domain: str | None) -> str:
    """What a node's move means, given every node that moved (leaf -> up/down)."""
    for rule_leaf, rule_dir, others, text in RULES:
        if rule_leaf == leaf and rule_dir == direction and all(
                moves.get(k) == d for k, d in others.items()):
            return text
    return f"{leaf} {'rose' if direction == 'up' else 'fell'} ({domain_label(domain)})."


def explain(rows: list[FunnelRowDoc]) -> list[str]:
    """One sentence per significant (or notable) move of the rows shown, in tree order; a
    notable move without a verdict says why it is not established."""
    moves = {r.leaf: r.direction for r in rows if (r.significant or r.notable) and r.direction}
    out = []
    for r in rows:
        if not (r.significant or r.notable) or not r.direction:
            continue
        said = sentence(r.leaf, r.direction, moves, r.domain)
        no_ci = r.ci_pp is None or None in r.ci_pp
        caveat = ("" if r.significant else
                  f" (not established: {r.reason.rstrip('.')})"
                  if no_ci and r.verdict == "insufficient data" else
                  " (not established: too few runs for a confidence interval)" if no_ci else
                  f" (not established: {r.verdict}, its interval does not exclude noise)")
        out.append(f"{r.leaf} {fmt_delta(r.delta_pp, r.delta_unit)}: {said}{caveat}")
    return out
