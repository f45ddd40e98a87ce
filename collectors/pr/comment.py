"""The body of the one stallscope comment on a pull request: a hidden marker (how a later
post finds the comment to update), which commits were measured, then each case's report
(summary and tables first), cut to fit GitHub's 65,536-character comment limit with a line
saying what was left out and where the full report is. Every value from the artifact is
neutralised (collectors/pr/untrusted.py: no raw HTML, no @mention) and every cut ends
outside any fence and `<details>` (collectors/pr/fitting.py). Standard library only."""
from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.report.mdtext import code_span, esc
from analysis.report.table import md_table
from collectors.pr.fitting import cut
from collectors.pr.sources import Report
from collectors.pr.untrusted import neutralise

MARKER = "<!-- stallscope-pr-report -->"
# GitHub refuses a longer comment body (422); analysis.report.markdown.GITHUB_COMMENT_LIMIT,
# written here again so that this module needs no analysis dependency (a test holds them equal)
LIMIT = 65536
SEPARATOR = "\n---\n\n"
_SHA = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Measured:
    """What the comment says about the PR beside the reports."""
    commit: str | None = None         # the PR head that was measured (--commit, pr.json)
    merge_base: str | None = None     # what it was measured against (pr.json)
    link: str | None = None           # where the full report is (the workflow run's page)


def commit_text(c: object) -> str:
    """A git SHA as plain text (GitHub links it to the commit), anything else as code."""
    s = str(c or "").strip()
    return s if _SHA.fullmatch(s) else code_span(s or "unknown")


def _sides(results: dict) -> tuple[tuple[str, str], tuple[str, str]]:
    variants = (results.get("environment") or {}).get("variants") or {}
    out = []
    for side in ("base", "cand"):
        name = str(results.get(side) or side)
        out.append((name, str((variants.get(name) or {}).get("commit") or "")))
    return out[0], out[1]


def _case_rows(reports: list[Report], m: Measured) -> tuple[list[str], list[str]]:
    cells, warnings = [], []
    for rep in reports:
        (bn, bc), (cn, cc) = _sides(rep.results)
        case = (rep.results.get("case") or {}).get("name") or rep.name
        cells.append([esc(case), f"{esc(bn)} at {commit_text(bc)}", f"{esc(cn)} at {commit_text(cc)}"])
        if m.commit and _SHA.fullmatch(cc) and not (cc.startswith(m.commit) or m.commit.startswith(cc)):
            warnings.append(f"> ⚠️ {esc(case)}: the candidate measured is commit {cc}, "
                            f"not {commit_text(m.commit)}.")
    return md_table(["case", "baseline", "candidate"], cells), warnings


def header(reports: list[Report], m: Measured) -> str:
    """The marker, then what was measured, neutralised (names and commits come from the
    artifact's results.json)."""
    lines = ["## stallscope: performance of this pull request", ""]
    if m.commit:
        against = f", against its merge base {commit_text(m.merge_base)}" if m.merge_base else ""
        # the head the event that asked for the measurement names (the label's, or a measured
        # push's): a label is not tied to the commit a maintainer read, so the comment says which
        lines += [f"**Measured commit:** {commit_text(m.commit)} (the head of this pull request when the "
                  f"measurement was asked for){against}. The label is not tied to the commit a maintainer "
                  "reviewed: a push just before it is what was measured.", ""]
    rows, warnings = _case_rows(reports, m)
    lines += rows + [""] + [w + "\n" for w in warnings]
    where = f"[the workflow run]({m.link})" if m.link else "beside each report.md (`stallscope compare`)"
    lines += [f"Full reports (report.html with flame graphs, results.json): {where}. "
              "This comment is updated in place when the pull request is measured again.", "", ""]
    return MARKER + "\n" + neutralise("\n".join(lines))


def fit(reports: list[Report], budget: int) -> list[str]:
    """Each report's Markdown, together at most `budget` characters: a report shorter
    than its share keeps everything and leaves the rest to the longer ones. No report ends
    inside a fence or a <details> (the next one would be read as part of it)."""
    texts = [r.render(max(budget, 0)) for r in reports]
    seps = len(SEPARATOR) * (len(texts) - 1)
    if sum(map(len, texts)) + seps <= budget:
        return texts
    remaining, left = budget - seps, len(texts)
    for i in sorted(range(len(texts)), key=lambda i: len(texts[i])):
        share = max(remaining // left, 0)
        if len(texts[i]) > share:
            texts[i] = cut(reports[i].render(share), share)
        remaining -= len(texts[i])
        left -= 1
    return texts


def body(reports: list[Report], m: Measured, limit: int = LIMIT) -> str:
    head = header(reports, m)
    text = head + SEPARATOR.join(fit(reports, limit - len(head)))
    if len(text) > limit:       # only with more cases than a comment can hold
        note = "\n\n> Cut at GitHub's comment limit; the full reports are in the artifact.\n"
        text = cut(text, limit - len(note)) + note
    return text
