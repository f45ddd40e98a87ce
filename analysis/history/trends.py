"""Trend pages: one self-contained HTML page per job and an index. Each series of the
candidate across runs with the spread of its reps as a band, the baseline dashed, the
detected change points marked (with their mark, if any), and every plotted point a link
to its run's report. Inline SVG (analysis/history/trend_svg.py; text stays escaped text),
no scripts.

A long series is downsampled for its plot (analysis/history/downsample.py: the last runs
and every change point exact, the lowest and highest run of each bucket of the others);
the page links the full data, every run of every plotted series, as JSON written beside
it (analysis/history/export.py; `stallscope history series` prints it as CSV too). Change points are the ones detection stored (`stallscope history changes`, the
schedule after each run): a page is a view, it detects nothing."""
from __future__ import annotations

import re
from pathlib import Path

import jinja2

from analysis.history.changepoints import HEADLINE
from analysis.history.downsample import BUDGET, LAST, Decimated, downsample
from analysis.history.export import write_json
from analysis.history.store import HistoryStore
from analysis.history.trend_svg import Dot, TrendPlot, svg

TEMPLATES = Path(__file__).parent / "templates"
TICKS = 10             # date labels on the x axis


def plot_of(name: str, cand: list, base: list, changes: list[dict],
            budget: int = BUDGET, last: int = LAST) -> tuple[TrendPlot, Decimated]:
    """cand/base: [(run, point)] oldest first; changes: stored change points of the series.
    The plot of the downsampled series, and what was kept."""
    index = {r.id: i for i, (r, _) in enumerate(cand)}
    exact = {index[c[k]] for c in changes for k in ("first_run", "last_run_before") if c.get(k) in index}
    dec = downsample([p["value"] for _, p in cand], exact, budget, last)
    lows = [p["low"] if p["low"] is not None else p["value"] for _, p in cand]
    highs = [p["high"] if p["high"] is not None else p["value"] for _, p in cand]
    dots = []
    for i in dec.keep:
        run, p = cand[i]
        span = dec.covers[i]
        dots.append(Dot(i, p["value"], min(lows[j] for j in span), max(highs[j] for j in span),
                        run.report or "", f"{run.run_id} ({run.started_at[:10]}): {p['value']:,.6g} {p['unit']}"))
    kept = set(dec.keep)
    base_line = [(index[r.id], p["value"]) for r, p in base if r.id in index and index[r.id] in kept]
    marks = []
    for c in changes:
        if c["first_run"] in index:
            label = f"{c['direction']} {100 * (c['shift'] or 0):+.1f}%" + (f" ({c['mark']})" if c.get("mark") else "")
            marks.append((index[c["first_run"]], label, c["direction"]))
    step = max(1, len(cand) // TICKS)
    ticks = [(i, cand[i][0].started_at[:10]) for i in range(0, len(cand), step)]
    return TrendPlot(name, cand[0][1]["unit"] if cand else "", len(cand), dots, base_line, marks, ticks), dec


def series_svg(name: str, cand: list, base: list, changes: list[dict]) -> str:
    return svg(plot_of(name, cand, base, changes)[0])


def caption(dec: Decimated, last: int = LAST) -> str:
    if dec.whole:
        return f"{dec.n:,} runs, all plotted."
    buckets = dec.buckets
    per = (dec.n - len(dec.exact)) / buckets if buckets else 0
    return (f"{dec.n:,} runs, {len(dec.keep):,} plotted: the last {min(last, dec.n)} runs and the runs "
            f"at each change point exactly ({len(dec.exact):,}), the other runs as the lowest and highest "
            f"of {buckets:,} buckets of about {per:.0f} runs (the band covers every run's spread).")


def _slug(job: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", job) or "job"


def job_page(store: HistoryStore, env: jinja2.Environment, out_dir: Path, job: str,
             max_series: int = 40, budget: int = BUDGET, last: int = LAST) -> dict:
    """Write the job's page and the full data of its plots beside it; its line in the index."""
    runs = store.runs(job)
    # only the plots' fields: the reps' values are the bulk of a long history's rows
    both = store.series_by_variant(job, ("cand", "base"), reps=False)
    cand, base = both["cand"], both["base"]
    cps = store.stored_change_points(job)
    names = [n for n in sorted(cand) if n.startswith(HEADLINE)][:max_series]
    slug = _slug(job)
    data = out_dir / f"{slug}.json"
    with data.open("w") as fh:
        write_json(fh, job, both, names)
    plots = []
    for n in names:
        plot, dec = plot_of(n, cand[n], base.get(n, []), [c for c in cps if c["series"] == n], budget, last)
        plots.append({"name": n, "svg": svg(plot), "caption": caption(dec, last)})
    page = out_dir / f"{slug}.html"
    page.write_text(env.get_template("trends.html.j2").render(
        job=job, plots=plots, runs=runs, changes=cps, data=data.name,
        run_by_id={r.id: r for r in runs}))
    return {"job": job, "href": page.name, "runs": len(runs),
            "changes": sum(1 for c in cps if c["direction"] == "regression"),
            "last": runs[-1].started_at if runs else ""}


def write_trend_pages(store: HistoryStore, out_dir: Path, jobs: list[str] | None = None,
                      max_series: int = 40, budget: int = BUDGET, last: int = LAST) -> Path:
    """index.html plus one page (and one JSON file of its full data) per job; the index's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    pages = [job_page(store, env, out_dir, job, max_series, budget, last) for job in jobs or store.jobs()]
    index = out_dir / "index.html"
    index.write_text(env.get_template("trends_index.html.j2").render(pages=pages))
    return index
