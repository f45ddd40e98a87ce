"""The tables report.md shares between its sections: metric rows (throughput, latency,
paired), function shares (focus, movers, per thread) and CPU time per operation."""
from __future__ import annotations

from analysis.compare.results import (ChangeOut, FdrFamily, FunctionRow, Judgement, MetricRow,
                                      ProfileSection, Results, Side)
from analysis.report.fmt import (THREAD_LABEL, change_cells, fmt_ns, fmt_pct, fmt_signed,
                                 fn_verdict, level, pp_ci, quiet_verdict, row_name, samples,
                                 share, value, verdict_notes)
from analysis.report.mdtext import esc, esc_spans, verdict
from analysis.report.table import md_table


def side_cell(s: Side, unit: str) -> str:
    return f"{value(s.median, unit)} (CV {s.cv * 100:.1f}%, n={s.n})" if s.cv is not None \
        else f"{value(s.median, unit)} (n={s.n})"


def change_verdict(c: ChangeOut) -> str:
    """A metric's verdict cell: the mark, and for a verdict that saw nothing the size the
    run could have seen."""
    return verdict(c.verdict, quiet_verdict(c.verdict, c.detectable, "pp" if c.unit == "pp" else "rel",
                                            c.clears_zero, c.line))


def judgement_verdict(j: Judgement) -> str:
    return verdict(j.verdict, quiet_verdict(j.verdict, j.detectable, j.detectable_unit or "rel",
                                            line=j.line))


def metric_rows(rows: list[MetricRow], with_metric: bool) -> list[list[str]]:
    out = []
    for r in rows:
        change, ci = change_cells(r.change, r.unit)
        name = esc(row_name(r)) + (f" · {esc(r.metric)}" if with_metric else "")
        out.append([name, side_cell(r.base, r.unit), side_cell(r.cand, r.unit), change, ci,
                    change_verdict(r.change)])
    return out


def function_level(r: Results) -> float:
    """The confidence of every interval in the function tables (the family's, when its
    verdicts are judged together)."""
    return r.profile.fdr.level if r.profile.fdr is not None else r.settings.confidence


def movers_level(r: Results) -> float:
    """The confidence of the top movers' intervals (a family of their own)."""
    fam = r.profile.movers_fdr
    return fam.level if fam is not None else r.settings.confidence


def fdr_line(fam: FdrFamily | None) -> list[str]:
    """The sentence under a table whose verdicts were judged together."""
    if fam is None:
        return []
    return [f"These {fam.comparisons} {esc(fam.family)} verdicts are judged together so that "
            f"chance does not make verdicts (Benjamini-Hochberg, false discovery rate "
            f"{fam.q * 100:g}%): {fam.discoveries} moved; every interval is at {level(fam.level)} "
            f"(docs/statistics.md).", ""]


def fn_table(rows: list[FunctionRow], kind: str, base: str, cand: str,
             per_op: str = "", confidence: float = 0.95) -> list[str]:
    """Share table; with `per_op` (the command, e.g. "MSET") a column with the flat CPU
    time per operation and its change (used by the top movers)."""
    heads = ["Function", f"{esc(base)} ({kind})", f"{esc(cand)} ({kind})", "Change",
             f"{level(confidence)} CI", "Verdict"] + ([f"{kind} per {esc(per_op)}"] if per_op else [])
    out = []
    for r in rows:
        b, c, ch = ((r.base_flat, r.cand_flat, r.flat_change) if kind == "flat"
                    else (r.base_cum, r.cand_cum, r.cum_change))
        rel = f" ({fmt_pct(ch.rel, 0)})" if ch.rel is not None else ""
        j = fn_verdict(r, kind)
        out.append([esc(r.name), f"{share(b.median)}{samples(j.base_samples)}",
                    f"{share(c.median)}{samples(j.cand_samples)}", f"{fmt_signed(ch.delta, 2)} pp{rel}",
                    f"{pp_ci(ch, 2)} pp", judgement_verdict(j)] + ([_per_op_cell(r, kind)] if per_op else []))
    return md_table(heads, out)


def _per_op_cell(r: FunctionRow, kind: str) -> str:
    """A mover's CPU time per operation, base → cand, with its change."""
    bn, cn, nch = ((r.base_flat_ns, r.cand_flat_ns, r.flat_ns_change) if kind == "flat"
                   else (r.base_cum_ns, r.cand_cum_ns, r.cum_ns_change))
    if bn is None or cn is None or nch is None:
        return "n/a"
    return f"{fmt_ns(bn.median)} → {fmt_ns(cn.median)} ({change_cells(nch, 'ns/op', 0)[0]})"


def notes_lines(rows: list[FunctionRow], kinds: tuple[str, ...]) -> list[str]:
    """The verdict notes under a function table (dilution, new/gone, too few samples)."""
    notes = verdict_notes(rows, kinds)
    return (["Verdict notes:", ""] + [f"- {esc(n)}" for n in notes] + [""]) if notes else []


def per_op_note(p: ProfileSection, confidence: float) -> str:
    """The sentence under the per-operation table: what an operation is and how the
    operations of a profile window were counted (plain text); `confidence`: the level its
    intervals are at."""
    return (f"CPU time per operation = the function's CPU time in the profile (perf "
            f"cpu-clock sample periods, ns) / the {p.per_op_command} commands the load "
            f"generator completed while perf was attached ({p.per_op_basis}); one operation "
            f"is one {p.per_op_command} command, whatever its key count. Medians over profile "
            f"reps; change (ratio on the log scale), {level(confidence)} CI and verdict "
            f"relative (waterlines "
            f"as throughput), lower is better. Unlike shares, these do not rise when another "
            f"function gets cheaper.")


def per_op_table(r: Results) -> list[str]:
    p = r.profile
    if not p.per_op:
        return ([f"No CPU time per operation: {esc_spans(p.per_op_reason)}.", ""]
                if p.per_op_reason else [])
    rows = []
    t = p.per_op_total
    if t is not None:
        rows.append((f"all samples ({THREAD_LABEL[p.thread]})", t.base, t.cand, t.change,
                     change_verdict(t.change)))
    for kind in ("flat", "cum"):
        for f in p.focus:
            rows.append((f"{esc(f.name)} ({kind})", *((f.base_flat_ns, f.cand_flat_ns, f.flat_ns_change)
                         if kind == "flat" else (f.base_cum_ns, f.cand_cum_ns, f.cum_ns_change)),
                         judgement_verdict(fn_verdict(f, kind))))
    conf = p.fdr.level if p.fdr is not None else r.settings.confidence
    cells = [[name, fmt_ns(b.median), fmt_ns(c.median), *change_cells(ch, "ns/op", 0), v]
             for name, b, c, ch, v in rows if b is not None and c is not None and ch is not None]
    out = [f"CPU time per {esc(p.per_op_command)} ({THREAD_LABEL[p.thread]}):", ""]
    out += md_table(["Function", esc(r.base), esc(r.cand), "Change", f"{level(conf)} CI", "Verdict"], cells)
    return out + ["", esc(per_op_note(p, conf)), ""]
