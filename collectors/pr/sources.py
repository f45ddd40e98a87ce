"""What `stallscope pr comment` reports on: a run directory (compared here, as `stallscope
compare` does, through analysis.compare.engine), a report directory (report.md and
results.json already written by `stallscope compare`), or a directory holding several of
either (the PR workflow's artifact: reports/<case>/).

The artifact was written by a job that ran the PR's code: its files are read through
collectors/pr/untrusted.py (no symbolic links, size caps) and its Markdown neutralised;
`reports_only` (the comment job) refuses run directories, which would need the analysis
(and its dependencies) to read. This module needs only the standard library unless a run
directory is given."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.inputs.layout import MANIFEST, REPORT_MD, RESULTS_JSON
from collectors.pr.fitting import shorten
from collectors.pr.untrusted import MIB, Unreadable, neutralise, read_capped

REPORT_CAP = 4 * MIB        # a report.md of every top mover is ~60 KB
RESULTS_CAP = 32 * MIB      # results.json with every function is a few MB
MAX_CASES = 64              # report directories read from one artifact

__all__ = ["Report", "SourceError", "find", "shorten"]


class SourceError(Exception):
    """Nothing to report on at the path given; exit status 2."""


@dataclass(frozen=True)
class Report:
    name: str                          # the directory's name
    results: dict                      # results.json (base, cand and their commits)
    render: Callable[[int], str]       # its Markdown, neutralised, at most `limit` characters


def find(path: str | Path, reports_only: bool = False) -> list[Report]:
    p = Path(path)
    if not p.is_dir():
        raise SourceError(f"{p}: no such directory (give a run directory, a report directory, "
                          "or a directory of them)")
    one = _one(p, reports_only)
    if one is not None:
        return [one]
    dirs = sorted(x for x in p.iterdir() if x.is_dir() and not x.is_symlink())
    found = [r for d in dirs if (r := _one(d, reports_only)) is not None]
    if not found:
        raise SourceError(f"{p}: neither a run directory (manifest.json) nor a report directory "
                          "(report.md), and no such directory inside it")
    if len(found) > MAX_CASES:
        raise SourceError(f"{p}: {len(found)} report directories, more than the {MAX_CASES} one comment "
                          "takes")
    return found


def _one(d: Path, reports_only: bool) -> Report | None:
    run_dir = (d / MANIFEST).is_file() and not (d / MANIFEST).is_symlink()
    if run_dir and not reports_only:
        return _from_run(d)
    if (d / REPORT_MD).exists() or (d / REPORT_MD).is_symlink():
        return _from_report(d)
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
    return Report(d.name, r.to_json(), lambda limit: shorten(neutralise(report_md.render(r, limit)), limit))


def _read(path: Path, cap: int) -> str:
    try:
        return read_capped(path, cap)
    except Unreadable as e:
        raise SourceError(str(e)) from None


def _from_report(d: Path) -> Report:
    text = neutralise(_read(d / REPORT_MD, REPORT_CAP))
    results: dict = {}
    if (d / RESULTS_JSON).exists() or (d / RESULTS_JSON).is_symlink():
        try:
            results = json.loads(_read(d / RESULTS_JSON, RESULTS_CAP))
        except (ValueError, RecursionError) as e:
            raise SourceError(f"{d / RESULTS_JSON}: not JSON ({str(e)[:200]})") from None
        if not isinstance(results, dict):
            raise SourceError(f"{d / RESULTS_JSON}: not a results.json object (docs/results-json.md)")
    return Report(d.name, results, lambda limit: shorten(text, limit))
