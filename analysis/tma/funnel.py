"""The TMA funnel: where did the pipeline slots go, baseline vs candidate.

Several runs per side (toplev/perf outputs parsed by analysis.tma) are compared node by
node: median per side, spread, change in percentage points (pp), a confidence interval
and verdict from analysis.stats (Hodges-Lehmann / Mann-Whitney by default; a Welch
t-interval where the rank interval cannot reach 95%, which is the only one 2 runs a side
have: stats.SMALL_N), a slot-normalised view (so a % Stalls child is never read as a share of a % Slots
parent); the report says each significant move in a sentence (analysis/report/funnel_rules).

One table shape for every vendor's tree (the results' catalogue: Intel TMA, AMD Zen
pipeline utilization, Arm Neoverse top-down); results placed in different vendors' or
models' trees are refused (IncompatibleTrees), and each catalogue names its "memory
stalls" nodes, always shown. Arm's Stage-2 ratios (MPKI, miss ratios) are compared
relatively, in their own unit, never in points.

A file is one run and gives one value per node whatever it holds: with -I intervals,
by default their mean weighted by each interval's length (or the interval asked for).
Intervals of one run are not runs: they share the process, its caches and its placement,
so treating them as independent would make the interval across runs far too narrow.
Each value says which interval(s) it comes from (SideStats.intervals, the notes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatch
from statistics import median
from typing import Any

from analysis import stats
from analysis.errors import UserError
from analysis.tma.catalog import Catalog, is_ratio
from analysis.tma.model import (TIME_WEIGHTED, IntervalChoice, TmaNode, TmaResult, domain_label,
                                span_text)
from analysis.tma.funnel_doc import FunnelDoc
from analysis.tma.funnel_notes import interval_notes, once, scope_note, skipped
from analysis.tma.slots import slot_view

SCHEMA = "stallscope.tma-funnel/1"
# The fewest runs a side that get an interval: users bring the outputs they have, often two
# toplev runs of minutes each, and 2+2 still give a Welch interval that holds its coverage
# (stats.SMALL_N says where that was shown).
MIN_RUNS = stats.SMALL_N
# With fewer runs a side, a move this large (pp) is still shown and explained, but
# flagged as not established.
NOTABLE_PP = 2.0
NOTABLE_RATIO = 0.10
# Higher is better for useful work; the rest of Retiring's subtree is neither good nor bad
# (Intel's Retiring, AMD's and Arm's retiring; AMD's fastpath is its light-operations share;
# Arm's Stage-2 IPC and last-level hit ratio).
HIGHER_IS_BETTER = {"Retiring", "Retiring.Light_Operations", "retiring",
                    "retiring.retiring_fastpath", "retiring.retiring_from_fastpath", "ipc",
                    "ll_cache_read_hit_ratio", "ll_cache_read_hit_rate"}
NEUTRAL_PREFIX = ("Retiring.", "retiring.")
# Arm's Stage-2 groups that describe the work rather than a cost: a change is "changed".
NEUTRAL_GROUPS = ("Operation_Mix", "InstructionMix", "PEutilization", "FP_Precision_Mix",
                  "SVE_Effectiveness", "FP_Arithmetic_Intensity")


class IncompatibleTrees(UserError, ValueError):
    """Results placed in different vendors' or CPU models' top-down trees."""
# Shown by default: the path to the memory stalls a prefetch change is meant to move.
MEMORY_PATH = (
    "Backend_Bound", "Backend_Bound.Memory_Bound",
    "Backend_Bound.Memory_Bound.L1_Bound", "Backend_Bound.Memory_Bound.L2_Bound",
    "Backend_Bound.Memory_Bound.L3_Bound", "Backend_Bound.Memory_Bound.DRAM_Bound",
    "Backend_Bound.Memory_Bound.Store_Bound",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Bandwidth",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency",
)



@dataclass
class SideStats:
    """One node on one side: the per-run values and their summary (percent of domain)."""
    values: list[float]
    median: float | None
    min: float | None
    max: float | None
    mad: float | None              # median absolute deviation (pp)
    multiplex: float | None        # lowest share of time the counters ran (%), None = full
    slots: list[float] = field(default_factory=list)   # slot-normalised, per run
    excluded: list[str] = field(default_factory=list)  # implausible values left out
    intervals: list[str] = field(default_factory=list)  # per value: the intervals it is of

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def slots_median(self) -> float | None:
        return median(self.slots) if self.slots else None

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "values": self.values, "median": self.median, "min": self.min,
                "max": self.max, "mad": self.mad, "multiplex": self.multiplex,
                "estimate": self.multiplex is not None and self.multiplex < 99.995,
                "slots_values": self.slots, "slots_median": self.slots_median,
                "excluded": self.excluded, "intervals": self.intervals}


@dataclass
class FunnelRow:
    name: str                      # dotted path
    level: int
    domain: str | None
    base: SideStats
    cand: SideStats
    delta: float | None            # the change in pp: the estimator of `ci`'s method, or
                                   # cand median - base median when there is no interval
    ci: tuple[float, float] | None # interval of delta (pp)
    confidence: float | None       # achieved coverage of ci
    verdict: str
    reason: str
    significant: bool              # established move (CI on one side of 0 and past noise)
    notable: bool                  # |delta| >= NOTABLE_PP (used when runs are too few)
    direction: str | None          # "up" / "down" / None
    ci_method: str | None = None   # how the interval was made (analysis.stats method text)
    # the unit of delta and ci: "pp"; "%" for a ratio node (MPKI) judged on the log scale
    # (its relative change and the log-scale interval that decided); the ratio's own unit
    # where a value <= 0 leaves no ratio or no interval was made
    unit: str = ""

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def slots_delta(self) -> float | None:
        b, c = self.base.slots_median, self.cand.slots_median
        return None if b is None or c is None else c - b


def _side(nodes: list[dict[str, TmaNode]], shares: list[dict[str, float]], name: str,
          totals: list[int], how: str) -> SideStats:
    """One node on one side; `totals` are the runs' numbers of intervals, `how` the mean
    taken over them (analysis.tma.model.span_text)."""
    vals, slots, muxes, excluded, ivs = [], [], [], [], []
    for flat, sh, total in zip(nodes, shares, totals):
        node = flat.get(name)
        if node is None:
            continue
        if node.implausible:
            excluded.append(node.implausible)
            continue
        if node.value is None:
            continue
        vals.append(node.value)
        ivs.append(span_text(node.intervals, total, how))
        if name in sh:
            slots.append(sh[name])
        if node.multiplexed:
            muxes.append(node.multiplex)
    if not vals:
        return SideStats([], None, None, None, None, min(muxes) if muxes else None, [], excluded)
    med = median(vals)
    return SideStats(vals, med, min(vals), max(vals), median(abs(v - med) for v in vals),
                     min(muxes) if muxes else None, slots, excluded, ivs)


def _row(name: str, domain: str | None, level: int, b: SideStats, c: SideStats,
         method: str, group: str = "", paired: bool = False) -> FunnelRow:
    if not b.n or not c.n:
        missing = "baseline" if not b.n else "candidate"
        return FunnelRow(name, level, domain, b, c, None, None, None, "n/a",
                         f"not measured in the {missing} runs", False, False, None)
    delta = c.median - b.median
    direction = "up" if delta > 0 else "down" if delta < 0 else None
    # A ratio (MPKI) has no points: a tenth of its baseline is as notable as 2 pp of slots.
    notable = (abs(delta) >= NOTABLE_RATIO * abs(b.median) if is_ratio(domain)
               else abs(delta) >= NOTABLE_PP)
    if b.n < MIN_RUNS or c.n < MIN_RUNS:
        verdict = ("n/a (1 run per side)" if b.n == 1 and c.n == 1
                   else f"n/a (fewer than {MIN_RUNS} runs per side)")
        return FunnelRow(name, level, domain, b, c, delta, None, None, verdict,
                         f"no confidence can be given with {b.n} and {c.n} runs",
                         False, notable, direction)
    # k-th run of each side a pair (the paired reps' windows) while every run has the node
    pairs = paired and b.n == c.n and not b.excluded and not c.excluded
    if is_ratio(domain):
        # MPKI or a miss ratio: relative thresholds, the change in the metric's own unit.
        ch = stats.compare(b.values, c.values, higher_is_better=name in HIGHER_IS_BETTER,
                           method=method, min_n=MIN_RUNS, paired=pairs)
    else:
        ch = stats.compare_shares(b.values, c.values, higher_is_better=name in HIGHER_IS_BETTER,
                                  method=method, min_n=MIN_RUNS, paired=pairs)
    # The printed change is the estimator that belongs to the interval (pyperf's rule),
    # and its sign says which way the node moved.
    delta, ci, unit = ch.delta, (ch.ci_low, ch.ci_high), delta_unit(domain)
    if is_ratio(domain) and ch.rel is not None and ch.rel_ci_low is not None:
        # the verdict judged the log-scale interval: print that one and its estimator, not
        # a difference of means beside it (342 of 3,000 2+2 draws disagreed in sign or
        # decision)
        delta, ci, unit = 100 * ch.rel, (100 * ch.rel_ci_low, 100 * ch.rel_ci_high), "%"
    direction = "up" if delta > 0 else "down" if delta < 0 else None
    verdict = ch.verdict
    if (name.startswith(NEUTRAL_PREFIX) or any(g in NEUTRAL_GROUPS for g in group.split(","))) and \
            name not in HIGHER_IS_BETTER and verdict in stats.DECIDED:
        verdict = f"changed ({direction})"   # more/less heavy ops is neither good nor bad
    significant = verdict in stats.DECIDED or verdict.startswith("changed")
    return FunnelRow(name, level, domain, b, c, delta, ci, ch.confidence,
                     verdict, ch.reason, significant, notable, direction, ch.method, unit)


def delta_unit(domain: str | None) -> str:
    """The unit a node's change is in: percentage points, or a ratio's own (MPKI)."""
    return str(domain) if is_ratio(domain) else "pp"


@dataclass
class Funnel:
    rows: list[FunnelRow]              # the selected rows, tree order
    all_rows: list[FunnelRow]          # every node measured on either side
    base_label: str
    cand_label: str
    base_sources: list[str]
    cand_sources: list[str]
    method: str
    warnings: list[str]              # the parsers', each once (with the files it came from)
    notes: list[str] = field(default_factory=list)   # nodes not slot-normalised and why, scopes
    catalog: Catalog | None = None   # the tree the rows are nodes of (both sides share it)
    interval: str = TIME_WEIGHTED    # which interval(s) of an -I file a value is of

    # ---------------------------------------------------------------- json
    def doc(self) -> FunnelDoc:
        """The funnel as its typed document (what results.json keeps)."""
        return FunnelDoc.from_json(self.to_json())

    def to_json(self) -> dict[str, Any]:
        def row(r: FunnelRow) -> dict[str, Any]:
            return {"node": r.name, "leaf": r.leaf, "level": r.level, "domain": r.domain,
                    "unit": domain_label(r.domain), "base": r.base.to_json(),
                    "cand": r.cand.to_json(), "delta_pp": r.delta,
                    "ci_pp": list(r.ci) if r.ci else None, "confidence": r.confidence,
                    "verdict": r.verdict, "reason": r.reason, "significant": r.significant,
                    "notable": r.notable, "direction": r.direction,
                    "slots_delta_pp": r.slots_delta,
                    "higher_is_better": r.name in HIGHER_IS_BETTER,
                    # the unit of delta_pp and ci_pp: "pp"; "%" (a ratio's change on
                    # the log scale); or a ratio's own (MPKI) without an interval
                    "delta_unit": r.unit or delta_unit(r.domain),
                    "stage2": bool(cat and r.name in cat and cat[r.name].stage2),
                    "memory": bool(cat and r.name in cat.memory)}
        cat = self.catalog
        tree = ({"vendor": cat.vendor, "model": cat.model, "title": cat.title,
                 "slots_per_cycle": cat.slots, "roots": cat.tree_roots(),
                 "memory": list(cat.memory)} if cat else None)
        return {"schema": SCHEMA, "base_label": self.base_label, "cand_label": self.cand_label,
                "tree": tree,
                "base_sources": self.base_sources, "cand_sources": self.cand_sources,
                "runs": {"base": len(self.base_sources), "cand": len(self.cand_sources)},
                "method": self.method, "rows": [row(r) for r in self.rows],
                "all_rows": [row(r) for r in self.all_rows],
                "warnings": self.warnings, "notes": self.notes, "interval": self.interval}


def _selected(name: str, patterns: list[str], catalog: Catalog) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    for p in patterns:
        p = p.lower()
        if p == "all" or fnmatch(name.lower(), p) or fnmatch(leaf.lower(), p) \
                or fnmatch("tma_" + leaf.lower(), p) or catalog.resolve(p) == name:
            return True
    return False


def _keep(shown: list[FunnelRow], nodes: list[str] | None, catalog: Catalog) -> set[str]:
    """The rows shown: those asked for, else the roots, the memory path and every node
    that moved; with their ancestors, which keep the tree readable."""
    if nodes:
        keep = {r.name for r in shown if _selected(r.name, nodes, catalog)}
    else:
        memory = set(catalog.memory) | (set(MEMORY_PATH) if catalog.vendor == "intel" else set())
        keep = {r.name for r in shown if r.name in catalog.roots or r.name in memory
                or r.significant or r.notable}
    present = {r.name for r in shown}
    for name in list(keep):
        parts = name.split(".")
        keep |= {".".join(parts[:i]) for i in range(1, len(parts))} & present
    return keep


def compare(base: list[TmaResult], cand: list[TmaResult], *, depth: int = 4,
            nodes: list[str] | None = None, base_label: str = "baseline",
            cand_label: str = "candidate", scope: str | None = "auto",
            method: str = "auto", interval: IntervalChoice = TIME_WEIGHTED,
            paired: bool = False) -> Funnel:
    """Compare TMA results of several baseline runs with several candidate runs.

    depth: deepest level shown (1 = L1 only). nodes: names/globs to show (dotted path,
    leaf or perf name; "all" = every node); default = L1 nodes, the memory path and every
    node that moved significantly. method: "auto" (default: Hodges-Lehmann / Mann-Whitney
    when it reaches 95%, else a Welch t-interval), "hl" (rank interval only, whatever
    coverage it reaches) or "bootstrap" (percentile bootstrap of the median difference).
    interval: which interval(s) of an -I file give its one value per node
    (TmaResult.collapse): "time" (default: their mean weighted by length), "mean",
    "last", a 1-based interval number or a time in seconds. paired: the k-th result of
    each side were measured side by side (a paired rep's windows): rows compare pairs.
    """
    if not base or not cand:
        raise ValueError("compare() needs at least one result per side")
    # Names are dotted paths whatever the catalogue; the baseline's orders the rows.
    catalog = base[0].catalog
    for res in base[1:] + cand:
        why = catalog.compatible(res.catalog)
        if why:
            raise IncompatibleTrees(f"cannot compare {base[0].source} with {res.source}: {why}")
    bflat = [r.collapse(scope, interval) for r in base]
    cflat = [r.collapse(scope, interval) for r in cand]
    bview = [slot_view(f, catalog) for f in bflat]
    cview = [slot_view(f, catalog) for f in cflat]
    bsh, csh = [v.shares for v in bview], [v.shares for v in cview]
    names = sorted({n for f in bflat + cflat for n in f}, key=catalog.tree_order)
    how = str(interval) if interval in (TIME_WEIGHTED, "mean") else "one"
    btot, ctot = [len(r.timeline()) for r in base], [len(r.timeline()) for r in cand]
    rows = []
    for name in names:
        ref = next(f[name] for f in bflat + cflat if name in f)
        node = catalog.get(name)
        rows.append(_row(name, ref.domain, ref.level, _side(bflat, bsh, name, btot, how),
                         _side(cflat, csh, name, ctot, how), method,
                         node.area.partition(":")[2] if node is not None and node.stage2 else "",
                         paired))
    shown = [r for r in rows if r.level <= depth]
    keep = _keep(shown, nodes, catalog)
    selected = [r for r in shown if r.name in keep]
    warnings = once([(res.source, w) for res in base + cand for w in res.warnings])
    notes = interval_notes(base + cand, bflat + cflat, keep, interval)
    notes += once([(res.source, msg) for res, v in zip(base + cand, bview + cview)
                    for msg in skipped(v, keep)])
    notes += once([(res.source, n) for res in base + cand
                    if scope == "auto" and (n := scope_note(res))])
    nb, nc = len(base), len(cand)
    if nb >= MIN_RUNS and nc >= MIN_RUNS:
        meth = next((r.ci_method for r in rows if r.ci_method), "none (no node measured on both sides)")
    else:
        meth = f"none (needs {MIN_RUNS} runs per side, has {nb} and {nc})"
    return Funnel(selected, rows, base_label, cand_label, [r.source for r in base],
                  [r.source for r in cand], meth, warnings, notes, catalog, str(interval))
