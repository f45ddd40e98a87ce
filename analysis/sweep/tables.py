"""The sweep's tables as data (analysis/report/table.py): one row per point (base, candidate,
change with its interval at the points' family level and verdict, the lookup's CPU per
operation, a link to the point's own report) and, for a sweep over many runners, where each
point ran. report.md writes them with the one Markdown writer and report.html renders the
same Tables; an experiment inserts its seed columns into the points table."""
from __future__ import annotations

from analysis.report.fmt import level
from analysis.report.mdtext import esc
from analysis.report.table import Cell, Column, Table
from analysis.sweep import cells, hosts
from analysis.sweep.results import PointRow, SweepResults


def methods(res: SweepResults) -> list[str]:
    return sorted({p.method for p in res.points if p.metric is not None and p.method})


def points_table(res: SweepResults, page: str) -> Table:
    """The points table; `page`: the file each point's link opens (report.md, report.html)."""
    load, many, lookup = cells.is_load_time(res), len(methods(res)) > 1, cells.show_lookup(res)
    lk_head, lk_named = cells.lookup_header(res)
    cols = [Column(a.name, cls="axis") for a in res.axes]
    cols += [Column(f"Baseline ({res.base})"), Column(f"PR ({res.cand})"), Column("Change"),
             Column(f"{level(res.fdr.level if res.fdr else res.confidence)} CI"), Column("Verdict")]
    if load:
        cols += [Column(f"best {res.base}"), Column(f"best {res.cand}")]
    if many:
        cols.append(Column("Method"))
    if lookup:
        cols.append(Column(lk_head))
    t = Table(cols + [Column("Report")], escape=esc)
    for p in res.points:
        t.add(_row(res, p, page, load, many, lk_named, lookup), cls="point", key=p.id)
    return t


def _row(res: SweepResults, p: PointRow, page: str, load: bool, many: bool, lk_named: bool,
         lookup: bool) -> list[Cell]:
    row = [Cell(p.labels.get(a.name, "")) for a in res.axes]
    if p.metric is None:
        row += [Cell("—"), Cell("—"), Cell("—"), Cell(""), Cell(cells.status(p), cls="why")]
    else:
        ch, ci = cells.change(p)
        row += [Cell(cells.side(p, "base")), Cell(cells.side(p, "cand")), Cell(ch), Cell(ci),
                Cell(cells.verdict_text(p), verdict=cells.verdict(p))]
    if load:
        row += [Cell(cells.best(p, res.base)), Cell(cells.best(p, res.cand))]
    if many:
        row.append(Cell(p.method, cls="why"))
    if lookup:
        row.append(Cell(cells.lookup(p, lk_named)))
    row.append(Cell(p.id, href=f"{p.report}/{page}") if p.report else Cell(""))
    return row


def hosts_table(res: SweepResults) -> Table:
    """Which point ran on which host (a sweep run over many runners)."""
    t = Table([Column("Point", cls="axis"), Column("Host", cls="axis"), Column("CPU", cls="axis"),
               Column("Logical CPUs")], escape=esc)
    for row in hosts.host_rows(res):
        t.add([Cell(c) for c in row], key=row[0])
    return t


def mountain_table(res: SweepResults) -> Table | None:
    """The memory mountain (analysis/sweep/mountain.py): a row per focus function, a column per
    point past the in-cache reference, each cell base → candidate out-of-cache CPU per
    operation (their intervals are in results.json)."""
    m = res.mountain
    if not m.available or not m.rows:
        return None
    from analysis.inputs.case import count
    from analysis.report.fmt import fmt_ns
    cols = [Column(f"Out-of-cache CPU per {m.command or 'op'} (flat), {res.base} → {res.cand}", cls="name")]
    cols += [Column(f"{count(c.keys)} keys") for c in m.rows[0].cells]
    t = Table(cols, escape=esc)
    for row in m.rows:
        if len(row.cells) != len(m.rows[0].cells):
            continue        # a group measured at other sizes: in results.json
        label = f"{row.function} ({row.group}; vs {count(row.reference_keys)} keys)" if row.group else row.function
        t.add([Cell(label)] + [
            Cell(f"{fmt_ns(c.base.value) if c.base else 'n/a'} → {fmt_ns(c.cand.value) if c.cand else 'n/a'}",
                 literal=True) for c in row.cells])
    return t
