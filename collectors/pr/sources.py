"""What `stallscope pr comment` reports on: a run directory (compared here, as `stallscope
compare` does, through analysis.compare.engine), a report directory (report.md and
results.json already written by `stallscope compare`), or a directory holding several of
either (the PR workflow's artifact: reports/<case>/)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.inputs.layout import MANIFEST, REPORT_MD, RESULTS_JSON
from analysis.compare.engine import analyse
from analysis.compare.errors import CompareError
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import RunDirError, load_run
from analysis.report import markdown as report_md


class SourceError(Exception):
    """Nothing to report on at the path given; exit status 2."""


@dataclass(frozen=True)
class Report:
    name: str                          # the directory's name
    results: dict                      # results.json (base, cand and their commits)
    render: Callable[[int], str]       # its Markdown, at most `limit` characters


def find(path: str | Path) -> list[Report]:
    p = Path(path)
    if not p.is_dir():
        raise SourceError(f"{p}: no such directory (give a run directory, a report directory, "
                          "or a directory of them)")
    one = _one(p)
    if one is not None:
        return [one]
    found = [r for d in sorted(x for x in p.iterdir() if x.is_dir()) if (r := _one(d)) is not None]
    if not found:
        raise SourceError(f"{p}: neither a run directory (manifest.json) nor a report directory "
                          "(report.md), and no such directory inside it")
    return found


def _one(d: Path) -> Report | None:
    if (d / MANIFEST).is_file():
        return _from_run(d)
    if (d / REPORT_MD).is_file():
        return _from_report(d)
    return None


def _from_run(d: Path) -> Report:
    try:
        r = analyse(load_run(d), CompareOptions())
    except (RunDirError, CompareError, ValueError) as e:
        raise SourceError(f"{d}: {e}") from None
    return Report(d.name, r.to_json(), lambda limit: report_md.render(r, limit))


def _from_report(d: Path) -> Report:
    text = (d / REPORT_MD).read_text()
    results: dict = {}
    if (d / RESULTS_JSON).is_file():
        try:
            results = json.loads((d / RESULTS_JSON).read_text())
        except ValueError as e:
            raise SourceError(f"{d / 'results.json'}: not JSON ({e})") from None
        if not isinstance(results, dict):
            raise SourceError(f"{d / 'results.json'}: not a results.json object (docs/results-json.md)")
    return Report(d.name, results, lambda limit: shorten(text, limit))


_DETAILS = re.compile(r"^<details>\n(?:<summary>(?P<title>.*?)</summary>\n)?.*?^</details>\n?", re.S | re.M)


def shorten(text: str, limit: int) -> str:
    """report.md cut to `limit` characters: the folded details go first, largest first,
    then the tail; a closing line says what was left out."""
    if len(text) <= limit:
        return text
    left_out: list[str] = []

    def note() -> str:
        what = ", ".join(left_out) if left_out else "the end of the report"
        return (f"\n> Shortened to fit a GitHub comment: left out {what}; report.html and "
                "results.json (the PR workflow's artifact) have everything.\n")

    def assemble() -> str:
        return text.rstrip("\n") + "\n" + note()

    while len(assemble()) > limit:
        blocks = list(_DETAILS.finditer(text))
        if not blocks:
            break
        big = max(blocks, key=lambda m: m.end() - m.start())
        left_out.append(re.sub(r"<[^>]+>", "", big.group("title") or "details"))
        text = text[:big.start()] + text[big.end():]
    if len(assemble()) > limit:
        left_out.append("the end of the report")
        keep = max(0, limit - len(note()) - 1)
        cut = text.rfind("\n", 0, keep)
        text = text[:cut if cut > 0 else keep]
    return assemble()
