"""The tables of a report's lead, as the PR comment job renders them from results.json
(collectors/pr/lead_md.py assembles them): throughput, the TMA memory path or the line on why
there is none, the memory-stall table, the focus functions and where the time went. Each
function is the one of analysis/report/lead.py or stall_tables.py of the same name, over
collectors/pr/results_doc.py's checked reading of results.json instead of `Results`, with
the same Table writer, columns and number formats; a table shows at most TABLE_ROWS rows.
Standard library only."""
from __future__ import annotations

from analysis.inputs.case import count
from analysis.report.fmt import (THREAD_LABEL, at_level, change_cells, fmt_delta, fmt_ns, level, pp_ci, quiet_verdict,
                                 share, short_test, target_mark, value)
from analysis.report.mdtext import esc
from analysis.report.table import Cell, Column, Table
from collectors.pr.results_doc import LONG_CAP, NOTE_CAP, Change, Doc, Judgement, Run, change, fn_verdict, median
from collectors.pr.untrusted import clip

TABLE_ROWS = 50          # rows of one table of the lead (a real report's have a handful)
NAMES = 50               # functions named in one "Not tabulated here" line
STALL_ROWS = 2           # analysis.report.stall_tables.LEAD_ROWS (tests/test_pr_lead.py holds them equal)
# analysis.tma.funnel.MEMORY_PATH (held equal too)
MEMORY_PATH = (
    "Backend_Bound", "Backend_Bound.Memory_Bound",
    "Backend_Bound.Memory_Bound.L1_Bound", "Backend_Bound.Memory_Bound.L2_Bound",
    "Backend_Bound.Memory_Bound.L3_Bound", "Backend_Bound.Memory_Bound.DRAM_Bound",
    "Backend_Bound.Memory_Bound.Store_Bound",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Bandwidth",
    "Backend_Bound.Memory_Bound.DRAM_Bound.MEM_Latency",
)
QUIET = ("negligible", "too few samples", "undersampled")     # analysis.report.lead.QUIET
NO_CHANGE = Change(None, None, None, None, None, None, None, "", "", None, None, None)


def _change(c: Change, unit: str, digits: int = 1) -> str:
    ch, ci = change_cells(c, unit, digits)
    return f"{ch} {at_level(ci, c)}"


def _value(x: float | None, unit: str) -> str:
    return "n/a" if x is None else value(x, unit)


def _share(x: float | None) -> str:
    return "n/a" if x is None else share(x)


def _judged(j: Judgement) -> Cell:
    return Cell(quiet_verdict(j.verdict, j.detectable, j.detectable_unit or "rel", line=j.line)
                + target_mark(j.target, j.target_missed, j.level_kept), verdict=j.verdict)


def _row_name(m: Doc) -> str:
    return m.text("label") or clip(short_test(m.text("test", LONG_CAP), 48))


def _capped(t: Table, rows: list, add) -> Table:
    for row in rows[:TABLE_ROWS]:
        add(row)
    if len(rows) > TABLE_ROWS:
        t.notes.append(f"{len(rows) - TABLE_ROWS:,} more rows: in report.md.")
    return t


def throughput(r: Run) -> Table | None:
    rows = [(m, False) for m in r.throughput] + [(m, True) for m in r.paired]
    if not rows:
        return None
    fam = next((f for f in r.fdr if f.text("family") == "throughput and latency"), None)
    conf = fam.num("level") if fam is not None and fam.num("level") is not None else r.confidence
    t = Table([Column("Throughput", cls="name"), Column(r.base), Column(r.cand),
               Column(f"Change [{level(conf)} CI]"), Column("Verdict")], escape=esc)

    def add(row: tuple[Doc, bool]) -> None:
        m, paired = row
        unit, c = esc(m.text("unit")), change(m.obj("change")) or NO_CHANGE     # a unit goes into literal cells
        verdict = (quiet_verdict(c.verdict, c.detectable, "pp" if c.unit == "pp" else "rel", c.clears_zero, c.line)
                   + target_mark(m.num("target"), m.flag("target_missed"), m.num("level_kept")))
        t.add([Cell(_row_name(m) + (" · paired" if paired else "")),
               Cell(_value(median(m.obj("base")), unit), literal=True),
               Cell(_value(median(m.obj("cand")), unit), literal=True),
               Cell(_change(c, unit), literal=True), Cell(verdict, verdict=c.verdict)])
    return _capped(t, rows, add)


def memory_rows(r: Run) -> list[Doc]:
    """analysis.report.lead.memory_rows."""
    doc = r.tma.obj("funnel")
    if doc is None:
        return []
    tree = doc.obj("tree")
    vendor = tree.text("vendor", default="intel") if tree is not None else "intel"
    rows = doc.objs("rows")
    wanted = {x.text("node") for x in rows if x.flag("memory")} | (set(MEMORY_PATH) if vendor == "intel" else set())
    present = {x.text("node") for x in rows}
    keep: set[str] = set()
    for node in wanted & present:
        parts = node.split(".")
        keep |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & present
    return [x for x in rows if x.text("node") in keep]


def tma_line(r: Run) -> str:
    item = next((i for i in r.summary if i.text("what") == "tma absent"), None)
    note = item.text("note", NOTE_CAP) if item is not None else ""
    why = note or clip(r.tma.text("reason", LONG_CAP).split(":")[0], NOTE_CAP)
    if r.tma.text("status") == "absent" or r.tma.obj("funnel") is None:
        return f"TMA: not collected ({why}; the full report's TMA section says how to get it)."
    return "TMA: no memory-stall node in the funnel (the full report's TMA section has every node)."


def tma(r: Run) -> Table | None:
    rows = memory_rows(r)
    if not rows:
        return None
    doc = r.tma.obj("funnel")
    runs = doc.obj("runs") or Doc({}, "runs", doc.file)
    conf = min([c for c in (x.num("confidence") for x in rows) if c], default=r.confidence)
    title = "TMA, memory path" + (" (REPLAY of recorded files)" if r.tma.text("status") == "replay" else "")
    t = Table([Column(title, cls="name"), Column(f"{doc.text('base_label')} (n={runs.count('base')})"),
               Column(f"{doc.text('cand_label')} (n={runs.count('cand')})"), Column(f"Δ [{level(conf)} CI]"),
               Column("Verdict")], escape=esc)

    def add(x: Doc) -> None:
        depth, unit = x.text("node").count("."), esc(x.text("delta_unit", default="pp"))
        label = "\u00a0\u00a0" * max(depth - 1, 0) + ("└ " if depth else "") + x.text("leaf")
        fmt = (lambda v: "n/a" if v is None else f"{v:.3g}") if unit != "pp" else \
              (lambda v: "n/a" if v is None else f"{v:.1f}%")
        cut, ci_pp = len(unit) + 1, x.pair("ci_pp")
        ci = f" [{fmt_delta(ci_pp[0], unit)[:-cut]}, {fmt_delta(ci_pp[1], unit)[:-cut]}]" if ci_pp else ""
        verdict = x.text("verdict")
        t.add([Cell(label), Cell(fmt(median(x.obj("base"))), literal=True), Cell(fmt(median(x.obj("cand"))), literal=True),
               Cell(fmt_delta(x.num("delta_pp"), unit) + ci, literal=True), Cell(verdict, verdict=verdict)])
    return _capped(t, rows, add)


# ---------------------------------------------------------------------------- memory stalls

class _Interval:
    """stall_section.Interval: an estimate, its interval (None: none, `why`)."""
    __slots__ = ("value", "low", "high", "why")

    def __init__(self, parent: Doc, key: str):
        d = parent.obj(key)
        if d is None or d.num("value") is None:
            (d or parent).fail("value" if d else key, "an estimate with its interval ({value, low, high})",
                               None if d is None else d.get("value"))
        self.value, self.low, self.high = d.num("value"), d.num("low"), d.num("high")
        self.why = esc(d.text("why", NOTE_CAP))      # shown in a literal cell

    @property
    def decided(self) -> bool:
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def _ooc(row: Doc, side: str) -> _Interval:
    return _Interval(row.obj(side) or row.fail(side, "an object", None), "out_of_cache")


def _ci(i: _Interval) -> str:
    if i.low is None or i.high is None:
        return f"{fmt_ns(i.value)} ({i.why})" if i.why else fmt_ns(i.value)
    return f"{fmt_ns(i.value)} [{fmt_ns(i.low)}, {fmt_ns(i.high)}]"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%".replace("-", "−")


def _share_removed(row: Doc) -> str:
    if row.obj("share_removed") is None:
        return "n/a"
    i = _Interval(row, "share_removed")
    return "n/a" if i.low is None or i.high is None else f"{_pct(i.value)} [{_pct(i.low)}, {_pct(i.high)}]"


def stall_rows(sec: Doc) -> list[Doc]:
    """analysis.report.stall_tables.lead_rows."""
    rows = sec.objs("rows")
    total = [x for x in rows if x.text("kind") == "total"]
    focus = [x for x in rows if x.flag("focus") and x.text("kind") == "flat"
             and (_ooc(x, "base").decided or _Interval(x, "removed").decided)]
    focus.sort(key=lambda x: -_ooc(x, "base").value)
    return total + focus[:STALL_ROWS]


def stalls(r: Run) -> Table | None:
    """analysis.report.stall_tables.lead: where TMA is absent, in the funnel's place."""
    sec = r.stalls
    if not sec.flag("available") or not sec.objs("rows"):
        return None
    lv = sec.num("level")
    t = Table([Column(f"Out-of-cache CPU per {sec.text('command') or 'op'}", cls="name"), Column(r.base),
               Column(f"{r.cand} (left)"), Column(f"Removed [{level(0.95 if lv is None else lv)} CI]"),
               Column("Share removed"), Column("Verdict")], escape=esc)

    def add(row: Doc) -> None:
        removed = _Interval(row, "removed")
        v = "no change" if not removed.decided else "improvement" if removed.value > 0 else "regression"
        name = "all samples" if row.text("kind") == "total" else f"{row.text('function')} ({row.text('kind')})"
        t.add([Cell(name), Cell(fmt_ns(_ooc(row, "base").value), literal=True),
               Cell(fmt_ns(_ooc(row, "cand").value), literal=True), Cell(_ci(removed), literal=True),
               Cell(_share_removed(row), literal=True), Cell(v, verdict=v)])
    return _capped(t, stall_rows(sec), add)


def stall_caption(r: Run) -> str:
    """analysis.report.stall_tables.caption, of an available section."""
    sec = r.stalls
    lv, fam = sec.num("level"), sec.num("family_level")
    s = (f"Out-of-cache cost = CPU per {sec.text('command') or 'op'} at {count(sec.count('keys'))} keys − the same "
         f"builds in cache at {count(sec.count('control_keys'))} keys; intervals at "
         f"{level(0.95 if lv is None else lv)} ({level(0.95 if fam is None else fam)} for each column).")
    lat = sec.obj("latency")
    v = {k: lat.num(k) for k in ("dram_ns", "dram_low", "dram_high", "llc_ns", "llc_low", "llc_high")} \
        if lat is not None else {}
    if v and None not in v.values():
        s += (f" DRAM {v['dram_ns']:.0f} ns [{v['dram_low']:.0f}, {v['dram_high']:.0f}], L3 {v['llc_ns']:.0f} ns "
              f"[{v['llc_low']:.0f}, {v['llc_high']:.0f}] a load here.")
    if sec.text("tma", NOTE_CAP):
        s += f" {sec.text('tma', NOTE_CAP)}"
    cc, lo, hi = sec.num("control_change"), sec.num("control_low"), sec.num("control_high")
    if cc is not None and lo is not None and hi is not None:
        s += f" In cache, throughput {100 * cc:+.1f}% [{100 * lo:+.1f}, {100 * hi:+.1f}].".replace("-", "−")
    return s


# ---------------------------------------------------------------------------- focus functions

def _shown(r: Run) -> list[tuple[Doc, str]]:
    return [(f, k) for f in r.profile.objs("focus") for k in ("flat", "cum") if fn_verdict(f, k).verdict not in QUIET]


def focus(r: Run) -> Table | None:
    """analysis.report.lead.focus."""
    p, rows = r.profile, _shown(r)
    if not p.flag("available") or not rows:
        return None
    fdr = p.obj("fdr")
    conf = level(fdr.num("level") if fdr is not None and fdr.num("level") is not None else r.confidence)
    per_op = p.flag("per_op") and all(f.obj("flat_ns_change") is not None for f, _ in rows)
    what, thread = f"CPU per {p.text('per_op_command')}" if per_op else "% of samples", p.text("thread", default="all")
    cols = [Column(f"Focus function ({THREAD_LABEL.get(thread, thread)}), {what}", cls="name"), Column(r.base),
            Column(r.cand), Column(f"Change [{conf} CI]")]
    t = Table(cols + ([Column("Share")] if per_op else []) + [Column("Verdict")], escape=esc)

    def add(row: tuple[Doc, str]) -> None:
        f, k = row
        b, c = median(f.obj(f"base_{k}")), median(f.obj(f"cand_{k}"))
        if per_op:
            nch = change(f.obj(f"{k}_ns_change")) or NO_CHANGE
            cells = [Cell(fmt_ns(median(f.obj(f"base_{k}_ns"))), literal=True),
                     Cell(fmt_ns(median(f.obj(f"cand_{k}_ns"))), literal=True),
                     Cell(_change(nch, "ns/op", 0), literal=True), Cell(f"{_share(b)} → {_share(c)}", literal=True)]
        else:
            ch = change(f.obj(f"{k}_change")) or NO_CHANGE
            delta = "n/a" if ch.delta is None else f"{ch.delta:+.2f} pp"
            cells = [Cell(_share(b), literal=True), Cell(_share(c), literal=True),
                     Cell(f"{delta} {pp_ci(ch, 2)}".replace("-", "−"), literal=True)]
        t.add([Cell(f"{f.text('name')} ({k})")] + cells + [_judged(fn_verdict(f, k))])
    return _capped(t, rows, add)


def _names(names: list[str]) -> str:
    more = f", and {len(names) - NAMES:,} more" if len(names) > NAMES else ""
    return ", ".join(names[:NAMES]) + more


def focus_left_out(r: Run) -> str:
    """analysis.report.lead.focus_left_out (plain text)."""
    p = r.profile
    if not p.flag("available"):
        reason = p.text("reason", NOTE_CAP)
        return f"No profile comparison: {reason}." if reason else ""
    quiet = {v: [f"{f.text('name')} ({k})" for f in p.objs("focus") for k in ("flat", "cum")
                 if fn_verdict(f, k).verdict == v] for v in QUIET}
    parts = [f"{v}: {_names(names)}" for v, names in quiet.items() if names]
    if p.texts("missing_focus"):
        parts.append(f"in no profile: {_names(p.texts('missing_focus'))}")
    return ("Not tabulated here: " + "; ".join(parts) + ".") if parts else ""


# ---------------------------------------------------------------------------- where the time went

def _signed_ns(x: float | None) -> str:
    return "n/a" if x is None else ("+" if x > 0 else "") + fmt_ns(x)


def _split_cells(row: Doc, name: str) -> list[Cell]:
    lo, hi = row.num("ci_low"), row.num("ci_high")
    ci = "n/a" if lo is None else f"[{_signed_ns(lo)}, {_signed_ns(hi)}]"
    return [Cell(name), Cell(fmt_ns(row.num("base")), literal=True), Cell(fmt_ns(row.num("cand")), literal=True),
            Cell(_signed_ns(row.num("delta")), literal=True), Cell(ci, literal=True)]


def split(r: Run) -> Table | None:
    """analysis.report.lead.split."""
    s = r.profile.obj("time_split")
    if s is None or not s.flag("available") or s.obj("total") is None or s.obj("rest") is None:
        return None
    thread, conf = s.text("thread", default="all"), s.num("confidence")
    t = Table([Column(f"Own CPU per {r.profile.text('per_op_command')} ({THREAD_LABEL.get(thread, thread)})", cls="name"),
               Column(f"{r.base} (mean)"), Column(f"{r.cand} (mean)"), Column("Change"),
               Column(f"{level(conf or r.confidence)} CI")], escape=esc)

    def add(row: Doc) -> None:
        new = " (new)" if row.num("base") == 0 else " (gone)" if row.num("cand") == 0 else ""
        t.add(_split_cells(row, row.text("name") + new))
    _capped(t, s.objs("rows"), add)
    rest = s.obj("rest")
    functions = 1 if rest.get("functions") is None else rest.count("functions")
    t.add(_split_cells(rest, f"everything else ({functions:,} functions)"))
    t.add(_split_cells(s.obj("total"), "total (all samples)"))
    return t


def split_caption(r: Run) -> str:
    """analysis.report.lead.split_caption (plain text)."""
    s = r.profile.obj("time_split")
    cmd = r.profile.text("per_op_command") or "operation"
    if s is None:
        return ""
    total = s.obj("total")
    if not s.flag("available") or total is None:
        return f"Where the time went: not split ({s.text('reason', NOTE_CAP)})."
    paired = s.text("estimator") == "mean pair difference"
    return (f"Where the time went: CPU time per {cmd} {_signed_ns(total.num('delta'))} "
            f"({fmt_ns(total.num('base'))} → {fmt_ns(total.num('cand'))}), by function's own cost. "
            f"Rows: differences of means over {'paired' if paired else 'unpaired'} reps that add up "
            f"to the total; their {'paired t' if paired else 'Welch t'} intervals do not, and judge nothing.")
