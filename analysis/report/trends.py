"""Trend pages: one self-contained HTML page per job and an index. Each series of the
candidate across runs with the spread of its reps as a band, the baseline dashed, the
detected change points marked (with their mark, if any), and every point a link to its
run's report. matplotlib SVG inline (text stays escaped text), no scripts."""
from __future__ import annotations

import re
from pathlib import Path

import jinja2
import matplotlib.pyplot as plt

from analysis.history.changepoints import HEADLINE
from analysis.history.store import HistoryStore
from analysis.report.plots import _RC, _svg, _t   # the same SVG conventions as report.html

TEMPLATES = Path(__file__).parent / "templates"


def series_svg(name: str, cand: list, base: list, changes: list[dict]) -> str:
    """cand/base: [(run, point)] oldest first; changes: stored change points of the series."""
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 2.6))
        index = {r.id: i for i, (r, _) in enumerate(cand)}
        xs = list(range(len(cand)))
        ys = [p["value"] for _, p in cand]
        lo = [p["low"] if p["low"] is not None else p["value"] for _, p in cand]
        hi = [p["high"] if p["high"] is not None else p["value"] for _, p in cand]
        ax.fill_between(xs, lo, hi, color="#dd8452", alpha=0.25, linewidth=0, label="candidate: spread of reps")
        ax.plot(xs, ys, color="#dd8452", linewidth=1.2)
        dots = ax.scatter(xs, ys, color="#dd8452", s=14, zorder=3, label="candidate (median)")
        dots.set_urls([r.report or None for r, _ in cand])       # each point links to its report
        bx = [index[r.id] for r, _ in base if r.id in index]
        by = [p["value"] for r, p in base if r.id in index]
        if bx:
            ax.plot(bx, by, color="#4c72b0", linestyle="--", linewidth=1, label="baseline (median)")
        for c in changes:
            if c["first_run"] in index:
                x = index[c["first_run"]] - 0.5
                color = "#c62828" if c["direction"] == "regression" else "#2e7d32"
                ax.axvline(x, color=color, linestyle=":", linewidth=1.5)
                label = f"{c['direction']} {100 * (c['shift'] or 0):+.1f}%" + (f" ({c['mark']})" if c.get("mark") else "")
                ax.annotate(_t(label), (x, ax.get_ylim()[1]), fontsize=8, color=color,
                            ha="left", va="top", xytext=(3, 0), textcoords="offset points")
        unit = cand[0][1]["unit"] if cand else ""
        ax.set_ylabel(_t(unit))
        ax.set_title(_t(name), loc="left")
        ax.set_xticks(xs[:: max(1, len(xs) // 10)])
        ax.set_xticklabels([_t(cand[i][0].started_at[:10]) for i in xs[:: max(1, len(xs) // 10)]], rotation=30, ha="right")
        ax.legend(loc="lower left", fontsize=7, frameon=False)
        return _svg(fig)


def _slug(job: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", job) or "job"


def write_trend_pages(store: HistoryStore, out_dir: Path, jobs: list[str] | None = None,
                      max_series: int = 40) -> Path:
    """index.html plus one page per job; returns the index's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    pages = []
    for job in jobs or store.jobs():
        cand, base = store.series(job, "cand"), store.series(job, "base")
        cps = store.stored_change_points(job)
        names = [n for n in sorted(cand) if n.startswith(HEADLINE)][:max_series]
        plots = [{"name": n, "svg": series_svg(n, cand[n], base.get(n, []),
                                               [c for c in cps if c["series"] == n])} for n in names]
        runs = store.runs(job)
        page = out_dir / f"{_slug(job)}.html"
        page.write_text(env.get_template("trends.html.j2").render(
            job=job, plots=plots, runs=runs, changes=cps,
            run_by_id={r.id: r for r in runs}))
        pages.append({"job": job, "href": page.name, "runs": len(runs),
                      "changes": sum(1 for c in cps if c["direction"] == "regression"),
                      "last": runs[-1].started_at if runs else ""})
    index = out_dir / "index.html"
    index.write_text(env.get_template("trends_index.html.j2").render(pages=pages))
    return index
