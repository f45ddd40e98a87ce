"""report.md: the comparison as a GitHub-flavoured Markdown PR comment.

Summary first (every verdict in one glance), then the tables in the shapes of the seed PR
comments (Test | Baseline | PR | Change; Function | base (flat) | cand (flat) | Change; the
TMA funnel) with interval and verdict columns, details folded in <details>, then the
environment and the command that reproduces the run. GitHub rejects comments over 65,536
characters, so details are dropped (largest first) until the comment fits.
"""
from __future__ import annotations

import re

from analysis.compare.engine import (THREAD_LABEL, fmt_ns, fmt_pct, fmt_signed, pp_ci, rel_ci,
                                     short_test)
from analysis.compare.results import FunctionRow, MetricRow, Results, Side

GITHUB_COMMENT_LIMIT = 65536

VERDICT_MARK = {"improvement": "✅ improvement", "regression": "❌ regression",
                "no change": "➖ no change", "unstable": "⚠️ unstable",
                "insufficient data": "❔ insufficient data"}

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#])")


def esc(text: object) -> str:
    """Text from files (symbol names, test names) as inert Markdown: no HTML, no table
    breaks, no emphasis. GitHub would sanitise a <script>, but it would still eat it."""
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s).replace("\n", " ")


def verdict(v: str) -> str:
    return VERDICT_MARK.get(v, v or "")


def share(x: float) -> str:
    return f"{x:.2f}%" if abs(x) < 1 else f"{x:.1f}%"


def value(x: float, unit: str) -> str:
    if unit == "ops/s":
        return f"{x:,.0f} ops/s"
    if unit == "ms":
        return f"{x:.3f} ms"
    return f"{x:.4g} {unit}"


def _side_cell(s: Side, unit: str) -> str:
    return f"{value(s.median, unit)} (CV {s.cv * 100:.1f}%, n={s.n})" if s.cv is not None \
        else f"{value(s.median, unit)} (n={s.n})"


def _metric_rows(rows: list[MetricRow], with_metric: bool) -> list[str]:
    out = []
    for r in rows:
        c = r.change
        name = esc(short_test(r.test)) + (f" · {r.metric}" if with_metric else "")
        out.append(f"| {name} | {_side_cell(r.base, r.unit)} | {_side_cell(r.cand, r.unit)} | "
                   f"{fmt_pct(c.rel)} | {rel_ci(c)}% | {verdict(c.verdict)} |")
    return out


def _fn_table(rows: list[FunctionRow], kind: str, base: str, cand: str,
              per_op: str = "") -> list[str]:
    """Share table; with `per_op` (the command, e.g. "MSET") a column with the flat CPU
    time per operation and its change (used by the top movers)."""
    extra = f" {kind} per {esc(per_op)} |" if per_op else ""
    out = [f"| Function | {esc(base)} ({kind}) | {esc(cand)} ({kind}) | Change | 95% CI | Verdict |"
           + extra, "|---|---|---|---|---|---|" + ("---|" if per_op else "")]
    for r in rows:
        b, c, ch = ((r.base_flat, r.cand_flat, r.flat_change) if kind == "flat"
                    else (r.base_cum, r.cand_cum, r.cum_change))
        rel = f" ({fmt_pct(ch.rel, 0)})" if ch.rel is not None else ""
        cell = ""
        if per_op:
            bn, cn, nch = ((r.base_flat_ns, r.cand_flat_ns, r.flat_ns_change) if kind == "flat"
                           else (r.base_cum_ns, r.cand_cum_ns, r.cum_ns_change))
            cell = (f" {fmt_ns(bn.median)} → {fmt_ns(cn.median)} ({fmt_pct(nch.rel, 0)}) |"
                    if bn is not None and cn is not None and nch is not None else " n/a |")
        out.append(f"| {esc(r.name)} | {share(b.median)} | {share(c.median)} | "
                   f"{fmt_signed(ch.delta, 2)} pp{rel} | {pp_ci(ch, 2)} pp | {verdict(ch.verdict)} |"
                   + cell)
    return out


def per_op_note(p) -> str:
    """The sentence under the per-operation table: what an operation is and how the
    operations of a profile window were counted."""
    return (f"CPU time per operation = the function's CPU time in the profile (perf "
            f"cpu-clock sample periods, ns) / the {p.per_op_command} commands the load "
            f"generator completed while perf was attached ({p.per_op_basis}); one operation "
            f"is one {p.per_op_command} command, whatever its key count. Medians over profile "
            f"reps; change, 95% CI and verdict relative (waterlines as throughput), lower is "
            f"better. Unlike shares, these do not rise when another function gets cheaper.")


def _per_op_table(r: Results) -> list[str]:
    p = r.profile
    if not p.per_op:
        return ([f"No CPU time per operation: {esc(p.per_op_reason)}.", ""]
                if p.per_op_reason else [])
    rows = []
    t = p.per_op_total
    if t is not None:
        rows.append((f"all samples ({THREAD_LABEL[p.thread]})", t.base, t.cand, t.change))
    for f in p.focus:
        rows.append((f"{esc(f.name)} (flat)", f.base_flat_ns, f.cand_flat_ns, f.flat_ns_change))
    for f in p.focus:
        rows.append((f"{esc(f.name)} (cum)", f.base_cum_ns, f.cand_cum_ns, f.cum_ns_change))
    out = [f"CPU time per {esc(p.per_op_command)} ({THREAD_LABEL[p.thread]}):", "",
           f"| Function | {esc(r.base)} | {esc(r.cand)} | Change | 95% CI | Verdict |",
           "|---|---|---|---|---|---|"]
    for name, b, c, ch in rows:
        if b is None or c is None or ch is None:
            continue
        out.append(f"| {name} | {fmt_ns(b.median)} | {fmt_ns(c.median)} | {fmt_pct(ch.rel, 0)} | "
                   f"{rel_ci(ch)}% | {verdict(ch.verdict)} |")
    return out + ["", esc(per_op_note(p)), ""]


def _details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def _summary(r: Results) -> list[str]:
    # text carries file-derived strings too (the TMA reason from the manifest)
    items = [f"{esc(i.label)} {esc(i.text)}" + (f" **{i.verdict}**" if i.verdict else "")
             for i in r.summary]
    return ["**Summary:** " + " · ".join(items), ""]


def _throughput(r: Results) -> list[str]:
    if not r.throughput and not r.paired:
        return []
    out = ["### Throughput", "",
           f"| Test | Baseline ({esc(r.base)}) | PR ({esc(r.cand)}) | Change | 95% CI | Verdict |",
           "|---|---|---|---|---|---|"]
    out += _metric_rows(r.throughput, False)
    out += _metric_rows(r.paired, True)
    out += _metric_rows(r.latency, True)
    out += ["", "Medians over reps; CV = spread (stdev/mean). "
            f"Waterlines: noise {r.settings['noise'] * 100:g}%, regression "
            f"{r.settings['regression'] * 100:g}%, decided after the confidence interval "
            "(latency: lower is better).", ""]
    return out


def _profile_main(r: Results) -> list[str]:
    p = r.profile
    if not p.available:
        return ["### Profiles", "", f"No profile comparison: {esc(p.reason)}.", ""]
    out = [f"### Focus functions ({THREAD_LABEL[p.thread]})", "",
           f"Shares are % of samples; view: {p.thread_note} Profile reps: "
           + ", ".join(f"{esc(v)} {len(n)}" for v, n in p.reps.items()) + ".", ""]
    if p.focus:
        out += ["Flat (self) cost:", ""] + _fn_table(p.focus, "flat", r.base, r.cand) + [""]
        out += ["Cumulative cost (self + callees; shows cost that moved into an inlining caller):",
                ""] + _fn_table(p.focus, "cum", r.base, r.cand) + [""]
        out += _per_op_table(r)
    else:
        out += ["No focus functions (the case lists none; `--focus f1,f2` to pick some).", ""]
    if p.missing_focus:
        out += ["Not in any profile: " + ", ".join(esc(f) for f in p.missing_focus)
                + " (inlined, renamed, or never on CPU).", ""]
    return out


def _tma(r: Results) -> list[str]:
    t = r.tma
    if t.status == "absent":
        return ["### TMA", "", f"TMA not collected: {esc(t.reason)}.", ""]
    head = ["### TMA funnel", ""]
    if t.status == "replay":
        head += [f"> **Replay:** these TMA numbers are recorded fixture files placed in the run, "
                 f"not measured in this run. {esc(t.reason)}", ""]
    # funnel.to_markdown() builds its own table; symbols there are TMA node names (fixed).
    return head + [t.funnel_markdown or "", ""]


def _per_rep(r: Results) -> list[str]:
    body = []
    for row in r.throughput + r.paired + r.latency:
        body += [f"**{esc(short_test(row.test))} · {row.metric} ({row.unit})**", "",
                 "| Variant | reps | values |", "|---|---|---|"]
        for v, side in ((r.base, row.base), (r.cand, row.cand)):
            body.append(f"| {esc(v)} | {', '.join(map(str, side.reps))} | "
                        + ", ".join(value(x, row.unit) for x in side.values) + " |")
        body.append("")
    for fr in r.profile.focus:
        body += [f"**{esc(fr.name)} flat / cum, % of samples ({THREAD_LABEL[fr.thread]})**", "",
                 "| Variant | reps | flat per rep | cum per rep |", "|---|---|---|---|"]
        for v, sf, sc in ((r.base, fr.base_flat, fr.base_cum), (r.cand, fr.cand_flat, fr.cand_cum)):
            body.append(f"| {esc(v)} | {', '.join(map(str, sf.reps))} | "
                        f"{', '.join(share(x) for x in sf.values)} | "
                        f"{', '.join(share(x) for x in sc.values)} |")
        body.append("")
    p = r.profile
    if p.per_op:
        body += [f"**{esc(p.per_op_command)} commands in each profile window (ops/s × seconds "
                 f"perf was attached, or the load's request count)**", "",
                 "| Variant | reps | operations | all samples per op |", "|---|---|---|---|"]
        tot = p.per_op_total
        for v in (r.base, r.cand):
            side = (tot.base if v == r.base else tot.cand) if tot else None
            body.append(f"| {esc(v)} | {', '.join(map(str, p.reps.get(v, [])))} | "
                        + ", ".join(f"{x:,.0f}" for x in p.ops.get(v, [])) + " | "
                        + (", ".join(fmt_ns(x) for x in side.values) if side else "n/a") + " |")
        body.append("")
        for fr in p.focus:
            if fr.base_flat_ns is None:
                continue
            body += [f"**{esc(fr.name)} flat / cum, CPU time per {esc(p.per_op_command)} "
                     f"({THREAD_LABEL[fr.thread]})**", "",
                     "| Variant | reps | flat per rep | cum per rep |", "|---|---|---|---|"]
            for v, sf, sc in ((r.base, fr.base_flat_ns, fr.base_cum_ns),
                              (r.cand, fr.cand_flat_ns, fr.cand_cum_ns)):
                body.append(f"| {esc(v)} | {', '.join(map(str, sf.reps))} | "
                            f"{', '.join(fmt_ns(x) for x in sf.values)} | "
                            f"{', '.join(fmt_ns(x) for x in sc.values)} |")
            body.append("")
    return _details("Per-rep values", body) if body else []


def _movers(r: Results, n: int) -> list[str]:
    p = r.profile
    if not p.available or not p.movers:
        return []
    rows = p.movers[:n]
    body = [f"Flat share change, {THREAD_LABEL[p.thread]}, established moves (interval clear "
            f"of 0) first, then by size. {len(rows)} of {len(p.movers)} listed.", ""]
    body += _fn_table(rows, "flat", r.base, r.cand, p.per_op_command if p.per_op else "")
    return _details(f"Top movers ({THREAD_LABEL[p.thread]})", body)


def _callers(r: Results) -> list[str]:
    p = r.profile
    if not p.callers:
        return []
    body = [f"Samples of each focus function by caller, % of the {THREAD_LABEL[p.thread]}'s "
            "samples, profile reps merged. A prefetch loop inlined into a caller moves cost "
            "there; this is where to look.", "",
            f"| Function | Caller | {esc(r.base)} | {esc(r.cand)} | Δ |", "|---|---|---|---|---|"]
    for c in p.callers:
        body.append(f"| {esc(c.function)} | {esc(c.caller)} | {share(c.base_share)} | "
                    f"{share(c.cand_share)} | {fmt_signed(c.cand_share - c.base_share, 2)} pp |")
    return _details("Callers of the focus functions", body)


def _threads(r: Results) -> list[str]:
    p = r.profile
    if not p.threads and not p.focus_other_view:
        return []
    body = []
    if p.threads:
        body += ["Share of all samples per thread group (% of samples):", "",
                 f"| Thread group | {esc(r.base)} | {esc(r.cand)} | Change | 95% CI |",
                 "|---|---|---|---|---|"]
        for t in p.threads:
            body.append(f"| {t.group} | {share(t.base.median)} | {share(t.cand.median)} | "
                        f"{fmt_signed(t.change.delta, 1)} pp | {pp_ci(t.change)} pp |")
        body.append("")
    if p.focus_other_view:
        body += ["Focus functions over all threads (process-wide, % of all samples):", ""]
        body += _fn_table(p.focus_other_view, "flat", r.base, r.cand) + [""]
        body += _fn_table(p.focus_other_view, "cum", r.base, r.cand)
    return _details("Per thread", body)


def _methods(r: Results) -> list[str]:
    body = []
    for row in r.throughput + r.paired + r.latency:
        body.append(f"- {esc(short_test(row.test))} · {row.metric}: {row.change.verdict}: "
                    f"{esc(row.change.reason)} Method: {esc(row.change.method)}.")
    for fr in r.profile.focus:
        body.append(f"- {esc(fr.name)} flat: {fr.flat_change.verdict}: {esc(fr.flat_change.reason)}")
        if fr.flat_ns_change is not None:
            body.append(f"- {esc(fr.name)} flat per {esc(r.profile.per_op_command)}: "
                        f"{fr.flat_ns_change.verdict}: {esc(fr.flat_ns_change.reason)} "
                        f"Method: {esc(fr.flat_ns_change.method)}.")
    return _details("How the verdicts were reached", body) if body else []


def known(v: object) -> object:
    """None in the environment means the host did not expose it (no cpufreq in a VM, a
    tool not installed): say that rather than print 'None'."""
    return "n/a" if v is None else v


def patches(items: list | None) -> str:
    out = []
    for p in items or []:
        if isinstance(p, dict):
            out.append(f"{p.get('file')} (sha256 {str(p.get('sha256') or '')[:12]})")
        else:
            out.append(str(p))
    return ", ".join(out) or "none"


def _environment(r: Results) -> list[str]:
    e = r.environment
    h, t = e.get("host", {}), e.get("tools", {})
    l3 = h.get("l3_bytes")
    lines = [
        f"- CPU: {esc(h.get('cpu_model'))}, {h.get('cores')} CPUs, {h.get('threads_per_core')} "
        f"thread(s)/core, L3 {l3 / 2**20:g} MiB" if l3 else f"- CPU: {esc(h.get('cpu_model'))}",
        f"- Kernel {esc(h.get('kernel'))}; governor {esc(known(h.get('governor')))}; SMT {esc(h.get('smt'))}; "
        f"THP {esc(h.get('thp'))}; virtualization {esc(h.get('virtualization'))}; "
        f"PMU {'yes' if h.get('pmu') else 'no'}",
        f"- Mitigations: {esc(h.get('mitigations'))}",
        f"- Compiler: {esc(h.get('compiler'))}; tools: "
        + ", ".join(f"{esc(k)} {esc(known(v))}" for k, v in t.items()),
    ]
    for v, d in e.get("variants", {}).items():
        sha = (d.get("binary_sha256") or "")[:16]
        cfg = " ".join(f"{k}={val}" for k, val in (d.get("config") or {}).items()) or "none"
        lines.append(f"- {esc(v)}: {esc(d.get('source'))}; version {esc(d.get('version'))}, "
                     f"commit {esc(d.get('commit'))}; sha256 {sha}…; config {esc(cfg)}; "
                     f"patches {esc(patches(d.get('patches')))}; "
                     f"flags {esc(' '.join(d.get('make_flags') or []))}")
    pl, pr = e.get("placement", {}), e.get("profiling", {})
    if pl:
        lines.append(f"- Placement: server CPUs {pl.get('server_cpus')}, client CPUs "
                     f"{pl.get('client_cpus')}. {esc(pl.get('note') or '')}")
    lg = e.get("load_generator") or {}
    if lg.get("used"):
        # A memtier suite measured with redis-benchmark (or memtier on part of the keys) must
        # say so next to the numbers, not only in manifest.json.
        why = (f" (memtier requested; {esc(lg.get('reason'))})"
               if lg.get("requested") == "memtier" and lg.get("used") != "memtier" else "")
        note = f" {esc(lg['note'])}" if lg.get("note") else ""
        lines.append(f"- Load generator: {esc(lg['used'])}{why}.{note}")
    if pr:
        lines.append(f"- Profiler: {esc(pr.get('profiler'))}, mode {esc(pr.get('mode'))}, "
                     f"{esc(pr.get('frequency_hz'))} Hz. {esc(pr.get('note') or '')}")
    return ["### Environment", "", *lines, ""]


def _reproduce(r: Results) -> list[str]:
    out = ["### Reproduce", ""]
    if r.reproduce.get("run"):
        out += ["Run (collect):", "", "```sh", r.reproduce["run"], "```", ""]
    out += ["Report (from the run directory alone):", "", "```sh", r.reproduce["report"], "```", ""]
    a = r.artifacts
    files = ([f"`{a.diff_flamegraph}`"] if a.diff_flamegraph else []) \
        + [f"`{f}`" for f in a.flamegraphs.values()] + [f"`{f}`" for f in a.pprof.values()]
    if files:
        out += ["Beside this report: report.html (tables, plots, flame graphs), results.json, "
                + ", ".join(files) + " (pprof: `pprof -top FILE`; Parca opens them too).", ""]
    for err in a.errors:
        out += [f"Note: {esc(err)}", ""]
    return out


def render(r: Results, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """The report as Markdown, never longer than `limit` characters."""
    head = [f"## stallscope: {esc(r.case.get('name'))}: {esc(r.cand)} vs {esc(r.base)}", "",
            f"Run `{r.run_id}` ({esc(r.case.get('size'))} size, {esc(r.created)}). "
            f"{esc(r.case.get('description') or '')}", ""]
    head += _summary(r)
    for n in r.notes:
        head += [f"> Note: {esc(n)}", ""]
    main = head + _throughput(r) + _profile_main(r) + _tma(r)
    tail = _environment(r) + _reproduce(r)
    # Details in the order they are given up when the comment is too long (last first).
    n_movers = n_all = len(r.profile.movers)
    details = [("per-rep values", _per_rep(r)), ("verdict reasons", _methods(r)),
               ("per-thread view", _threads(r)), ("callers", _callers(r))]

    def assemble(movers: int, dropped: list[str]) -> str:
        parts = list(main) + _movers(r, movers)
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
