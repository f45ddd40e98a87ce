"""The TMA (top-down microarchitecture analysis) model: one tree for every tool.

Every parser in analysis.tma.formats turns a tool's output into a `TmaResult`: a flat
list of `TmaValue`, one per node x CPU scope x interval, which collapses into one
`TmaNode` per node (or a tree of them) keyed by toplev's dotted names. Which node sits
where comes from the result's catalogue (analysis.tma.catalog). This module holds the
values, the errors every parser raises and the plausibility check; it imports no parser.

Intervals (perf stat -I, toplev -I): every value keeps the end time its tool printed
(seconds since counting started); `TmaResult.timeline()` gives each interval its start
(where the one before it ended) and end, and `collapse` gives one value per node from the
interval(s) asked for: the mean over the intervals, plain or weighted by their length.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import mean, median

from analysis.errors import UserError
from analysis.tma.catalog import Catalog, default, is_ratio

# Any TMA node is a fraction of something in [0, 1]; toplev/perf print small negative or
# >100 values from rounding and counter skew, but far outside means broken counters
# (pmu-tools#369: Bad_Speculation 13273.4%, Backend_Bound -13254.6%).
PLAUSIBLE_RANGE = (-10.0, 110.0)
# Tools print the share of time a counter ran with two decimals: 99.995 and up is 100 %.
FULL_TIME = 99.995
# How collapse() makes one value of several intervals (docs/tma.md, "Intervals").
TIME_WEIGHTED, PLAIN_MEAN, LAST = "time", "mean", "last"


class TmaParseError(UserError):
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


def domain_label(domain: str | None) -> str:
    """How a domain is printed in tables: '% Slots', '%' when it is unknown, and a
    ratio unit (Arm's MPKI, 'per cache access') as it is."""
    if is_ratio(domain):
        return str(domain)
    return f"% {domain}" if domain else "%"


def value_text(value: float | None, domain: str | None) -> str:
    """A value with its unit sign: '18.0%' for a share, '0.372' for a ratio unit."""
    if value is None:
        return "n/a"
    return f"{value:.3g}" if is_ratio(domain) else f"{value:.1f}%"


@dataclass(frozen=True)
class Interval:
    """One -I interval of a run. perf and toplev print its end, in seconds since
    counting started; it starts where the interval before it ended, the first at 0.
    When a file does not begin with the run's first interval (a pasted excerpt), the
    first one's start is its end less the usual interval length, and says so."""
    index: int                  # 1-based, in time order
    start: float                # s since counting started
    end: float                  # s since counting started: what the tool printed
    start_inferred: bool = False

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def text(self) -> str:
        return f"{self.start:.2f}–{self.end:.2f} s"


def timeline(ends: list[float]) -> list[Interval]:
    """The intervals whose end times a tool printed, in time order, with their starts."""
    ends = sorted(set(ends))
    if not ends:
        return []
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    usual = median(gaps) if gaps else ends[0]
    # perf's first interval runs from 0; a copy that starts later was cut from a longer run.
    cut = bool(gaps) and ends[0] > 1.5 * usual
    starts = [ends[0] - usual if cut else 0.0] + ends[:-1]
    return [Interval(i, st, en, start_inferred=cut and i == 1)
            for i, (st, en) in enumerate(zip(starts, ends), 1)]


def span_text(used: list[Interval], total: int, how: str = TIME_WEIGHTED) -> str:
    """Which interval(s) a value comes from, in words: "time-weighted mean of 6
    intervals, 0.00–5.70 s", "interval 3 of 6, 2.01–3.01 s", "whole run"."""
    if not used:
        return "whole run"
    if len(used) == 1:
        return f"interval {used[0].index} of {total}, {used[0].text()}"
    lead = "time-weighted mean" if how == TIME_WEIGHTED else "mean"
    count = f"{len(used)} of {total}" if len(used) < total else str(len(used))
    return f"{lead} of {count} intervals, {used[0].start:.2f}–{used[-1].end:.2f} s"


# What collapse() takes for `interval`: "time", "mean", "last", a 1-based interval number,
# a time in seconds, or an Interval (None: the whole-run values).
IntervalChoice = str | int | float | Interval | None


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
    derived: str | None = None     # how a value the tool did not print was computed
    start: float | None = None     # the interval's start (s; TmaResult.timeline), if any

    @property
    def multiplexed(self) -> bool:
        return self.multiplex is not None and self.multiplex < FULL_TIME


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
    derived: str | None = None     # "sum of its children" when the tool printed no value
    samples: int = 1               # how many values were averaged (intervals/CPUs)
    children: list["TmaNode"] = field(default_factory=list)
    intervals: list[Interval] = field(default_factory=list)  # its value's; [] = whole run

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def multiplexed(self) -> bool:
        return self.multiplex is not None and self.multiplex < FULL_TIME


def _merge(name: str, vs: list[TmaValue], spans: dict[float, Interval], how: str) -> TmaNode:
    """One node from the values of several CPUs or intervals: the mean of the usable ones,
    each interval's weighted by its length when `how` is TIME_WEIGHTED."""
    usable = [v for v in vs if v.value is not None and not v.implausible]
    muxes = [v.multiplex for v in vs if v.multiplex is not None]
    weights = [spans[v.interval].seconds if how == TIME_WEIGHTED and v.interval in spans
               else 1.0 for v in usable]
    if usable and sum(weights) <= 0:
        weights = [1.0] * len(usable)
    return TmaNode(
        name=name,
        value=(sum(w * v.value for w, v in zip(weights, usable)) / sum(weights)
               if usable else None),
        domain=vs[0].domain,
        level=vs[0].level or name.count(".") + 1,
        multiplex=mean(muxes) if muxes else None,
        below_threshold=(all(v.below_threshold for v in vs)
                         if all(v.below_threshold is not None for v in vs) else None),
        bottleneck=any(v.bottleneck for v in vs),
        implausible="; ".join(sorted({v.implausible for v in vs if v.implausible})) or None,
        derived=next((v.derived for v in vs if v.derived), None),
        samples=len(usable),
        intervals=sorted({spans[v.interval] for v in usable if v.interval in spans},
                         key=lambda i: i.index),
    )


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
    catalog_note: str | None = None                     # how the catalogue was chosen, if guessed
    # The tree the names were placed in (analysis.tma.catalog; chosen by the parser).
    catalog: Catalog = field(default_factory=default, repr=False, compare=False)

    # -- queries ------------------------------------------------------------------
    def scopes(self) -> list[str | None]:
        return sorted({v.scope for v in self.values}, key=lambda s: (s is not None, s or ""))

    def intervals(self) -> list[float | None]:
        return sorted({v.interval for v in self.values}, key=lambda t: (t is not None, t or 0.0))

    def unknown(self) -> list[TmaValue]:
        """Names that are not in the catalogue (kept, flagged, not silently dropped)."""
        return [v for v in self.values if not v.known]

    def default_scope(self) -> str | None:
        # The scopes of tree values only: a stray name outside the tree must not make
        # "global" the choice when no tree value is global.
        scopes = sorted({v.scope for v in self.values if v.in_tree},
                        key=lambda s: (s is not None, s or ""))
        if None in scopes or not scopes:
            return None
        if len(scopes) == 1:
            return scopes[0]
        # Hybrid parts: the P-core (cpu_core) carries the full TMA tree.
        if "cpu_core" in scopes:
            return "cpu_core"
        return "mean"

    def timeline(self) -> list[Interval]:
        """The intervals the values were printed for (-I), in time order; [] for one
        value per node for the whole run."""
        return timeline([v.interval for v in self.values if v.interval is not None])

    def set_starts(self) -> None:
        """Give every interval value its interval's start (parse_output calls this)."""
        spans = {i.end: i for i in self.timeline()}
        for v in self.values:
            v.start = spans[v.interval].start if v.interval in spans else None

    def pick_interval(self, choice: IntervalChoice) -> Interval | None:
        """One interval: "last", a 1-based index (int), the one holding a time in
        seconds (float: start < t <= end), or an Interval; None when the result has no
        intervals and "last" is asked for. KeyError names what exists."""
        line = self.timeline()
        if isinstance(choice, Interval) or (choice == LAST and not line):
            return choice if isinstance(choice, Interval) else None
        if choice == LAST:
            return line[-1]
        if not line:
            raise KeyError(f"{self.source}: no intervals (one value per node for the whole "
                           "run), so no interval can be picked")
        if isinstance(choice, int) and not isinstance(choice, bool):
            if 1 <= choice <= len(line):
                return line[choice - 1]
            raise KeyError(f"{self.source}: no interval {choice}; it has {len(line)} "
                           f"(1–{len(line)}, {line[0].start:.2f}–{line[-1].end:.2f} s)")
        if isinstance(choice, float):
            hit = next((i for i in line if i.start < choice <= i.end), None)
            if hit is not None:
                return hit
            raise KeyError(f"{self.source}: no interval holds {choice:g} s; its {len(line)} "
                           f"intervals cover {line[0].start:.2f}–{line[-1].end:.2f} s")
        raise KeyError(f"interval {choice!r}: expected {TIME_WEIGHTED!r}, {PLAIN_MEAN!r}, "
                       f"{LAST!r}, an interval number or a time in seconds")

    def interval_text(self, interval: IntervalChoice = TIME_WEIGHTED) -> str:
        """Which interval(s) collapse(interval=...) takes its values from, in words."""
        line = self.timeline()
        if not line:
            return "whole run (no intervals)"
        if interval in (TIME_WEIGHTED, PLAIN_MEAN):
            if any(v.interval is None and v.in_tree for v in self.values):
                return f"the tool's SUMMARY rows (whole run; {len(line)} intervals also printed)"
            text = span_text(line, len(line), str(interval))
        else:
            picked = self.pick_interval(interval)
            text = span_text([picked] if picked else [], len(line))
        if line[0].start_inferred:
            text += " (the file begins mid-run: the first interval's start is inferred)"
        return text

    def _select(self, scope: str | None, interval: IntervalChoice) -> list[TmaValue]:
        """The tree values of one scope ("mean" = all) and one interval choice."""
        vals = [v for v in self.values if v.in_tree]
        if scope != "mean":
            vals = [v for v in vals if v.scope == scope]
            if not vals and any(v.in_tree for v in self.values):
                raise KeyError(f"{self.source}: no values for CPU scope {scope!r}; "
                               f"scopes present: {', '.join(str(s) for s in self.scopes())}")
        ivs = {v.interval for v in vals}
        if interval in (TIME_WEIGHTED, PLAIN_MEAN):
            # toplev's SUMMARY rows (interval None) already summarise the intervals.
            return [v for v in vals if v.interval is None] if None in ivs and len(ivs) > 1 else vals
        picked = None if interval is None else self.pick_interval(interval)
        return [v for v in vals if v.interval == (picked.end if picked else None)]

    def collapse(self, scope: str | None = "auto", interval: IntervalChoice = PLAIN_MEAN
                 ) -> dict[str, TmaNode]:
        """One value per tree node.

        scope: "auto" (global if present, the only scope, cpu_core on hybrids, else the
        mean over CPUs), None (global only), "mean" (mean over all scopes) or a scope name.
        interval: "mean" (the default, as ever: summary rows if present, else the plain
        mean over intervals), "time" (the same weighted by each interval's length, what
        the funnel and `stallscope tma` use: a short last interval counts for its
        length), "last", an interval number (1-based), a time in seconds (the interval
        holding it) or an Interval. Each node says which intervals its value covers
        (TmaNode.intervals).
        """
        if scope == "auto":
            scope = self.default_scope()
        groups: dict[str, list[TmaValue]] = {}
        for v in self._select(scope, interval):
            groups.setdefault(v.name, []).append(v)
        spans = {i.end: i for i in self.timeline()}
        how = str(interval) if interval in (TIME_WEIGHTED, PLAIN_MEAN) else LAST
        return {name: _merge(name, vs, spans, how) for name, vs in groups.items()}

    def tree(self, scope: str | None = "auto", interval: IntervalChoice = PLAIN_MEAN
             ) -> list[TmaNode]:
        """The collapsed values as a tree (roots = L1 nodes, in toplev order)."""
        flat = self.collapse(scope, interval)
        roots: list[TmaNode] = []
        for name in sorted(flat, key=self.catalog.tree_order):
            node = flat[name]
            parent = name.rsplit(".", 1)[0] if "." in name else None
            # Walk up to the nearest present ancestor (a level may not have been measured).
            while parent is not None and parent not in flat:
                parent = parent.rsplit(".", 1)[0] if "." in parent else None
            (flat[parent].children if parent else roots).append(node)
        return roots

    def get(self, name: str, scope: str | None = "auto") -> float | None:
        """Collapsed value of a node by dotted path, leaf name or perf name."""
        node = self.collapse(scope).get(self.catalog.resolve(name))
        return node.value if node else None


# Why a value is no measurement at all (as opposed to one out of range): its group never
# ran, or it is a parent summed from such a child (analysis.tma.derive).
STALE = "its counter group ran 0.00% of the time"
FROM_INVALID = "a child it is the sum of is invalid"


def is_invalid(why: str | None) -> bool:
    """True for a value that is no measurement (INVALID), False for one out of range."""
    return bool(why) and (STALE in why or FROM_INVALID in why)


def check_stale(v: TmaValue) -> str | None:
    """A message when the value's counter group never ran (perf printed "(0.00%)" on the
    group's last line): perf computes the metric from stale counts anyway, so the printed
    number is no measurement."""
    if v.multiplex is None or v.multiplex > 0.0:
        return None
    shown = "" if v.value is None else f" (perf printed {v.value:g})"
    return (f"{v.raw_name or v.name}: {STALE}, so the value"
            f"{shown} comes from stale counts; invalid, left out (fewer events per run or "
            "--tma-split make every group run)")


def check_plausible(v: TmaValue) -> str | None:
    """A message when a percent value cannot be a TMA fraction (broken counters)."""
    if v.value is None or math.isnan(v.value) or is_ratio(v.domain):
        return None
    lo, hi = PLAUSIBLE_RANGE
    if lo <= v.value <= hi:
        return None
    return (f"{v.raw_name or v.name} = {v.value:g} {domain_label(v.domain)} is outside the "
            f"possible range {lo:g}..{hi:g} % (a TMA node is a fraction of its domain): the "
            f"counters were unreliable (typical of SMT siblings sharing counters or an "
            f"unsupported CPU model); the value is excluded from comparisons")
