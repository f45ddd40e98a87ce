"""The tables report.md and report.html share, as data (analysis/report/table.py): metric
rows (throughput, paired, latency), function shares (focus, movers, per thread), CPU time
per operation, callers, thread groups and each metric's values per rep. Names from the run
are plain Cells (each renderer escapes them); numbers stallscope wrote are literal."""
from __future__ import annotations

from analysis.compare.results import ChangeOut, FunctionRow, Judgement, MetricRow, Results, Side
from analysis.report.fmt import (THREAD_LABEL, at_level, change_cells, fmt_ns, fmt_pct, fmt_signed,
                                 fn_verdict, level, pp_ci, quiet_verdict, row_name, samples,
                                 share, target_mark, value)
from analysis.report.mdtext import esc
from analysis.report.table import Cell, Column, Table


def _n(text: str) -> Cell:
    return Cell(text, literal=True)


def side_cell(s: Side, unit: str) -> Cell:
    spread = f"(CV {s.cv * 100:.1f}%, n={s.n})" if s.cv is not None else f"(n={s.n})"
    return Cell(value(s.median, unit), note=spread, literal=True)


def change_verdict(c: ChangeOut, row: MetricRow | None = None) -> Cell:
    """A metric's verdict: for one that saw nothing, the size the run could have seen;
    `row`: a run that decides' row, marked where it missed its target."""
    text = quiet_verdict(c.verdict, c.detectable, "pp" if c.unit == "pp" else "rel", c.clears_zero, c.line)
    if row is not None:
        text += target_mark(row.target, row.target_missed, row.level_kept)
    return Cell(text, verdict=c.verdict)


def judgement_verdict(j: Judgement) -> Cell:
    return Cell(quiet_verdict(j.verdict, j.detectable, j.detectable_unit or "rel", line=j.line)
                + target_mark(j.target, j.target_missed, j.level_kept), verdict=j.verdict, title=j.reason)


def metrics(r: Results, confidence: float) -> Table:
    """Throughput, then the paired and latency rows (named with their metric)."""
    t = Table([Column("Test", cls="name"), Column(f"Baseline ({r.base})"), Column(f"PR ({r.cand})"),
               Column("Change"), Column(f"{level(confidence)} CI"), Column("Verdict")], escape=esc)
    for rows, with_metric in ((r.throughput, False), (r.paired, True), (r.latency, True)):
        for m in rows:
            change, ci = change_cells(m.change, m.unit)
            t.add([Cell(row_name(m) + (f" · {m.metric}" if with_metric else "")),
                   side_cell(m.base, m.unit), side_cell(m.cand, m.unit), _n(change), _n(ci),
                   change_verdict(m.change, m)])
    return t


def functions(rows: list[FunctionRow], kind: str, base: str, cand: str, confidence: float | None,
              per_op: str = "") -> Table:
    """Shares of samples, `kind` flat or cum; with `per_op` (the command, e.g. "MSET") a
    column with the CPU time per operation and its change (the top movers). `confidence`
    None: each row's interval at its own level (a family weighted by share), said in it."""
    ci = f"{level(confidence)} CI" if confidence is not None else "CI (its level)"
    cols = [Column("Function", cls="name"), Column(f"{base} ({kind})"), Column(f"{cand} ({kind})"),
            Column("Change"), Column(ci), Column("Verdict")]
    t = Table(cols + ([Column(f"{kind} per {per_op}")] if per_op else []), escape=esc)
    for r in rows:
        b, c, ch = ((r.base_flat, r.cand_flat, r.flat_change) if kind == "flat"
                    else (r.base_cum, r.cand_cum, r.cum_change))
        rel = f" ({fmt_pct(ch.rel, 0)})" if ch.rel is not None else ""
        j = fn_verdict(r, kind)
        t.add([Cell(r.name), _n(f"{share(b.median)}{samples(j.base_samples)}"),
               _n(f"{share(c.median)}{samples(j.cand_samples)}"), _n(f"{fmt_signed(ch.delta, 2)} pp{rel}"),
               _n(at_level(f"{pp_ci(ch, 2)} pp", ch)), judgement_verdict(j)] + ([_per_op_cell(r, kind)] if per_op else []))
    return t


def _per_op_cell(r: FunctionRow, kind: str) -> Cell:
    """A mover's CPU time per operation, base → cand, with its change."""
    bn, cn, nch = ((r.base_flat_ns, r.cand_flat_ns, r.flat_ns_change) if kind == "flat"
                   else (r.base_cum_ns, r.cand_cum_ns, r.cum_ns_change))
    if bn is None or cn is None or nch is None:
        return _n("n/a")
    return _n(f"{fmt_ns(bn.median)} → {fmt_ns(cn.median)} ({change_cells(nch, 'ns/op', 0)[0]})")


def per_op(r: Results, confidence: float) -> Table:
    """CPU time per operation: all samples, then each focus function flat and cum."""
    p = r.profile
    rows = []
    t = p.per_op_total
    if t is not None:
        rows.append((_n(f"all samples ({THREAD_LABEL[p.thread]})"), t.base, t.cand, t.change,
                     change_verdict(t.change)))
    for kind in ("flat", "cum"):
        for f in p.focus:
            rows.append((Cell(f"{f.name} ({kind})"), *((f.base_flat_ns, f.cand_flat_ns, f.flat_ns_change)
                         if kind == "flat" else (f.base_cum_ns, f.cand_cum_ns, f.cum_ns_change)),
                         judgement_verdict(fn_verdict(f, kind))))
    out = Table([Column("Function", cls="name"), Column(r.base), Column(r.cand), Column("Change"),
                 Column(f"{level(confidence)} CI"), Column("Verdict")], escape=esc)
    for name, b, c, ch, v in rows:
        if b is not None and c is not None and ch is not None:
            change, ci = change_cells(ch, "ns/op", 0)
            out.add([name, _n(fmt_ns(b.median)), _n(fmt_ns(c.median)), _n(change), _n(at_level(ci, ch)), v])
    return out


def callers(r: Results) -> Table:
    t = Table([Column("Function", cls="name"), Column("Caller", cls="name"), Column(r.base),
               Column(r.cand), Column("Δ")], escape=esc)
    for c in r.profile.callers:
        t.add([Cell(c.function), Cell(c.caller), _n(share(c.base_share)), _n(share(c.cand_share)),
               _n(f"{fmt_signed(c.cand_share - c.base_share, 2)} pp")])
    return t


def threads(r: Results, confidence: float) -> Table:
    t = Table([Column("Thread group", cls="name"), Column(r.base), Column(r.cand), Column("Change"),
               Column(f"{level(confidence)} CI")], escape=esc)
    for g in r.profile.threads:
        t.add([Cell(g.group), _n(share(g.base.median)), _n(share(g.cand.median)),
               _n(f"{fmt_signed(g.change.delta, 1)} pp"), _n(f"{pp_ci(g.change)} pp")])
    return t


def rep_values(r: Results, m: MetricRow) -> Table:
    """A metric's value in each rep of each variant."""
    t = Table([Column("Variant", cls="name"), Column("reps"), Column("values")], escape=esc)
    for v, side in ((r.base, m.base), (r.cand, m.cand)):
        t.add([Cell(v), _n(", ".join(map(str, side.reps))), _n(", ".join(value(x, m.unit) for x in side.values))])
    return t
