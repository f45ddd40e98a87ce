"""The crossover plot: the change (%) of the headline metric with its confidence band against
the swept axis, one line per series, the noise waterline shaded, and on a keyspace axis the
host's L3 size marked (as the key count whose dataset fills it), so the plot shows where the
change turns from noise into a gain or a loss.

matplotlib SVG with text kept as escaped text, fixed hash salt and no dates, like the
compare report's plots (analysis/report/plots.py).
"""
from __future__ import annotations

import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from analysis.report.plots import STYLE, literal, svg_element  # noqa: E402
from analysis.sweep.crossover import Series, series  # noqa: E402
from analysis.sweep.results import SweepResults  # noqa: E402

VERDICT_COLOR = {"improvement": "#2e7d32", "regression": "#c62828", "no change": "#757575",
                 "minor improvement": "#66a36a", "minor regression": "#d4793a",
                 "unstable": "#ef6c00", "insufficient data": "#9e9e9e"}
SERIES_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c"]


def _count(n: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.3g}"


def _xs(res: SweepResults, s: Series) -> tuple[list[float], bool]:
    """x positions of a series' points, and whether they are numbers (else categories)."""
    x = res.x_axis
    if x is not None and all(p.x.get(x) is not None for p in res.points):
        return [float(p.x[x]) for p in s.points], True
    order = {v: i for i, v in enumerate(res.axis(x).values)} if x else {}
    return [float(order.get(p.labels.get(x, ""), i) if x else i) for i, p in enumerate(s.points)], False


def _l3_keys(res: SweepResults, s: Series) -> float | None:
    """Key count whose dataset would fill L3, from the series' bytes per key."""
    per_key = [p.dataset_bytes / p.keys for p in s.points if p.keys and p.dataset_bytes]
    if not res.l3_bytes or not per_key:
        return None
    return res.l3_bytes / statistics.median(per_key)


def _draw_series(ax, res: SweepResults, s: Series, color: str) -> list[float]:
    xs, numeric = _xs(res, s)
    pts = [(x, p) for x, p in zip(xs, s.points) if p.metric is not None and p.metric.change.rel is not None]
    if not pts:
        return []
    px = [x for x, _ in pts]
    mid = [p.metric.change.rel * 100 for _, p in pts]
    lo = [(p.metric.change.rel_ci_low if p.metric.change.rel_ci_low is not None else p.metric.change.rel) * 100
          for _, p in pts]
    hi = [(p.metric.change.rel_ci_high if p.metric.change.rel_ci_high is not None else p.metric.change.rel) * 100
          for _, p in pts]
    ax.fill_between(px, lo, hi, color=color, alpha=0.18, linewidth=0)
    ax.plot(px, mid, color=color, linewidth=1.6, label=literal(s.name or "change"))
    for (x, p), y in zip(pts, mid):
        ax.scatter([x], [y], s=36, zorder=4, color=VERDICT_COLOR.get(p.metric.change.verdict, color),
                   edgecolors="white", linewidths=0.8)
    return lo + hi


def crossover_svg(res: SweepResults) -> str:
    """The plot as an inline <svg> element."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
        groups = series(res)
        ys: list[float] = []
        for i, s in enumerate(groups):
            ys += _draw_series(ax, res, s, SERIES_COLORS[i % len(SERIES_COLORS)])
        _frame(ax, res, groups, ys)
        return svg_element(fig)


def _frame(ax, res: SweepResults, groups: list[Series], ys: list[float]) -> None:
    x = res.x_axis
    all_x, numeric = [], False
    for s in groups:
        xs, numeric = _xs(res, s)
        all_x += xs
    noise = res.noise * 100
    ax.axhspan(-noise, noise, color="#bdbdbd", alpha=0.25, linewidth=0,
               label=f"noise waterline ±{noise:g}%")
    ax.axhline(0, color="black", linewidth=0.8)
    keyspace = bool(x) and res.axis(x).keyspace
    log = numeric and all_x and min(all_x) > 0 and (keyspace or max(all_x) / min(all_x) >= 10)
    if log:
        ax.set_xscale("log")
    if numeric and keyspace:
        _mark_l3(ax, res, groups, all_x)
    if not numeric and x:
        vals = res.axis(x).values
        ax.set_xticks(range(len(vals)), [literal(v) for v in vals])
    elif numeric and x:
        ticks = sorted(set(all_x))
        labels = {p.x[x]: p.labels[x] for p in res.points if p.x.get(x) is not None}
        ax.set_xticks(ticks, [literal(labels.get(t, _count(t))) for t in ticks])
        ax.minorticks_off()
    if not ys:
        ax.text(0.5, 0.5, "no point with a change yet", transform=ax.transAxes, ha="center")
    metric = next((p.metric for p in res.points if p.metric is not None), None)
    what = f"{metric.metric}" if metric else "the metric"
    better = "lower is better" if metric is not None and not metric.higher_is_better else "higher is better"
    ax.set_xlabel(literal(f"{x}" + (" (log scale)" if log else "")) if x else "point")
    ax.set_ylabel(literal(f"change of {what} (%), {res.confidence * 100:g}% interval"))
    ax.set_title(literal(f"{res.cand} vs {res.base}: change of {what} ({better})"))
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=7, frameon=False)


def _mark_l3(ax, res: SweepResults, groups: list[Series], all_x: list[float]) -> None:
    """A dashed line per distinct L3 key count; the x range grows to show it."""
    seen: dict[str, float] = {}
    for i, s in enumerate(groups):
        k = _l3_keys(res, s)
        if k is None or _count(k) in seen:
            continue
        seen[_count(k)] = k
        label = f"L3 {res.l3_bytes / 2**20:.0f} MiB ≈ {_count(k)} keys" + (f" ({s.name})" if s.name else "")
        ax.axvline(k, color=SERIES_COLORS[i % len(SERIES_COLORS)], linestyle="--", linewidth=1.2,
                   label=literal(label))
    if seen and all_x:
        xs = all_x + list(seen.values())
        ax.set_xlim(min(xs) / 1.5, max(xs) * 1.5)


def mountain_svg(res: SweepResults) -> str | None:
    """The memory mountain: each focus function's out-of-cache CPU per operation (µs) against
    the keys, base solid and candidate dashed, with their 95% intervals as bars."""
    m = res.mountain
    if not m.available or not m.rows:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
        for i, row in enumerate(m.rows[:len(SERIES_COLORS)]):
            color = SERIES_COLORS[i]
            for side, style in (("base", "-"), ("cand", "--")):
                cells = [(c.keys, getattr(c, side)) for c in row.cells if getattr(c, side) is not None]
                if not cells:
                    continue
                xs = [k for k, _ in cells]
                ys = [iv.value / 1e3 for _, iv in cells]
                err = [[max(iv.value - (iv.low if iv.low is not None else iv.value), 0) / 1e3 for _, iv in cells],
                       [max((iv.high if iv.high is not None else iv.value) - iv.value, 0) / 1e3 for _, iv in cells]]
                ax.errorbar(xs, ys, yerr=err, color=color, linestyle=style, marker="o", markersize=3,
                            label=literal(f"{row.function}{' ' + row.group if row.group else ''} "
                                          f"({res.base if side == 'base' else res.cand})"))
        ax.set_xscale("log")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xlabel(f"keys (in-cache reference: {_count(m.reference_keys)} keys)")
        ax.set_ylabel(f"out-of-cache CPU per {m.command or 'op'} (µs)")
        ax.set_title("Memory mountain")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
        return svg_element(fig)
