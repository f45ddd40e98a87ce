"""The body of the one stallscope comment on a pull request: a hidden marker (how a later
post finds the comment to update), then what a reviewer reads first: each case's lead, its
headline sentence on the first line (collectors/pr/lead_md.py renders it from results.json;
several cases: a sentence and a row each, with the throughput change and verdict, then each
lead in a fold), or with `full` all of each report.md; then, below the line, where the
numbers come from (`provenance`): the commit measured, a table of the cases with their
builds and commits, the link to the full reports, and which parts came from the pull
request's side. Cut to fit GitHub's 65,536-character comment limit with a line saying what
was left out and where the full report is.

Everything from the artifact is the PR's (its code wrote it): the leads are rendered from
results.json by stallscope's own templates and made inert, report.md (`full`) is neutralised
(collectors/pr/untrusted.py: no raw HTML, link, image, alert, footnote, mention, reference,
math, diagram, bidi control or invisible character), and so are the names and commits from
results.json in the table of cases, each cut to untrusted.NAME_CAP or COMMIT_CAP characters
(an ellipsis shows where); the comment says which parts those are. What stallscope itself
knows (the commit the trusted event measured, the workflow run's link) is written as it is.
Every cut ends outside any fence and `<details>` (collectors/pr/fitting.py).
Standard library only."""
from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.report.mdtext import code_span, esc, verdict
from analysis.report.table import md_table
from collectors.pr.fitting import cut
from collectors.pr.lead_md import COUNTED
from collectors.pr.sources import Report
from collectors.pr.untrusted import COMMIT_CAP, clip, inert, inert_html

MARKER = "<!-- stallscope-pr-report -->"
# GitHub refuses a longer comment body (422); analysis.report.markdown.GITHUB_COMMENT_LIMIT,
# written here again so that this module needs no analysis dependency (a test holds them equal)
LIMIT = 65536
SEPARATOR = "\n---\n\n"
_SHA = re.compile(r"[0-9a-f]{7,40}")
_LINK = re.compile(r"https?://[^\s()<>\[\]`'\"\\]+")
FROM_PR = ("**From the pull request's side:** everything above the line, and the names and commits in "
           "this table, came from the job that built and ran this pull request's code: its claim, {how}.")
FROM_PR_HOW = {False: "rendered from its results.json by stallscope's own templates, names as text (no links, "
                      "images, alerts, mentions or references)",
               True: "numbers included; its report.md files, with links, images, alerts, mentions and "
                     "references shown as text"}
REST = ("Top movers, per-rep values, saturation, profiler overhead, environment and the command that "
        "reproduces each run: in the full reports, {where}; `stallscope pr comment --full` posts report.md.")
FULL = "The full reports (report.html with flame graphs, results.json): {where}."
UPDATED = " This comment is updated in place when the pull request is measured again."
_FOLD_CLOSE = "\n\n</details>\n"


@dataclass(frozen=True)
class Measured:
    """What the comment says about the PR beside the reports."""
    commit: str | None = None         # the PR head that was measured (--commit, pr.json)
    merge_base: str | None = None     # what it was measured against (pr.json: the PR's claim)
    link: str | None = None           # where the full report is (the workflow run's page)
    commit_trusted: bool = True       # `commit` came from --commit (the trusted event), not pr.json
    full: bool = False                # each case's whole report.md, not its lead


def untrusted(text: object) -> str:
    """A name from the artifact as inert Markdown: capped (untrusted.clip), escaped, then
    neutralised."""
    return inert(esc(clip(text)))


def commit_text(c: object, trusted: bool = False) -> str:
    """A commit: a SHA the trusted event named as plain text (GitHub links it), anything
    from the artifact as inert code (no link to a commit the PR's code chose)."""
    s = str(c or "").strip()
    return s if trusted and _SHA.fullmatch(s) else inert(code_span(clip(s, COMMIT_CAP) or "unknown"))


def _sides(results: dict) -> tuple[tuple[str, str], tuple[str, str]]:
    variants = (results.get("environment") or {}).get("variants") or {}
    out = []
    for side in ("base", "cand"):
        name = str(results.get(side) or side)
        out.append((name, str((variants.get(name) or {}).get("commit") or "")))
    return out[0], out[1]


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%".replace("-", "−")


def headline_cells(h: dict | None) -> list[str]:
    """A case's throughput change and verdict (sources.kept `headline`), formatted here from
    checked numbers; the verdict's mark when it is one stallscope writes, else inert text."""
    if not h:
        return ["n/a", ""]
    lo, hi = h.get("ci_low"), h.get("ci_high")
    text = "n/a"
    if h.get("change_unit") == "rel" and h.get("change") is not None:
        text = _pct(h["change"]) + (f" \\[{_pct(lo)[:-1]}, {_pct(hi)[:-1]}\\]%" if lo is not None and hi is not None else "")
    what = "load time " if h.get("measure") == "load time" else "paired " if h.get("what") == "paired throughput" else ""
    return [what + text, inert(verdict(clip(h.get("verdict") or "")))]


def _case_rows(reports: list[Report], m: Measured) -> tuple[list[str], list[str]]:
    cells, warnings = [], []
    for rep in reports:
        (bn, bc), (cn, cc) = _sides(rep.results)
        case = _case(rep)
        cells.append([untrusted(case), f"{untrusted(bn)} at {commit_text(bc)}", f"{untrusted(cn)} at {commit_text(cc)}"])
        if m.commit and _SHA.fullmatch(cc) and not (cc.startswith(m.commit) or m.commit.startswith(cc)):
            warnings.append(f"> ⚠️ {untrusted(case)}: the candidate measured is commit {commit_text(cc)}, "
                            f"not {commit_text(m.commit, m.commit_trusted)}.")
    return md_table(["case", "baseline", "candidate"], cells), warnings


def _case(rep: Report) -> str:
    return (rep.results.get("case") or {}).get("name") or rep.name


def _where(m: Measured) -> str:
    if m.link and _LINK.fullmatch(m.link):
        return f"[the workflow run]({m.link})"
    return f"at {inert(code_span(m.link))}" if m.link else "in each report directory (`stallscope compare --out`)"


def several(reports: list[Report]) -> str:
    """What a comment of several cases leads with (not `full`): a sentence counting the
    cases' throughput verdicts, then a row each with its change and verdict."""
    n: dict[str, int] = {}
    for rep in reports:
        word = COUNTED.get((rep.results.get("headline") or {}).get("verdict") or "", "undecided")
        n[word] = n.get(word, 0) + 1
    words = ["improved", "regressed", "unchanged", "undecided"]
    parts = [f"{n.get(w, 0)} {w}" for w in words if w in ("improved", "regressed") or n.get(w)]
    lines = [f"**stallscope, throughput of {len(reports)} cases:** " + ", ".join(parts)
             + "; each case's lead is below its row.", ""]
    rows = [[untrusted(_case(rep))] + headline_cells(rep.results.get("headline")) for rep in reports]
    return "\n".join(lines + md_table(["case", "throughput [CI]", "verdict"], rows)) + "\n\n"


def provenance(reports: list[Report], m: Measured) -> str:
    """Below the leads: what was measured, the names and commits from the artifact's
    results.json made inert (and said to be the PR's), where the full reports are."""
    lines = ["#### What stallscope measured", ""]
    if m.commit:
        against = f", against its merge base {commit_text(m.merge_base)}" if m.merge_base else ""
        # the head the event that asked for the measurement names (the label's, or a measured
        # push's): a label is not tied to the commit a maintainer read, so the comment says which
        lines += [f"**Measured commit:** {commit_text(m.commit, m.commit_trusted)} (the head of this pull "
                  f"request when the measurement was asked for){against}. The label is not tied to the "
                  "commit a maintainer reviewed: a push just before it is what was measured.", ""]
    rows, warnings = _case_rows(reports, m)
    lines += rows + [""] + [w + "\n" for w in warnings]
    lines += [FROM_PR.format(how=FROM_PR_HOW[m.full]), "", (FULL if m.full else REST).format(where=_where(m)) + UPDATED, ""]
    return "\n".join(lines)


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


def _fold_open(rep: Report) -> str:
    """The <details> lines of report.md's shape around one case's lead (several cases)."""
    # one line (a line break would end the HTML block), capped; raw HTML: inert_html
    return f"<details>\n<summary>{inert_html(clip(_case(rep)))}</summary>\n\n"


def body(reports: list[Report], m: Measured, limit: int = LIMIT) -> str:
    """The marker, the leads (or the reports), then below the line the provenance."""
    folded = len(reports) > 1 and not m.full
    top = several(reports) if folded else ""
    foot = "\n---\n\n" + provenance(reports, m)
    folds = [_fold_open(r) for r in reports] if folded else []
    head = MARKER + "\n" + top
    room = limit - len(head) - len(foot) - sum(len(f) + len(_FOLD_CLOSE) for f in folds)
    texts = fit(reports, room)
    if folds:
        texts = [f + t.strip("\n") + _FOLD_CLOSE for f, t in zip(folds, texts)]
    text = head + SEPARATOR.join(t.rstrip("\n") + "\n" for t in texts) + foot
    if len(text) > limit:       # only with more cases than a comment can hold
        note = "\n\n> Cut at GitHub's comment limit; the full reports are in the artifact.\n"
        text = cut(text, limit - len(note)) + note
    return text
