"""report.md: the comparison as a GitHub-flavoured Markdown PR comment.

Summary first (every verdict in one glance), then the tables in the shapes of the seed PR
comments (Test | Baseline | PR | Change; Function | base (flat) | cand (flat) | Change; the
TMA funnel) with interval and verdict columns, details folded in <details>, then the
environment and the command that reproduces the run. GitHub rejects comments over 65,536
characters, so details are dropped (largest first) until the comment fits.

Everything from the run is escaped here (analysis/report/mdtext.py): results.json holds
plain data.
"""
from __future__ import annotations

from analysis.compare import perf_blocks
from analysis.compare.results import Results
from analysis.power import POWER
from analysis.inputs.layout import REPORT_LEAD_END
from analysis.report import funnel_md, lead, markdown_details as det, stall_tables
from analysis.report.fmt import (THREAD_LABEL, fmt_pct, fmt_signed, known, level, patches,
                                 truncated_text)
from analysis.report.markdown_tables import (fdr_line, fn_table, function_level,
                                             notes_lines, per_op_table)
from analysis.report.mdtext import code_fence, code_span, esc, esc_spans, verdict
from analysis.report import tables
from analysis.report.table import markdown
from analysis.report.summary_text import lines as summary_lines

GITHUB_COMMENT_LIMIT = 65536


def _lead(r: Results) -> list[str]:
    """What the report leads with and a PR comment posts (analysis/report/lead.py), then the
    line after which the comment stops (REPORT_LEAD_END)."""
    label = f" ({esc(r.case.label)})" if r.case.label else ""
    out = [f"## stallscope: {esc(r.case.name)}{label}: {esc(r.cand)} vs {esc(r.base)}", ""]
    h = lead.headline(r)
    if h is not None:
        note = f" ({esc_spans(h.note)})" if h.note else ""
        out += [f"**{esc(h.text)}** ({esc(h.detail)}): {verdict(h.kind, h.verdict)}{note}. "
                f"{esc(lead.counts(r))}", ""]
    tput, tma, stalls = lead.throughput(r), lead.tma(r), stall_tables.lead(r)
    out += markdown(tput) + [""] if tput is not None else []
    if tma is not None:
        out += markdown(tma) + [""]
    elif stalls is not None:    # no TMA: the stall table takes the funnel's place
        out += [esc(stall_tables.caption(r)), ""] + markdown(stalls) + [""]
    else:
        out += [esc(lead.tma_line(r)), ""]
    focus, left_out = lead.focus(r), lead.focus_left_out(r)
    out += (markdown(focus) + [""] if focus is not None else []) + ([esc(left_out), ""] if left_out else [])
    caption, split = lead.split_caption(r), lead.split(r)
    out += ([esc(caption), ""] if caption else []) + (markdown(split) + [""] if split is not None else [])
    return out + [REPORT_LEAD_END, ""]


def _head(r: Results) -> list[str]:
    out = [f"Run {code_span(r.run_id)} ({esc(r.case.size)} size, {esc(r.created)}). "
           f"{esc(r.case.description)}", ""]
    if r.case.overrides:
        out += ["Set for this run (over the case file): "
                + ", ".join(code_span(o) for o in r.case.overrides) + ".", ""]
    items = [f"{esc(x.label)} {esc(x.text)}" + (f" **{esc(x.verdict)}**" if x.verdict else "")
             for x in summary_lines(r)]
    out += ["**Summary:** " + " · ".join(items), ""]
    if r.measurement.aa:
        out += [f"> A/A run: {esc_spans(r.measurement.aa)}", ""]
    if r.measurement.layouts is not None:      # stallscope run --layouts N
        out += [f"> Code layouts: {esc_spans(r.measurement.layouts.line)}", ""]
    for n in r.notes:
        out += [f"> Note: {esc_spans(n)}", ""]
    return out


def _throughput(r: Results) -> list[str]:
    if not r.throughput and not r.paired:
        return []
    fam = next((f for f in r.fdr if f.family == "throughput and latency"), None)
    conf = fam.level if fam is not None else r.settings.confidence
    out = ["### Throughput", ""] + markdown(tables.metrics(r, conf))
    s = r.settings
    lines = (f"Line: {s.noise * 100:g}% either way (a decided change under it is \"below the "
             "line\")" if s.regression == s.noise else
             f"Lines: {s.noise * 100:g}% for an improvement, {s.regression * 100:g}% for a regression")
    out += ["", "Medians over reps; CV = spread (stdev/mean); the change is a ratio on the "
            f"log scale. {lines}, applied after the confidence interval "
            "(latency: lower is better). A verdict that saw no change says how large a change "
            f"the run could have seen ({level(r.settings.confidence)} confidence, "
            f"{POWER:.0%} power, from its own spread).", ""]
    out += fdr_line(fam) + _pairing(r)
    return out + _saturation(r)


def _pairing(r: Results) -> list[str]:
    """How throughput was measured, and what ended a --precision run."""
    out = []
    p = r.measurement
    if p.pairing:
        out.append(f"Measured: {esc_spans(p.pairing)}.")
    if p.precision:
        out.append(f"Precision: {esc_spans(p.precision)}.")
    return out + [""] if out else []


def _saturation(r: Results) -> list[str]:
    """Whether the server was the bottleneck while throughput was measured."""
    s = r.saturation
    if not s.available:
        return []
    cells = []
    for v, side in s.sides.items():
        main = "n/a" if side.main_busy is None else f"{side.main_busy:.0%}"
        poll = "" if side.main_polling is None else f" ({side.main_polling:.0%} polling)"
        if side.main_waiting:
            poll += f", waiting for a CPU {side.main_waiting:.0%}"
        io = "".join(f", {esc(t)} {b:.0%}" for t, b in side.other_threads.items())
        client = ("n/a" if side.client_busy is None
                  else f"{side.client_busy / (side.client_capacity or 1):.0%} of {side.client_capacity:g} CPU")
        cells.append(f"{esc(v)}: main thread {main}{poll}{io}; load generator {client}")
    answer = {"server": "Yes", "contended": "Yes, on a busy host"}.get(s.bottleneck, "No")
    out = [f"**Was the server the bottleneck?** {answer}: "
           f"{esc_spans(s.note)}. Busy during the window: " + "; ".join(cells) + "."]
    if s.suggestions:
        out.append("To measure the server: " + "; ".join(esc_spans(x) for x in s.suggestions) + ".")
    return out + [""]


def _profile_main(r: Results) -> list[str]:
    p = r.profile
    if not p.available:
        return ["### Profiles", "", f"No profile comparison: {esc_spans(p.reason)}.", ""]
    out = [f"### Focus functions ({THREAD_LABEL[p.thread]})", "", _profile_source(r), ""]
    if p.focus:
        conf = function_level(r)
        # CPU time per operation first: a share rises when another function gets cheaper,
        # a cost per operation does not
        if p.per_op:
            out += per_op_table(r)
        out += ["Share of samples, flat (self) cost:", ""] + fn_table(
            p.focus, "flat", r.base, r.cand, confidence=conf) + [""]
        out += ["Share of samples, cumulative cost (self + callees; shows cost that moved into "
                "an inlining caller):", ""] + fn_table(p.focus, "cum", r.base, r.cand,
                                                       confidence=conf) + [""]
        out += fdr_line(p.fdr)
        if p.truncated.exceeds:
            out += [f"> ⚠️ Truncated stacks: {esc_spans(p.truncated.note)}", ""]
        elif p.truncated.available:
            out += [esc(truncated_text(p.truncated)), ""]
        if p.truncated.skipped.exceeds:
            out += [f"> ⚠️ Skipped callers: {esc_spans(p.truncated.skipped.note)}", ""]
        out += notes_lines(p.focus, ("flat", "cum"))
        if not p.per_op:
            out += per_op_table(r)
        out += _profiler_cost(r)
    else:
        out += ["No focus functions (the case lists none; `--focus f1,f2` to pick some).", ""]
    if p.missing_focus:
        out += ["Not in any profile: " + ", ".join(esc(f) for f in p.missing_focus)
                + " (inlined, renamed, or never on CPU).", ""]
    return out


def _profile_source(r: Results) -> str:
    """Where the profiles come from: the paired reps' windows (compared as pairs) or
    separate profile reps; the rate and the samples a rep holds."""
    p, hz = r.profile, r.profiler_cost.frequency_hz
    n = len(next(iter(p.reps.values()), []))
    per_rep = "; ".join(f"{esc(v)} {int(sorted(c)[len(c) // 2]):,}" for v, c in p.sample_counts.items() if c)
    head = (f"Profiles: perf in the windows of the {n} paired reps (each variant's samples in "
            f"its own perf-on windows), compared as pairs, rep by rep" if p.paired else
            "Profile reps: " + ", ".join(f"{esc(v)} {len(x)}" for v, x in p.reps.items())
            + " (separate reps, a server start each)")
    rate = f", at {hz} Hz" if hz else ""
    return (f"{head}{rate}; samples per rep (median): {per_rep}. Shares are % of samples; view: "
            f"{esc_spans(p.thread_note)}" if per_rep else f"{head}{rate}. Shares are % of "
            f"samples; view: {esc_spans(p.thread_note)}")


def _profiler_cost(r: Results) -> list[str]:
    c = r.profiler_cost
    if not c.available:
        return [f"Profiler overhead: not measured ({esc_spans(c.reason)}).", ""] if c.reason else []
    parts = []
    for v, ch in [("both variants", c.pooled)] + list(c.per_variant.items()):
        if ch is None or ch.rel is None:
            continue
        parts.append(f"{esc(v)} {fmt_pct(-ch.rel)} [{fmt_signed(-ch.rel_ci_high * 100)}, "
                     f"{fmt_signed(-ch.rel_ci_low * 100)}]%")
    where = "paired reps" if r.profile.paired else "profile reps"
    return [f"Profiler overhead (perf cpu-clock at {c.frequency_hz} Hz): " + "; ".join(parts)
            + f". The share of throughput perf took (positive: a cost; negative: the windows "
            f"perf sampled ran faster, noise or the host): the windows perf sampled vs the "
            f"windows beside them without perf (same server, ABBA), {sum(c.pairs.values())} window pairs; the "
            f"{level(r.settings.confidence)} CI is over the "
            f"{where}, each rep's pairs one unit (docs/statistics.md)." + _on_off(r), ""]


def _on_off(r: Results) -> str:
    """Whether the perf-on and perf-off blocks tell one story (analysis/compare/perf_blocks.py)."""
    ch = r.profiler_cost.on_off
    if ch is None or ch.rel is None or ch.rel_ci_low is None:
        return ""
    iv = f"{fmt_pct(ch.rel)} [{fmt_signed(ch.rel_ci_low * 100)}, {fmt_signed(ch.rel_ci_high * 100)}]%"
    said = perf_blocks.judge(ch.rel_ci_low, ch.rel_ci_high)
    line = f"±{perf_blocks.TILT:.0%}"
    if said == "agree":
        return (f" The perf-on and perf-off blocks agree: the {esc(r.cand)}/{esc(r.base)} ratio moved "
                f"{iv} from the blocks without perf to the blocks with it, within {line}, so "
                f"perf's cost cancels in the ratio to within {line}.")
    if said == "cannot tell":
        return (f" Whether perf's cost cancels in the ratio, this run cannot tell: the "
                f"{esc(r.cand)}/{esc(r.base)} ratio moved {iv} from the blocks without perf to the "
                f"blocks with it, an interval that holds 0 but also tilts past {line}; more reps "
                "(or a lower `--frequency`) would tell.")
    return (f" **The perf-on and perf-off blocks disagree**: the {esc(r.cand)}/{esc(r.base)} ratio moved "
            f"{iv} from the blocks without perf to the blocks with it: perf costs the two sides "
            "differently here; rerun at a lower `--frequency` (or `--quick`) before trusting the "
            "function rows.")


def _tma(r: Results) -> list[str]:
    t = r.tma
    if t.status == "absent" or not t.funnel:
        return ["### TMA", "", f"TMA not collected: {esc_spans(t.reason)}.", ""]
    head = ["### TMA funnel", ""]
    if t.status == "replay":
        head += [f"> **Replay:** these TMA numbers are recorded fixture files placed in the run, "
                 f"not measured in this run. {esc_spans(t.reason)}", ""]
    return head + [funnel_md.render(t.funnel), ""]


def _stalls(r: Results) -> list[str]:
    """Memory stalls from the in-cache control: every row, and where the candidate still waits."""
    out = ["### Memory stalls (out-of-cache cost, from an in-cache control)", ""]
    if not r.stalls.available:     # runs made before the control say nothing of it
        return out + [esc(stall_tables.caption(r)), ""] if r.stalls.reason else []
    out += [esc(f"{stall_tables.caption(r)} {stall_tables.sizes(r)}".strip()), ""] + markdown(stall_tables.full(r)) + [""]
    left = stall_tables.left(r)
    if left is not None:
        out += markdown(left) + [""]
    return out + [esc(n) for n in stall_tables.limits(r)] + [""]


def _environment(r: Results) -> list[str]:
    e = r.environment
    h, t = e.host, e.tools
    l3 = h.l3_bytes
    lines = [
        f"- CPU: {esc(h.cpu_model)}, {esc(h.cores)} CPUs, "
        f"{esc(h.threads_per_core)} thread(s)/core, L3 {l3 / 2**20:g} MiB" if l3
        else f"- CPU: {esc(h.cpu_model)}",
        f"- Kernel {esc(h.kernel)}; governor {esc(known(h.governor))}; SMT {esc(h.smt)}; "
        f"THP {esc(h.thp)}; virtualization {esc(h.virtualization)}; "
        f"PMU {'yes' if h.pmu else 'no'}",
        f"- Mitigations: {esc(h.mitigations)}",
        f"- Compiler: {esc(h.compiler)}; tools: "
        + ", ".join(f"{esc(k)} {esc(known(v))}" for k, v in t.items()),
    ]
    ws = r.case.working_set
    if ws is not None and r.case.keys:
        lines.insert(1, f"- Dataset: {esc(ws.describe(r.case.keys))} (size {esc(r.case.size)}: {esc(ws.why())})")
    for v, d in e.variants.items():
        cfg = " ".join(f"{k}={val}" for k, val in d.config.items()) or "none"
        lines.append(f"- {esc(v)}: {esc(d.source)}; version {esc(d.version)}, "
                     f"commit {esc(d.commit)}; sha256 {esc(d.binary_sha256[:16])}…; config {esc(cfg)}; "
                     f"patches {esc(patches(d.patches))}; flags {esc(' '.join(d.make_flags))}")
    pl, pr, lg = e.placement, e.profiling, e.load_generator
    if pl is not None:
        lines.append(f"- Placement: server CPUs {esc(pl.server_cpus)}, client CPUs "
                     f"{esc(pl.client_cpus)}. {esc(pl.note or '')}")
    if lg.used:
        # A memtier suite measured with redis-benchmark (or memtier on part of the keys) must
        # say so next to the numbers, not only in manifest.json.
        why = (f" (memtier requested; {esc(lg.reason)})"
               if lg.requested == "memtier" and lg.used != "memtier" else "")
        note = f" {esc(lg.note)}" if lg.note else ""
        lines.append(f"- Load generator: {esc(lg.used)}{why}.{note}")
    if pr is not None:
        lines.append(f"- Profiler: {esc(pr.profiler)}, mode {esc(pr.mode)}, "
                     f"{esc(pr.frequency_hz)} Hz. {esc(pr.note or '')}")
    return ["### Environment", "", *lines, ""]


def _reproduce(r: Results) -> list[str]:
    out = ["### Reproduce", ""]
    if r.reproduce.run:
        out += ["Run (collect):", "", *code_fence(r.reproduce.run, "sh"), ""]
    out += ["Report (from the run directory alone):", "", *code_fence(r.reproduce.report, "sh"), ""]
    a = r.artifacts
    files = ([a.diff_flamegraph] if a.diff_flamegraph else []) \
        + list(a.flamegraphs.values()) + list(a.pprof.values())
    if files:
        out += ["Beside this report: report.html (tables, plots, flame graphs), results.json, "
                + ", ".join(code_span(f) for f in files)
                + " (pprof: `pprof -top FILE`; Parca opens them too).", ""]
    for err in a.errors:
        out += [f"Note: {esc_spans(err)}", ""]
    return out


def render(r: Results, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The report as Markdown, never longer than `limit` characters."""
    main = _lead(r) + _head(r) + _throughput(r) + _profile_main(r) + _stalls(r) + _tma(r)
    tail = _environment(r) + _reproduce(r)
    # Details in the order they are given up when the comment is too long (last first).
    n_movers = n_all = len(r.profile.movers)
    details = [("per-rep values", det.per_rep(r)), ("verdict reasons", det.methods(r)),
               ("per-thread view", det.threads(r)), ("callers", det.callers(r))]

    def assemble(movers: int, dropped: list[str]) -> str:
        parts = list(main) + det.movers(r, movers)
        for name, block in details:
            if name not in dropped:
                parts += block
        cut = list(dropped)
        if 0 < movers < n_all:
            cut.insert(0, f"top movers beyond {movers} of {n_all}")
        if cut:
            parts += [f"> Shortened to fit a GitHub comment ({limit:,} characters): left out "
                      + ", ".join(cut) + "; report.html and results.json have everything.", ""]
        return "\n".join(parts + tail)

    dropped: list[str] = []
    text = assemble(n_movers, dropped)
    while len(text) > limit and n_movers > 5:
        n_movers //= 2
        text = assemble(n_movers, dropped)
    for name, _ in reversed(details):
        if len(text) <= limit:
            break
        dropped.append(name)
        text = assemble(n_movers, dropped)
    if len(text) > limit and n_movers:
        n_movers = 0
        dropped.append("top movers")
        text = assemble(0, dropped)
    if len(text) > limit:
        note = "\n\n> Truncated to fit a GitHub comment; see report.html / results.json.\n"
        text = text[: limit - len(note)] + note
    return text
