"""Plots for report.html, as inline SVG strings (matplotlib, no files, no scripts).

Text stays text in the SVG (svg.fonttype "none"), escaped by matplotlib's SVG writer, so
names from the run cannot inject markup. Hash salt and metadata are fixed so the same
results give the same SVG.
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from analysis.compare.results import MetricRow  # noqa: E402
from analysis.tma.funnel_doc import FunnelRowDoc

BASE_COLOR, CAND_COLOR = "#4c72b0", "#dd8452"
# One look for every plot stallscope draws (the run report's and the sweep's): text kept as
# text, stable ids so a re-render diffs clean.
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "stallscope", "font.size": 9,
        "axes.spines.top": False, "axes.spines.right": False}


def literal(text: object) -> str:
    """Literal text for matplotlib: a '$' in a symbol name would start mathtext."""
    return str(text).replace("$", r"\$")


def svg_element(fig) -> str:
    """The figure as an inline <svg> element (closed after)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    # Inline in HTML: drop the XML prolog and DOCTYPE, keep the <svg> element.
    return text[text.index("<svg"):]


def throughput_dots(row: MetricRow, base: str, cand: str) -> str:
    """Every rep of each variant as a dot, the median as a bar; ops/s on the y axis."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.2, 3.0))
        for x, (label, side, color) in enumerate(((base, row.base, BASE_COLOR),
                                                  (cand, row.cand, CAND_COLOR))):
            n = len(side.values)
            xs = [x + (i - (n - 1) / 2) * 0.06 for i in range(n)]
            ax.scatter(xs, side.values, s=28, color=color, zorder=3, label=literal(f"{label} reps"))
            ax.hlines(side.median, x - 0.25, x + 0.25, color="black", linewidth=2, zorder=4)
            ax.annotate(f"median {side.median:,.0f}", (x + 0.27, side.median), va="center",
                        fontsize=8)
        ax.set_xticks([0, 1], [literal(base), literal(cand)])
        ax.set_xlim(-0.6, 1.9)
        ax.set_ylim(0, max(row.base.max, row.cand.max) * 1.15)
        ax.set_ylabel(f"{row.metric} ({row.unit})")
        ax.set_title(f"{row.metric} per rep (dots) and median (bar)")
        ax.grid(axis="y", alpha=0.3)
        return svg_element(fig)


def share_dots(name: str, thread: str, base_vals: list[float], cand_vals: list[float],
               base: str, cand: str) -> str:
    """A focus function's flat share per rep, % of samples."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.2, 3.0))
        for x, vals, color in ((0, base_vals, BASE_COLOR), (1, cand_vals, CAND_COLOR)):
            ax.scatter([x] * len(vals), vals, s=28, color=color, zorder=3)
            if vals:
                med = sorted(vals)[len(vals) // 2] if len(vals) % 2 else \
                    sum(sorted(vals)[len(vals) // 2 - 1: len(vals) // 2 + 1]) / 2
                ax.hlines(med, x - 0.25, x + 0.25, color="black", linewidth=2, zorder=4)
        ax.set_xticks([0, 1], [literal(base), literal(cand)])
        ax.set_xlim(-0.6, 1.6)
        ax.set_ylim(0, max(base_vals + cand_vals + [1.0]) * 1.15)
        ax.set_ylabel(f"flat share (% of {thread} samples)")
        ax.set_title(literal(name))
        ax.grid(axis="y", alpha=0.3)
        return svg_element(fig)


def funnel_bars(rows: list[FunnelRowDoc], base: str, cand: str) -> str:
    """TMA funnel rows (results' tma.funnel.rows) as paired horizontal bars, % of the
    node's domain (slots, stalls or clocks: labelled per row)."""
    with plt.rc_context(STYLE):
        rows = [r for r in rows if r.base.median is not None and r.cand.median is not None]
        h = 0.6 + 0.35 * len(rows)
        fig, ax = plt.subplots(figsize=(6.0, max(h, 1.5)))
        labels = ["  " * (r.level - 1) + f"{r.leaf} ({r.unit or r.domain})" for r in rows]
        ys = list(range(len(rows)))[::-1]
        ax.barh([y + 0.18 for y in ys], [r.base.median for r in rows], height=0.36,
                color=BASE_COLOR, label=literal(base))
        ax.barh([y - 0.18 for y in ys], [r.cand.median for r in rows], height=0.36,
                color=CAND_COLOR, label=literal(cand))
        ax.set_yticks(ys, labels)
        ax.set_xlabel("% of the node's domain (median over runs)")
        ax.set_title("TMA funnel")
        ax.legend(loc="lower right")
        ax.grid(axis="x", alpha=0.3)
        return svg_element(fig)


def stall_bars(sec, base: str, cand: str) -> str:
    """Each stall row's out-of-cache cost (µs per operation) in both variants, with its
    interval as an error bar (results' stalls.rows)."""
    with plt.rc_context(STYLE):
        rows = sec.rows[:12]
        fig, ax = plt.subplots(figsize=(6.0, max(0.6 + 0.35 * len(rows), 1.5)))
        ys = list(range(len(rows)))[::-1]
        for off, side, color, label in ((0.18, "base", BASE_COLOR, base), (-0.18, "cand", CAND_COLOR, cand)):
            iv = [getattr(r, side).out_of_cache for r in rows]
            vals = [i.value / 1e3 for i in iv]
            err = [[max(i.value - (i.low if i.low is not None else i.value), 0) / 1e3 for i in iv],
                   [max((i.high if i.high is not None else i.value) - i.value, 0) / 1e3 for i in iv]]
            ax.barh([y + off for y in ys], vals, height=0.36, color=color, xerr=err,
                    label=literal(label), error_kw={"elinewidth": 1})
        ax.set_yticks(ys, [literal("all samples" if r.kind == "total" else f"{r.function} ({r.kind})")
                           for r in rows])
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlabel(f"out-of-cache CPU per {sec.command or 'op'} (µs): run − in-cache control")
        ax.set_title("Memory stall per function")
        ax.legend(loc="lower right")
        ax.grid(axis="x", alpha=0.3)
        return svg_element(fig)
