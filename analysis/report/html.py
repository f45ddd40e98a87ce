"""report.html: one self-contained file (inline CSS, inline SVG plots, flame graphs as
data: URIs) with the same tables as report.md, plus plots and flame graphs.

No external URL and no script of our own. inferno's flame graphs carry JavaScript; as
<img src="data:image/svg+xml;base64,..."> the browser renders them without running it
(the interactive SVG files sit beside the report and are linked). Everything from the run
(symbol names, test names, paths) goes through Jinja2 autoescaping; only SVG we made
ourselves (matplotlib, which escapes its text) is marked safe.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from analysis.compare.results import Results
from analysis.power import POWER
from analysis.report import lead, plots, stall_tables, tables
from analysis.report.funnel_rules import explain
from analysis.report.fmt import (THREAD_LABEL, change_cells, fmt_ns, fmt_pct, fmt_signed,
                                 fn_verdict, known, level, patches, pp_ci, quiet_verdict,
                                 row_name, samples, share, short_test, truncated_text, value,
                                 verdict_notes)
from analysis.report.markdown_tables import fdr_sentence, function_level, movers_level, per_op_note
from analysis.report.summary_text import lines as summary_lines

TEMPLATES = Path(__file__).with_name("templates")


def code_spans(text: str) -> Markup:
    """Reasons from collectors are written for Markdown (`perf stat -e cycles`): escape the
    text first, then turn the backtick spans into <code>, so nothing from the run can
    inject markup."""
    escaped = str(Markup.escape(text))
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped))


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)),
                      autoescape=select_autoescape(["html", "j2"], default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(share=share, value=value, pct=fmt_pct, signed=fmt_signed,
                       short=short_test, row_name=row_name, code=code_spans, ns=fmt_ns, known=known,
                       patches=patches, samples=samples)
    env.globals.update(change_cells=change_cells, pp_ci=pp_ci, thread_label=THREAD_LABEL,
                       per_op_note=per_op_note, fn_verdict=fn_verdict, verdict_notes=verdict_notes,
                       fdr_sentence=fdr_sentence,
                       truncated_text=truncated_text, level=level, quiet=quiet_verdict,
                       tables=tables, power=POWER)
    return env


def _data_uri(path: Path) -> str | None:
    if not path.is_file():
        return None
    return "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _lead(r: Results) -> dict:
    """What the page leads with, the same views as report.md's lead (analysis/report/lead.py)."""
    return {"headline": lead.headline(r), "counts": lead.counts(r), "throughput": lead.throughput(r),
            "tma": lead.tma(r), "tma_line": lead.tma_line(r), "focus": lead.focus(r),
            "left_out": lead.focus_left_out(r), "split_caption": lead.split_caption(r), "split": lead.split(r),
            "stalls": stall_tables.lead(r), "stall_caption": stall_tables.caption(r)}


def _stalls(r: Results) -> dict:
    """The memory-stall section: the same tables as report.md's, and a plot of each row's
    out-of-cache cost in both variants."""
    full = stall_tables.full(r)
    plot = Markup(plots.stall_bars(r.stalls, r.base, r.cand)) if full is not None else None
    return {"full": full, "left": stall_tables.left(r),
            "caption": f"{stall_tables.caption(r)} {stall_tables.sizes(r)}".strip(),
            "limits": stall_tables.limits(r) if full is not None else [], "plot": plot}


def render(r: Results, out_dir: Path) -> str:
    """The HTML report; flame graph SVGs are read from out_dir (written by compare)."""
    out_dir = Path(out_dir)
    tput_plots = [Markup(plots.throughput_dots(row, r.base, r.cand)) for row in r.throughput]
    share_plots = [Markup(plots.share_dots(f.name, THREAD_LABEL[f.thread], f.base_flat.values,
                                           f.cand_flat.values, r.base, r.cand))
                   for f in r.profile.focus]
    funnel_plot = None
    if r.tma.funnel and r.tma.funnel.rows:
        funnel_plot = Markup(plots.funnel_bars(r.tma.funnel.rows, r.base, r.cand))
    flames = []
    if r.artifacts.diff_flamegraph:
        flames.append({"title": f"Differential flame graph: {r.cand} vs {r.base} (normalised; "
                                "red grew, blue shrank)", "file": r.artifacts.diff_flamegraph})
    for v, f in r.artifacts.flamegraphs.items():
        flames.append({"title": f"{v}: all threads, profile reps merged", "file": f})
    for fl in flames:
        fl["uri"] = _data_uri(out_dir / fl["file"])
    flames = [f for f in flames if f["uri"]]
    metric_fdr = next((f for f in r.fdr if f.family == "throughput and latency"), None)
    return _env().get_template("report.html.j2").render(
        r=r, summary=summary_lines(r), lead=_lead(r), stalls=_stalls(r), tput_plots=tput_plots, share_plots=share_plots,
        funnel_plot=funnel_plot, flames=flames, metric_fdr=metric_fdr,
        metric_level=metric_fdr.level if metric_fdr else r.settings.confidence,
        fn_level=function_level(r), movers_level=movers_level(r),
        tma_moved=explain(r.tma.funnel.rows) if r.tma.funnel else [])
