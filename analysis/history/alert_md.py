"""The alert a scheduled job posts: in the shape of the Redis benchmark automation's
"Automated performance analysis summary", but every change with its 95% interval, the
commit range where it happened, which signal found it (the in-run paired test, E-Divisive
on the series, the run's own verdict, a function's own series; a shift two of them found
is one row that names both; a function that rose ahead of the throughput says so), and the functions (CPU per operation) and TMA nodes that moved at the same point.
Plain Markdown; names from runs are escaped."""
from __future__ import annotations

from analysis.bisect.search import NO_CULPRIT
from analysis.history.changepoints import ChangePoint
from analysis.history.edivisive import PVALUE
from analysis.history.paired_signal import ALPHA
from analysis.history.store import StoredRun
from analysis.report.mdtext import esc
from analysis.report.table import md_table


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}%"


def _ci(c_low: float | None, c_high: float | None) -> str:
    return "" if c_low is None or c_high is None else f" [{_pct(c_low)}, {_pct(c_high)}]"


def _range(c: ChangePoint) -> str:
    a, b = c.commit_range
    if not a and not b:
        return "unknown commits"
    return f"`{(a or '?')[:12]}..{(b or '?')[:12]}`"


SIGNAL_NAMES = {"paired": "in-run paired", "change point": "E-Divisive on the series",
                "in-run": "in-run verdict", "function": "function series"}


def _found(c: ChangePoint) -> str:
    """Each signal that found the shift, how, and where when it placed it at another run."""
    parts = []
    for x in (c, *c.also):
        where = "" if x.first_run.id == c.first_run.id else f" at run `{esc(x.first_run.run_id)}`"
        shift = "" if x is c else f" ({_pct(x.shift)}{_ci(x.shift_low, x.shift_high)})"
        parts.append(f"{SIGNAL_NAMES.get(x.signal, x.signal)}: {esc(x.how)}{where}{shift}")
    both = f"found by {len(c.signals)} signals: " if len(c.signals) > 1 else ""
    ahead = f"**{esc(c.ahead)}**; " if c.ahead else ""
    return ahead + both + "; ".join(parts)


def _movers(c: ChangePoint) -> str:
    if not c.movers:
        return "nothing else moved"
    return ", ".join(f"{esc(m.series)} {_pct(m.shift)}{_ci(m.low, m.high)}" for m in c.movers[:5])


def render_alert(changes: list[ChangePoint], run: StoredRun, *, report_url: str = "",
                 title: str = "stallscope: automated performance analysis summary") -> str:
    regressions = [c for c in changes if c.direction == "regression" and c.mark not in ("expected", "false-positive")]
    improvements = [c for c in changes if c.direction == "improvement"]
    lines = [f"### {esc(title)}", "",
             f"Job **{esc(run.job)}**, run `{esc(run.run_id)}` ({esc(run.started_at)}), "
             f"{esc(run.base)} `{run.commit('base')[:12]}` vs {esc(run.cand)} `{run.commit('cand')[:12]}`"
             + (f" — [full report]({report_url or run.report})" if (report_url or run.report) else "") + ".", ""]
    b = run.meta.get("bisect") if run.meta else None
    # A bisection of the run's range that ends "no culprit" found no commit in it that moved
    # the throughput by its minimum change: the regression is not confirmed, and says so
    # (bench/history.py figure 5c, "bisected", counts it as no finding).
    refuted = bool(b) and b.get("status") == NO_CULPRIT
    if b and regressions:
        lines += [(f"**Culprit: `{esc(b['culprit'][:12])}` {esc(b.get('subject', ''))}** "
                   f"({esc(b.get('date', ''))}), found by bisecting `{esc(b.get('good', '')[:12])}.."
                   f"{esc(b.get('bad', '')[:12])}`: {esc(b.get('why', ''))}") if b.get("culprit") else
                  f"Bisecting `{esc(b.get('good', '')[:12])}..{esc(b.get('bad', '')[:12])}`: {esc(b.get('why', ''))}",
                  ""]
    if not regressions and not improvements:
        lines += ["No regression: no series shifted, and the run's own comparison found none.", ""]
    for heading, items in (("Regressions", [] if refuted else regressions),
                           ("Not confirmed: bisecting the run's range found no culprit",
                            regressions if refuted else []),
                           ("Improvements", improvements)):
        if not items:
            continue
        lines += [f"#### {heading}", ""]
        lines += md_table(["series", "how found", "change (95% CI)", "commits", "moved at the same point"],
                          [[esc(c.series), _found(c), f"{_pct(c.shift)}{_ci(c.shift_low, c.shift_high)}",
                            _range(c), _movers(c)] for c in items])
        lines.append("")
    lines += [f"In-run paired: a one-sided test of the run's paired change against its baseline "
              f"(or, with the same baseline as the run before, against that run's change) at p < {ALPHA}; "
              f"E-Divisive on the series: E-Divisive means over each series (p < {PVALUE}); in-run "
              "verdict: the run's candidate vs its baseline; function series: a rise of one function's share of "
              "the CPU across runs, tested over every function series of the job together (Holm), "
              "\"ahead of throughput\" when no throughput finding is within a run of it. Intervals are 95%, ratios on the log scale. "
              "Mark a change: `stallscope history mark ID acknowledged|expected|false-positive`."]
    return "\n".join(lines) + "\n"
