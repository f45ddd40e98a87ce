"""One trend plot as inline SVG markup, written directly rather than through matplotlib.

Why not matplotlib, as report.html's plots: a trend page has up to forty plots, and a
matplotlib figure costs 60-150 ms to lay out and save on the project's VM whatever its
points (ticks, text layout, the SVG writer's styles), so a job's page took seconds before
drawing a single point. A trend plot is a band, two lines, dots and a few labels: written
directly it costs about a millisecond. matplotlib's tick locator still picks the y ticks.
Text is escaped (markupsafe), so names from the run cannot inject markup; no scripts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from markupsafe import escape
from matplotlib.ticker import MaxNLocator

BASE_COLOR, CAND_COLOR = "#4c72b0", "#dd8452"
REGRESSION, IMPROVEMENT = "#c62828", "#2e7d32"
W, H = 750, 260
LEFT, RIGHT, TOP, BOTTOM = 66, W - 14, 30, H - 58


@dataclass
class Dot:
    x: int                       # position in the series (run index)
    y: float                     # the candidate's median
    low: float                   # band: the spread of the reps of the runs it stands for
    high: float
    href: str = ""               # the run's report
    tip: str = ""


@dataclass
class TrendPlot:
    name: str
    unit: str
    n: int                                   # runs in the series: x runs from 0 to n - 1
    dots: list[Dot]
    base: list[tuple[int, float]] = field(default_factory=list)     # (x, baseline median)
    changes: list[tuple[int, str, str]] = field(default_factory=list)   # (x of first run after, label, direction)
    ticks: list[tuple[int, str]] = field(default_factory=list)      # (x, date)


def _num(v: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if step > 0 and round(step / 10 ** -decimals, 6) % 1:       # 2.5 steps need one more
        decimals += 1
    return f"{v:,.{decimals}f}"


def _y_range(plot: TrendPlot) -> tuple[list[float], float, float]:
    vals = [d.low for d in plot.dots] + [d.high for d in plot.dots] + [y for _, y in plot.base]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    if hi - lo < 1e-12 * max(1.0, abs(hi)):
        lo, hi = lo - max(abs(lo) * 0.05, 1.0), hi + max(abs(hi) * 0.05, 1.0)
    ticks = [float(t) for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)]
    return ticks, min(ticks[0], lo), max(ticks[-1], hi)


def svg(plot: TrendPlot) -> str:
    ticks, ylo, yhi = _y_range(plot)
    span = max(plot.n, 1)

    def px(x: float) -> float:
        return LEFT + (x + 0.5) / span * (RIGHT - LEFT)

    def py(y: float) -> float:
        return BOTTOM - (y - ylo) / (yhi - ylo) * (BOTTOM - TOP)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="10" role="img" aria-label="{escape(plot.name)}">',
           f'<text x="{LEFT}" y="14" font-size="12">{escape(plot.name)}</text>',
           f'<text transform="translate(12 {(TOP + BOTTOM) / 2:.1f}) rotate(-90)" text-anchor="middle">'
           f'{escape(plot.unit)}</text>']
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.0
    for t in ticks:
        if ylo <= t <= yhi:
            out.append(f'<line x1="{LEFT}" x2="{RIGHT}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#e6e6e6"/>'
                       f'<text x="{LEFT - 4}" y="{py(t) + 3:.1f}" text-anchor="end">{_num(t, step)}</text>')
    out.append(f'<polyline points="{LEFT},{TOP} {LEFT},{BOTTOM} {RIGHT},{BOTTOM}" fill="none" stroke="#444"/>')
    for x, label in plot.ticks:
        out.append(f'<text transform="translate({px(x):.1f} {BOTTOM + 12}) rotate(-30)" '
                   f'text-anchor="end">{escape(label)}</text>')
    d = plot.dots
    if d:
        band = [f"{px(p.x):.1f},{py(p.high):.1f}" for p in d] + [f"{px(p.x):.1f},{py(p.low):.1f}" for p in reversed(d)]
        out.append(f'<polygon points="{" ".join(band)}" fill="{CAND_COLOR}" fill-opacity="0.25"/>')
        line = " ".join(f"{px(p.x):.1f},{py(p.y):.1f}" for p in d)
        out.append(f'<polyline points="{line}" fill="none" stroke="{CAND_COLOR}" stroke-width="1.2"/>')
    if plot.base:
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in plot.base)
        out.append(f'<polyline points="{line}" fill="none" stroke="{BASE_COLOR}" stroke-dasharray="5 3"/>')
    for x, label, direction in plot.changes:
        color = REGRESSION if direction == "regression" else IMPROVEMENT
        cx = px(x - 0.5)
        out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{TOP}" y2="{BOTTOM}" stroke="{color}" '
                   f'stroke-width="1.5" stroke-dasharray="2 3"/><text x="{cx + 3:.1f}" y="{TOP + 9}" '
                   f'fill="{color}">{escape(label)}</text>')
    for p in d:
        dot = (f'<circle cx="{px(p.x):.1f}" cy="{py(p.y):.1f}" r="2.6" fill="{CAND_COLOR}">'
               f'<title>{escape(p.tip)}</title></circle>')
        out.append(f'<a href="{escape(p.href)}">{dot}</a>' if p.href else dot)
    out.append(_legend())
    out.append("</svg>")
    return "".join(out)


def _legend() -> str:
    y = H - 8
    return (f'<g font-size="9"><rect x="{LEFT}" y="{y - 7}" width="14" height="8" fill="{CAND_COLOR}" '
            f'fill-opacity="0.25"/><text x="{LEFT + 18}" y="{y}">candidate: spread of reps</text>'
            f'<circle cx="{LEFT + 150}" cy="{y - 3}" r="2.6" fill="{CAND_COLOR}"/>'
            f'<text x="{LEFT + 156}" y="{y}">candidate (median)</text>'
            f'<line x1="{LEFT + 262}" x2="{LEFT + 282}" y1="{y - 3}" y2="{y - 3}" stroke="{BASE_COLOR}" '
            f'stroke-dasharray="5 3"/><text x="{LEFT + 286}" y="{y}">baseline (median)</text></g>')
