"""What `stallscope pr comment` reports on: a run directory (compared here, as `stallscope
compare` does, through analysis.compare.engine), a report directory (report.md and
results.json already written by `stallscope compare`), or a directory holding several of
either (the PR workflow's artifact: reports/<case>/).

By default the comment posts each case's lead (headline, counts, the tables a reviewer reads
first), rendered here from its results.json by stallscope's own code
(collectors/pr/lead_md.py: the view analysis/report/lead.py gives report.md, read with caps,
every string escaped, capped and made inert): the artifact's report.md is not read, so no
Markdown written on the pull request's side reaches the comment. `full` posts all of each
report.md instead, neutralised (collectors/pr/untrusted.py), led by the same lead; a
report.md without its REPORT_LEAD_END line (written before it) is posted whole. The artifact
was written by a job that ran the PR's code: its files are read through
collectors/pr/untrusted.py (no symbolic links, size caps).
Caps hold for the artifact as a whole too: more than MAX_CASES directories are refused
before any is read, the files read add up to at most ARTIFACT_CAP bytes, and of each
results.json only what the comment uses is kept (`kept`, the lead's lines), each name and
commit on one line and cut to untrusted.NAME_CAP or COMMIT_CAP characters with an ellipsis;
`reports_only` (the comment job) refuses run directories, which would need the analysis
(and its dependencies) to read. This module needs only the standard library unless a run
directory is given."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.errors import UserError
from analysis.inputs.layout import MANIFEST, REPORT_LEAD_END, REPORT_MD, RESULTS_JSON
from collectors.pr import lead_md
from collectors.pr.fitting import shorten
from collectors.pr.results_doc import document
from collectors.pr.untrusted import COMMIT_CAP, MIB, TooLarge, Unreadable, clip, neutralise, read_capped

REPORT_CAP = 4 * MIB        # a report.md of every top mover is ~60 KB
RESULTS_CAP = 32 * MIB      # results.json with every function is a few MB
MAX_CASES = 64              # report directories read from one artifact
ARTIFACT_CAP = 64 * MIB     # the bytes of all the files read from one artifact

__all__ = ["Report", "SourceError", "find", "shorten"]


class SourceError(UserError):
    """Nothing to report on at the path given; exit status 2."""


@dataclass(frozen=True)
class Report:
    name: str                          # the directory's name
    results: dict                      # of results.json, what the comment uses (`kept`)
    render: Callable[[int], str]       # its Markdown, inert, at most `limit` characters


def find(path: str | Path, reports_only: bool = False, full: bool = False) -> list[Report]:
    """The reports at `path`, each its lead rendered from results.json (`full`: all of its
    report.md, neutralised)."""
    p = Path(path)
    if not p.is_dir():
        raise SourceError(f"{p}: no such directory (give a run directory, a report directory, "
                          "or a directory of them)")
    budget = [ARTIFACT_CAP]            # bytes left to read
    one = _one(p, reports_only, budget, full)
    if one is not None:
        return [one]
    dirs = []
    with os.scandir(p) as entries:
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                dirs.append(Path(e.path))
            if len(dirs) > MAX_CASES:
                raise SourceError(f"{p}: more than the {MAX_CASES} report directories one comment takes")
    found = [r for d in sorted(dirs) if (r := _one(d, reports_only, budget, full)) is not None]
    if not found:
        raise SourceError(f"{p}: neither a run directory (manifest.json) nor a report directory "
                          "(report.md), and no such directory inside it")
    return found


def _headline(results: dict) -> dict | None:
    """The summary's first throughput item's headline value (docs/results-json.md,
    SummaryItem): `what`, `label`, `verdict`, `change_unit` as strings, `change`, `ci_low`,
    `ci_high` as finite numbers or None; None when there is none or a field is not so."""
    items = results.get("summary")
    item = next((i for i in items if isinstance(i, dict) and i.get("what") in ("throughput", "paired throughput")),
                None) if isinstance(items, list) else None
    values = item.get("values") if item else None
    v = values[0] if isinstance(values, list) and values and isinstance(values[0], dict) else None
    if v is None:
        return None
    out = {"what": item["what"], "label": item.get("label", ""), "verdict": item.get("verdict", ""),
           "measure": v.get("measure", ""), "change_unit": v.get("change_unit", "")}
    if not all(isinstance(x, str) and len(x) <= 200 for x in out.values()):
        return None
    out["label"], out["verdict"] = clip(out["label"]), clip(out["verdict"])
    for k in ("change", "ci_low", "ci_high"):
        x = v.get(k)
        if x is not None and not (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)):
            return None
        out[k] = x
    return out


def kept(results: dict) -> dict:
    """Of a results.json, what the comment uses (comment.py): case.name, the names of base
    and cand and their commits (environment.variants), each a string on one line cut to
    NAME_CAP (a commit COMMIT_CAP) characters, the last an ellipsis when it was longer
    (untrusted.clip), and the throughput headline (`_headline`, for the row of each case
    when a comment holds several); the rest (every function of the profile ...) is not kept
    in memory."""
    out: dict = {}
    if (h := _headline(results)) is not None:
        out["headline"] = h
    case, env = results.get("case"), results.get("environment")
    if isinstance(case, dict) and isinstance(case.get("name"), str):
        out["case"] = {"name": clip(case["name"])}
    variants = env.get("variants") if isinstance(env, dict) else None
    commits = {}
    for side in ("base", "cand"):
        name = results.get(side)
        if not isinstance(name, str):
            continue
        out[side] = clip(name)
        v = variants.get(name) if isinstance(variants, dict) else None
        if isinstance(v, dict) and isinstance(v.get("commit"), str):
            commits[out[side]] = {"commit": clip(v["commit"], COMMIT_CAP)}
    if commits:
        out["environment"] = {"variants": commits}
    return out


def lead(text: str, full: bool = False) -> str:
    """report.md's lead: the lines above its REPORT_LEAD_END line (all of them without one,
    or with `full`, the line itself left out: neutralised, it would show as text)."""
    lines = text.split("\n")
    if REPORT_LEAD_END not in lines:
        return text
    at = lines.index(REPORT_LEAD_END)
    return "\n".join(lines[:at]).rstrip("\n") + "\n" if not full else "\n".join(lines[:at] + lines[at + 1:])


def _one(d: Path, reports_only: bool, budget: list[int], full: bool) -> Report | None:
    run_dir = (d / MANIFEST).is_file() and not (d / MANIFEST).is_symlink()
    if run_dir and not reports_only:
        return _from_run(d, full)
    if any((d / f).exists() or (d / f).is_symlink() for f in (REPORT_MD, RESULTS_JSON)):
        return _from_report(d, budget, full)
    if run_dir:
        raise SourceError(f"{d}: a run directory; this comment reads report directories only "
                          "(report.md, results.json)")
    return None


def _from_run(d: Path, full: bool) -> Report:
    from analysis.compare.engine import analyse
    from analysis.compare.errors import CompareError
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import RunDirError, load_run
    from analysis.report import markdown as report_md
    try:
        r = analyse(load_run(d), CompareOptions())
    except (RunDirError, CompareError, ValueError) as e:
        raise SourceError(f"{d}: {e}") from None
    doc = r.to_json()
    if not full:
        return _lead_report(d, doc, f"{d} (compared here)")

    def render(limit: int) -> str:       # the whole report, cut to fit
        return shorten(neutralise(lead(report_md.render(r, limit), full)), limit)
    return Report(clip(d.name), kept(doc), render)


def _read(path: Path, cap: int, budget: list[int]) -> str:
    """read_capped, within what is left of the artifact's ARTIFACT_CAP bytes (`budget`)."""
    limit = min(cap, budget[0])
    try:
        text = read_capped(path, limit)
    except Unreadable as e:
        if limit < cap and isinstance(e, TooLarge):
            raise SourceError(f"{path}: the artifact's files are together over the {ARTIFACT_CAP:,} bytes "
                              "read from one artifact") from None
        raise SourceError(str(e)) from None
    budget[0] -= len(text.encode())          # a bad byte, read as U+FFFD, counts 3: never fewer than read
    return text


def _results(d: Path, budget: list[int]) -> dict:
    path = d / RESULTS_JSON
    try:
        doc = json.loads(_read(path, RESULTS_CAP, budget))
    except (ValueError, RecursionError) as e:
        raise SourceError(f"{path}: not JSON ({str(e)[:200]})") from None
    if not isinstance(doc, dict):
        raise SourceError(f"{path}: not a results.json object (docs/results-json.md)")
    return doc


def _lead_report(d: Path, doc: dict, where: str) -> Report:
    """The case's lead rendered from its results.json (`doc`, read from `where`)."""
    text = "\n".join(lead_md.lines(document(doc, where))).rstrip("\n") + "\n"
    return Report(clip(d.name), kept(doc), lambda limit: shorten(text, limit))


def _from_report(d: Path, budget: list[int], full: bool) -> Report:
    has_results = (d / RESULTS_JSON).exists() or (d / RESULTS_JSON).is_symlink()
    if not full:
        if not has_results:
            raise SourceError(f"{d / RESULTS_JSON}: missing: the comment is rendered from each case's "
                              "results.json (`stallscope compare` writes it beside report.md; `--full` posts "
                              "report.md)")
        return _lead_report(d, _results(d, budget), str(d / RESULTS_JSON))
    text = neutralise(lead(_read(d / REPORT_MD, REPORT_CAP, budget).replace("\r\n", "\n"), full))
    results = kept(_results(d, budget)) if has_results else {}
    return Report(clip(d.name), results, lambda limit: shorten(text, limit))
