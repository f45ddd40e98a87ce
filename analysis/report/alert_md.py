"""The alert a scheduled job posts: in the shape of the Redis benchmark automation's
"Automated performance analysis summary", but every change with its 95% interval, the
commit range where it happened, and the functions (CPU per operation) and TMA nodes that
moved at the same point. Plain Markdown; names from runs are escaped."""
from __future__ import annotations

from analysis.history.changepoints import ChangePoint
from analysis.history.store import StoredRun
from analysis.report.mdtext import esc


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f}%"


def _ci(c_low: float | None, c_high: float | None) -> str:
    return "" if c_low is None or c_high is None else f" [{_pct(c_low)}, {_pct(c_high)}]"


def _range(c: ChangePoint) -> str:
    a, b = c.commit_range
    if not a and not b:
        return "unknown commits"
    return f"`{(a or '?')[:12]}..{(b or '?')[:12]}`"


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
    if not regressions and not improvements:
        lines += ["No regression: no series shifted, and the run's own comparison found none.", ""]
    for heading, items in (("Regressions", regressions), ("Improvements", improvements)):
        if not items:
            continue
        lines += [f"#### {heading}", "",
                  "| series | how found | change (95% CI) | commits | moved at the same point |",
                  "|---|---|---|---|---|"]
        for c in items:
            how = "in this run (vs its baseline)" if c.kind == "in-run" else f"change point at run `{esc(c.first_run.run_id)}`"
            lines.append(f"| {esc(c.series)} | {how} | {_pct(c.shift)}{_ci(c.shift_low, c.shift_high)} "
                         f"| {_range(c)} | {_movers(c)} |")
        lines.append("")
    lines += ["Change points: E-Divisive means over each series (p < 0.05); in-run: the run's "
              "candidate vs its baseline, interleaved. Intervals are 95%, ratios on the log scale. "
              "Mark a change: `stallscope history mark ID acknowledged|expected|false-positive`."]
    return "\n".join(lines) + "\n"
