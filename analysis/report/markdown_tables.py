"""What report.md's sections share around their tables (analysis/report/tables.py, the
data): function shares and CPU time per operation as Markdown, the confidence each table's
intervals are at, the sentence under a family judged together, the verdict notes."""
from __future__ import annotations

from analysis.compare.results import FdrFamily, FunctionRow, ProfileSection, Results
from analysis.report import tables
from analysis.report.fmt import THREAD_LABEL, level, verdict_notes
from analysis.report.mdtext import esc, esc_spans
from analysis.report.table import markdown
from analysis.power import on_grid


def function_level(r: Results) -> float:
    """The confidence of every interval in the function tables (the family's, when its
    verdicts are judged together)."""
    return r.profile.fdr.level if r.profile.fdr is not None else r.settings.confidence


def movers_level(r: Results) -> float | None:
    """The confidence of the top movers' intervals (a family of their own); None when each
    row has its own (a family weighted by share: each interval says its level)."""
    fam = r.profile.movers_fdr
    if fam is not None and fam.weights:
        return None
    return fam.level if fam is not None else r.settings.confidence


def fdr_sentence(fam: FdrFamily) -> str:
    """The sentence under a table whose verdicts were judged together (plain text)."""
    head = (f"These {fam.comparisons} {fam.family} verdicts are judged together so that "
            f"chance does not make verdicts ({fam.rule_text}): {fam.discoveries} moved; ")
    if not fam.weights:
        return head + f"every interval is at {level(fam.level)} (docs/statistics.md)."
    left = fam.weight_left
    if left is None:
        return head + f"every interval is at {level(1 - fam.q)} (docs/statistics.md)."
    five = 1 - fam.q * on_grid(min(0.05 / left, 1.0))
    return head + (f"each interval is at its own level, 1 − {fam.q * 100:g}% × its function's own "
                   f"share / {left * 100:.1f}% (the own shares of the rows not called changed), "
                   f"printed beside it: a function of 5% of the samples at {level(five)} "
                   f"(docs/statistics.md).")


def fdr_line(fam: FdrFamily | None) -> list[str]:
    """The sentence under a table whose verdicts were judged together."""
    return [] if fam is None else [esc(fdr_sentence(fam)), ""]


def fn_table(rows: list[FunctionRow], kind: str, base: str, cand: str,
             per_op: str = "", *, confidence: float) -> list[str]:
    """Share table (tables.functions) as Markdown lines."""
    return markdown(tables.functions(rows, kind, base, cand, confidence, per_op))


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
    conf = function_level(r)
    out = [f"CPU time per {esc(p.per_op_command)} ({THREAD_LABEL[p.thread]}):", ""]
    return out + markdown(tables.per_op(r, conf)) + ["", esc(per_op_note(p, conf)), ""]
