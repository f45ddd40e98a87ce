"""What `stallscope pr comment` reports on: a run directory (compared here, as `stallscope
compare` does, through analysis.compare.engine), a report directory (report.md and
results.json already written by `stallscope compare`), or a directory holding several of
either (the PR workflow's artifact: reports/<case>/).

The artifact was written by a job that ran the PR's code: its files are read through
collectors/pr/untrusted.py (no symbolic links, size caps) and its Markdown neutralised.
Caps hold for the artifact as a whole too: more than MAX_CASES directories are refused
before any is read, the files read add up to at most ARTIFACT_CAP bytes, and of each
results.json only what the comment uses is kept (`kept`);
`reports_only` (the comment job) refuses run directories, which would need the analysis
(and its dependencies) to read. This module needs only the standard library unless a run
directory is given."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.errors import UserError
from analysis.inputs.layout import MANIFEST, REPORT_MD, RESULTS_JSON
from collectors.pr.fitting import shorten
from collectors.pr.untrusted import MIB, TooLarge, Unreadable, neutralise, read_capped

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
    render: Callable[[int], str]       # its Markdown, neutralised, at most `limit` characters


def find(path: str | Path, reports_only: bool = False) -> list[Report]:
    p = Path(path)
    if not p.is_dir():
        raise SourceError(f"{p}: no such directory (give a run directory, a report directory, "
                          "or a directory of them)")
    budget = [ARTIFACT_CAP]            # bytes left to read
    one = _one(p, reports_only, budget)
    if one is not None:
        return [one]
    dirs = []
    with os.scandir(p) as entries:
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                dirs.append(Path(e.path))
            if len(dirs) > MAX_CASES:
                raise SourceError(f"{p}: more than the {MAX_CASES} report directories one comment takes")
    found = [r for d in sorted(dirs) if (r := _one(d, reports_only, budget)) is not None]
    if not found:
        raise SourceError(f"{p}: neither a run directory (manifest.json) nor a report directory "
                          "(report.md), and no such directory inside it")
    return found


def kept(results: dict) -> dict:
    """Of a results.json, what the comment uses (comment.py): case.name, the names of base
    and cand and their commits (environment.variants), each a string; the rest (every
    function of the profile ...) is not kept in memory."""
    out: dict = {}
    case, env = results.get("case"), results.get("environment")
    if isinstance(case, dict) and isinstance(case.get("name"), str):
        out["case"] = {"name": case["name"]}
    variants = env.get("variants") if isinstance(env, dict) else None
    commits = {}
    for side in ("base", "cand"):
        name = results.get(side)
        if not isinstance(name, str):
            continue
        out[side] = name
        v = variants.get(name) if isinstance(variants, dict) else None
        if isinstance(v, dict) and isinstance(v.get("commit"), str):
            commits[name] = {"commit": v["commit"]}
    if commits:
        out["environment"] = {"variants": commits}
    return out


def _one(d: Path, reports_only: bool, budget: list[int]) -> Report | None:
    run_dir = (d / MANIFEST).is_file() and not (d / MANIFEST).is_symlink()
    if run_dir and not reports_only:
        return _from_run(d)
    if (d / REPORT_MD).exists() or (d / REPORT_MD).is_symlink():
        return _from_report(d, budget)
    if run_dir:
        raise SourceError(f"{d}: a run directory; this comment reads report directories only "
                          "(report.md, results.json)")
    return None


def _from_run(d: Path) -> Report:
    from analysis.compare.engine import analyse
    from analysis.compare.errors import CompareError
    from analysis.compare.options import CompareOptions
    from analysis.inputs.rundir import RunDirError, load_run
    from analysis.report import markdown as report_md
    try:
        r = analyse(load_run(d), CompareOptions())
    except (RunDirError, CompareError, ValueError) as e:
        raise SourceError(f"{d}: {e}") from None
    return Report(d.name, kept(r.to_json()), lambda limit: shorten(neutralise(report_md.render(r, limit)), limit))


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


def _from_report(d: Path, budget: list[int]) -> Report:
    text = neutralise(_read(d / REPORT_MD, REPORT_CAP, budget))
    results: dict = {}
    if (d / RESULTS_JSON).exists() or (d / RESULTS_JSON).is_symlink():
        try:
            doc = json.loads(_read(d / RESULTS_JSON, RESULTS_CAP, budget))
        except (ValueError, RecursionError) as e:
            raise SourceError(f"{d / RESULTS_JSON}: not JSON ({str(e)[:200]})") from None
        if not isinstance(doc, dict):
            raise SourceError(f"{d / RESULTS_JSON}: not a results.json object (docs/results-json.md)")
        results = kept(doc)
    return Report(d.name, results, lambda limit: shorten(text, limit))
