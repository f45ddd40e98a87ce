"""A report's lead as the PR comment posts it, rendered by the comment job itself from
results.json: the headline sentence, the counts of verdicts, the throughput table, the TMA
memory path (or, where TMA is absent, the memory-stall table, or one line on why there is
neither), the focus functions and where the time went. It is the same view of the results
model as report.md's lead (analysis/report/lead.py, stall_tables.py, markdown._lead), line
for line (tests/test_pr_lead.py holds the two equal on the recorded demos), written with
the report's own table writer and number formats (analysis/report/table.py, fmt.py,
mdtext.py), so no Markdown written on the pull request's side reaches the comment: the
artifact's report.md is not read at all (only `--full` posts it, neutralised).

results.json is the pull request's too: it is read through collectors/pr/results_doc.py
(every value checked, every string capped and on one line, lists capped), names are escaped
as report.md escapes them, and every line is then made inert (collectors/pr/untrusted.inert:
no link, image, alert, mention, reference, math or invisible character). Tables show at most
`TABLE_ROWS` rows. Standard library only (the comment job runs under python3 -S)."""
from __future__ import annotations

from analysis.report.fmt import level_said, quiet_verdict, rank_of, summary_change
from analysis.report.mdtext import esc, esc_spans, verdict as mark
from analysis.report.table import markdown
from collectors.pr import lead_tables as tables
from collectors.pr.results_doc import LONG_CAP, NOTE_CAP, Doc, Run, change, fn_verdict, read
from collectors.pr.untrusted import inert

# analysis.report.lead.COUNTED
COUNTED = {"improvement": "improved", "minor improvement": "improved",
           "regression": "regressed", "minor regression": "regressed", "no change": "unchanged",
           "unstable": "undecided", "insufficient data": "undecided",
           "new in candidate": "new or gone", "gone": "new or gone",
           "negligible": "not judged", "too few samples": "not judged"}


def _verdicts(r: Run) -> list[str]:
    out = [(change(m.obj("change")) or tables.NO_CHANGE).verdict for m in r.throughput + r.paired + r.latency]
    total = r.profile.obj("per_op_total")
    if total is not None:
        out.append((change(total.obj("change")) or tables.NO_CHANGE).verdict)
    out += [fn_verdict(f, k).verdict for f in r.profile.objs("focus") for k in ("flat", "cum")]
    out += [fn_verdict(f, "flat").verdict for f in r.profile.objs("movers")]
    funnel = r.tma.obj("funnel")
    if funnel is not None:
        out += [row.text("verdict") for row in funnel.objs("rows")]
    return out


def counts(r: Run) -> str:
    """analysis.report.lead.counts."""
    n: dict[str, int] = {}
    verdicts = _verdicts(r)
    for v in verdicts:
        word = COUNTED.get(v, "undecided")
        n[word] = n.get(word, 0) + 1
    words = ["improved", "regressed", "unchanged", "undecided", "new or gone", "not judged"]
    parts = [f"{n.get(w, 0)} {w}" for w in words if w in ("improved", "regressed") or n.get(w)]
    return (f"Of the {len(verdicts)} verdicts in this report (throughput, focus functions, "
            f"top movers, TMA nodes): " + ", ".join(parts) + ".")


def _level(r: Run, row: Doc, paired: bool, n: int) -> str:
    """analysis.report.lead.level_said: the level and why it is not 95% (fmt.level_said)."""
    ch = row.obj("change")
    conf = (change(ch) or tables.NO_CHANGE).confidence or r.confidence
    m = r.measurement
    look = m.num("look") if m is not None and m.num("level") is not None else None
    fam = None if paired else next((f for f in r.fdr if f.text("family") == "throughput and latency"), None)
    family = (int(fam.num("comparisons") or 0), fam.num("level") or 0.0, fam.text("rule")) if fam else None
    looks = m.get("looks") if m is not None else None
    return level_said(conf, r.confidence, look=int(look) if look else None,
                      looks=len(looks) if isinstance(looks, list) else 0, family=family,
                      rank=rank_of(ch.text("method", NOTE_CAP) if ch is not None else "", n))


def headline(r: Run) -> str | None:
    """analysis.report.lead.headline, as markdown._lead writes it, with the counts."""
    for item in r.summary:
        what, values = item.text("what"), item.objs("values")
        if what not in ("throughput", "paired throughput") or not values:
            continue
        paired = what == "paired throughput"
        rows = r.paired if paired else r.throughput
        subject = item.text("subject", LONG_CAP)
        row = next((m for m in rows if m.text("test", LONG_CAP) == subject), rows[0] if rows else None)
        if row is None:
            continue
        v = values[0]
        word = ("RDB load time" if v.text("measure") == "load time" else
                "Paired throughput" if paired else "Throughput")
        ch, ci = summary_change(v.num("change"), v.text("change_unit"), v.num("ci_low"), v.num("ci_high"))
        nb, nc = ((row.obj(s) or Doc({}, s, row.file)).count("n") for s in ("base", "cand"))
        reps = f"{nb} pairs" if paired else f"{nb}+{nc} reps"
        label = item.text("label")
        detail = (f"{r.cand} vs {r.base}" + (f", {label}" if label else "")
                  + f"; {_level(r, row, paired, nb)}, {reps}")
        kind = item.text("verdict")
        printed = quiet_verdict(kind, item.num("detectable"), item.text("detectable_unit") or "rel",
                                line=item.num("line"))
        note = item.text("note", NOTE_CAP)
        return (f"**{esc(f'{word} {ch} {ci}')}** ({esc(detail)}): {mark(kind, printed)}"
                f"{f' ({esc_spans(note)})' if note else ''}. {esc(counts(r))}")
    return None


def lines(doc: Doc) -> list[str]:
    """The lead (markdown._lead but its heading and end line), every line made inert."""
    r = read(doc)
    h = headline(r)
    out = [h, ""] if h is not None else []
    tput, tma, stalls = tables.throughput(r), tables.tma(r), tables.stalls(r)
    out += markdown(tput) + [""] if tput is not None else []
    if tma is not None:
        out += markdown(tma) + [""]
    elif stalls is not None:    # no TMA: the stall table takes the funnel's place
        out += [esc(tables.stall_caption(r)), ""] + markdown(stalls) + [""]
    else:
        out += [esc(tables.tma_line(r)), ""]
    focus, left_out = tables.focus(r), tables.focus_left_out(r)
    out += (markdown(focus) + [""] if focus is not None else []) + ([esc(left_out), ""] if left_out else [])
    caption, split = tables.split_caption(r), tables.split(r)
    out += ([esc(caption), ""] if caption else []) + (markdown(split) + [""] if split is not None else [])
    return [inert(x) for x in out]
