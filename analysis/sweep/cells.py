"""The cells of the sweep table as plain text (report.md escapes them, report.html
autoescapes them): one function per column, shared by both renderers."""
from __future__ import annotations

from analysis.report.fmt import change_cells, fmt_ns, quiet_verdict, value
from analysis.sweep.results import PointRow, SweepResults


def side(p: PointRow, which: str) -> str:
    if p.metric is None:
        return "—"
    s = p.metric.base if which == "base" else p.metric.cand
    cv = f" (CV {s.cv * 100:.1f}%)" if s.n > 1 and s.cv == s.cv else ""
    return value(s.median, p.metric.unit) + cv


def change(p: PointRow) -> tuple[str, str]:
    """(change, interval)."""
    if p.metric is None:
        return "—", ""
    return change_cells(p.metric.change, p.metric.unit)


def verdict(p: PointRow) -> str:
    return p.metric.change.verdict if p.metric is not None else ""


def verdict_text(p: PointRow) -> str:
    """The verdict as printed: one that saw nothing says how large a change the point could
    have seen ("no change, could see ±2.2% (80% power)")."""
    if p.metric is None:
        return ""
    c = p.metric.change
    return quiet_verdict(c.verdict, c.detectable, "pp" if c.unit == "pp" else "rel", c.clears_zero,
                         c.line)


def best(p: PointRow, variant: str) -> str:
    if p.metric is None or variant not in p.best:
        return "—"
    return value(p.best[variant], p.metric.unit)


def lookup(p: PointRow, name_in_cell: bool = False) -> str:
    lc = p.lookup
    if lc is None:
        return "—"
    if lc.change is None or lc.base is None or lc.cand is None:
        return f"n/a ({lc.reason})" if lc.reason else "n/a"
    ch, ci = change_cells(lc.change, "ns/op", digits=0)
    if lc.change.rel_ci_low is None or lc.change.rel_ci_high is None:
        # Too few profile reps for an interval: say so rather than print "[n/a]".
        ci = f"no interval: {min(lc.base.n, lc.cand.n)} profile reps with the function a side, 3 needed"
    head = f"{lc.function} ({lc.measure}): " if name_in_cell else ""
    # the report's word for the function (too few samples to see, where counting explains
    # an unstable spread); sweeps written before have only the statistic's
    said = quiet_verdict(lc.verdict or lc.change.verdict, lc.change.detectable, "rel",
                         lc.change.clears_zero, lc.change.line)
    return f"{head}{fmt_ns(lc.base.median)} → {fmt_ns(lc.cand.median)} ({ch} {ci}; {said})"


def lookup_header(res: SweepResults) -> tuple[str, bool]:
    """(column header, whether cells must name the function: points differ in it)."""
    found = [p.lookup for p in res.points if p.lookup and p.lookup.function]
    names = {(lc.function, lc.measure) for lc in found}
    if len(names) == 1:
        lc = found[0]
        return f"{lc.function}, CPU per {lc.command or 'op'} ({lc.measure})", False
    return "lookup, CPU per operation", len(names) > 1


def show_lookup(res: SweepResults) -> bool:
    """The lookup column has something to show: a load-time sweep has no operations, and a
    sweep without profile reps has no CPU time (lookup_note says why instead)."""
    return not is_load_time(res) and any(p.lookup and p.lookup.function for p in res.points)


def lookup_note(res: SweepResults) -> str:
    """Why the table has no lookup column ("" when it has one or is a load-time sweep)."""
    if show_lookup(res) or is_load_time(res):
        return ""
    reasons = sorted({p.lookup.reason for p in res.points if p.lookup and p.lookup.reason})
    return "No lookup column: " + ("; ".join(reasons) if reasons else "no point has a profile") + "."


def status(p: PointRow) -> str:
    if p.metric is not None:
        return ""
    return p.reason or p.status


def is_load_time(res: SweepResults) -> bool:
    return any(p.metric is not None and p.metric.metric == "load time" for p in res.points)
