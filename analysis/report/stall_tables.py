"""The memory-stall tables (results.json `stalls`, analysis/compare/stall_section.py) as
Tables, for report.md, report.html and the PR comment alike: the lead's table (where TMA is
absent it takes the funnel's place), the full table, and "stall left" (where the candidate
still waits on memory: the next prefetch to write).

Every number is a view of the section: out-of-cache cost = CPU time per operation at the
run's size minus the same in the in-cache control.
"""
from __future__ import annotations

from analysis.compare.results import Results
from analysis.compare.stall_section import Interval, StallRow, StallSection
from analysis.inputs.case import count
from analysis.report.fmt import fmt_ns, level
from analysis.report.mdtext import esc
from analysis.report.table import Cell, Column, Table

LEAD_ROWS = 2        # rows of the lead's table beside all samples (the PR comment's 4 KB)
LEFT_ROWS = 5        # rows of "stall left"


def _ns(i: Interval) -> str:
    return fmt_ns(i.value)


def _ci(i: Interval, fmt=fmt_ns) -> str:
    if i.low is None or i.high is None:
        return f"{fmt(i.value)} ({i.why})" if i.why else fmt(i.value)
    return f"{fmt(i.value)} [{fmt(i.low)}, {fmt(i.high)}]"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%".replace("-", "−")


def _share(i: Interval | None) -> str:
    if i is None or i.low is None or i.high is None:   # no interval, no figure
        return "n/a"
    return f"{_pct(i.value)} [{_pct(i.low)}, {_pct(i.high)}]"


def name(row: StallRow) -> str:
    if row.kind == "total":
        return "all samples"
    return f"{row.function} ({row.kind})"


def verdict(i: Interval) -> str:
    """The removed stall's verdict: a stall that fell is an improvement."""
    if not i.decided:
        return "no change"
    return "improvement" if i.value > 0 else "regression"


def _trips(row: StallRow, sec: StallSection) -> str:
    """"≈ 43 → 9": the round trips each variant's out-of-cache cost stands for, where it is
    decided above 0 (a lower bound on the misses); "" elsewhere."""
    if row.base_trips is None or sec.latency is None:
        return ""
    def one(trips: float | None, i: Interval) -> str:
        return f"{trips:.0f}" if trips is not None and i.low is not None and i.low > 0 else "–"
    return f"≈ {one(row.base_trips, row.base.out_of_cache)} → {one(row.cand_trips, row.cand.out_of_cache)}"


def _table(rows: list[StallRow], r: Results, sec: StallSection, trips: bool, sides: bool = True) -> Table:
    """The rows; `sides`: each variant's out-of-cache cost with its interval (the lead, for the
    PR comment's 4 KB, prints the values: the removed stall's interval is the one that decides)."""
    op = sec.command or "op"
    cols = [Column(f"Out-of-cache CPU per {op}", cls="name"), Column(r.base), Column(f"{r.cand} (left)"),
            Column(f"Removed [{level(sec.level)} CI]"), Column("Share removed"), Column("Verdict")]
    if trips:
        cols.insert(5, Column("DRAM round trips (at least)"))
    side = _ci if sides else _ns
    t = Table(cols, escape=esc)
    for row in rows:
        cells = [Cell(name(row)), Cell(side(row.base.out_of_cache), literal=True),
                 Cell(side(row.cand.out_of_cache), literal=True), Cell(_ci(row.removed), literal=True),
                 Cell(_share(row.share_removed), literal=True)]
        if trips:
            cells.append(Cell(_trips(row, sec), literal=True))
        v = verdict(row.removed)
        cells.append(Cell(v, verdict=v))
        t.add(cells)
    return t


def lead_rows(sec: StallSection) -> list[StallRow]:
    """All samples, then the focus functions' flat rows whose stall is decided in either
    variant or whose removal is, largest base stall first."""
    total = [x for x in sec.rows if x.kind == "total"]
    focus = [x for x in sec.rows if x.focus and x.kind == "flat"
             and (x.base.out_of_cache.decided or x.removed.decided)]
    focus.sort(key=lambda x: -x.base.out_of_cache.value)
    return total + focus[:LEAD_ROWS]


def lead(r: Results) -> Table | None:
    """The lead's stall table (None: no stall section)."""
    sec = r.stalls
    if not sec.available or not sec.rows:
        return None
    return _table(lead_rows(sec), r, sec, trips=False, sides=False)


def full(r: Results) -> Table | None:
    sec = r.stalls
    if not sec.available or not sec.rows:
        return None
    rows = sorted(sec.rows, key=lambda x: (x.kind != "total", not x.focus, -x.base.out_of_cache.value))
    return _table(rows, r, sec, trips=sec.latency is not None)


def left(r: Results) -> Table | None:
    """Where the candidate still waits on memory: its functions by their own out-of-cache
    cost, decided above 0 (flat: the stall is in the function, not its callees)."""
    sec = r.stalls
    if not sec.available:
        return None
    rows = [x for x in sec.rows if x.kind == "flat" and x.cand.out_of_cache.low is not None
            and x.cand.out_of_cache.low > 0]
    rows.sort(key=lambda x: -x.cand.out_of_cache.value)
    if not rows:
        return None
    t = Table([Column(f"Stall left in {r.cand}", cls="name"), Column(f"Out-of-cache CPU per {sec.command or 'op'}"),
               Column("In cache"), Column("At the run's size")], escape=esc)
    for x in rows[:LEFT_ROWS]:
        t.add([Cell(x.function), Cell(_ci(x.cand.out_of_cache), literal=True), Cell(fmt_ns(x.cand.small), literal=True),
               Cell(fmt_ns(x.cand.large), literal=True)])
    return t


def caption(r: Results) -> str:
    """The line above the stall tables: what out-of-cache cost means here, the sizes, the
    latency, the control's throughput."""
    sec = r.stalls
    if not sec.available:
        return f"Memory stalls: not measured ({sec.reason})." if sec.reason else ""
    s = (f"Out-of-cache cost = CPU per {sec.command or 'op'} at {count(sec.keys)} keys − the same builds "
         f"in cache at {count(sec.control_keys)} keys; intervals at {level(sec.level)} "
         f"({level(sec.family_level)} for each column).")
    lat = sec.latency
    if lat is not None:
        s += (f" DRAM {lat.dram_ns:.0f} ns [{lat.dram_low:.0f}, {lat.dram_high:.0f}], L3 {lat.llc_ns:.0f} ns "
              f"[{lat.llc_low:.0f}, {lat.llc_high:.0f}] a load here.")
    if sec.tma:
        s += f" {sec.tma}"
    if sec.control_change is not None and sec.control_low is not None and sec.control_high is not None:
        s += (f" In cache, throughput {100 * sec.control_change:+.1f}% "
              f"[{100 * sec.control_low:+.1f}, {100 * sec.control_high:+.1f}].").replace("-", "−")
    return s


def sizes(r: Results) -> str:
    """The two datasets against the cache, for the full section."""
    sec = r.stalls
    if not sec.available or not (sec.working_set and sec.control_working_set):
        return ""
    return f"The run: {sec.working_set}. The in-cache control: {sec.control_working_set}."


def limits(r: Results) -> list[str]:
    """What the method cannot see, said under the full table (docs/statistics.md)."""
    sec = r.stalls
    out = ["Out-of-cache cost is the DRAM and TLB-walk time that grows with the working set. "
           "It is a lower bound on the stall: the control's own L2 misses, and misses that "
           "overlap (memory-level parallelism), are not in it; round trips = out-of-cache cost / "
           "(DRAM − L3 latency), at least that many misses, since overlapped misses each cost less."]
    if sec.latency is not None:
        out.append(f"Latency: {sec.latency.method}")
    return out + list(sec.notes)
