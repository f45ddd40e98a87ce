"""Arm topdown-tool (Arm Telemetry Solution) metrics CSV -> TmaResult.

`topdown-tool --cpu-generate-csv metrics --csv-output-path DIR [-I ms]` writes one file
per core model (<product>_metrics.csv) or, with -C, per core (<product>_core_N_metrics.csv)
and for their aggregate, each with this header and one row per metric and interval:

    time,group,stage,level,metric,value,units
    0.10,Topdown_L1,1,1,Retiring,17.02,%
    0.10,Topdown_L1,1,1,Frontend Bound,37.11,%

time is blank without -I, level blank in Stage 2, value blank when not available (->
None). A per-core file's name gives the scope (CPU0). The rows do not name the core,
so the registry picks the Arm catalogue whose names they print (analysis.tma.catalog.
guess) unless one is asked for (catalog="neoverse-v2"). A file written
with ';' or a tab between fields may carry decimal commas; numbers in any locale
(topdown_tool_common.number).
"""
from __future__ import annotations

import csv
import re

from analysis.tma.catalog import Catalog
from analysis.tma.formats.format import Format
from analysis.tma.formats.topdown_tool_common import Values, number
from analysis.tma.model import TmaParseError, TmaResult

_HEADER = re.compile(r"^\ufeff?\s*time(?P<sep>[,;\t])\s*group\s*(?P=sep)\s*stage\s*(?P=sep)\s*"
                     r"level\s*(?P=sep)\s*metric\s*(?P=sep)\s*value\s*(?P=sep)\s*units?\s*"
                     r"(?:(?P=sep).*)?$", re.I)
_CORE_FILE = re.compile(r"_core_(?P<n>\d+)_metrics\.csv$", re.I)


def _header(lines: list[str]) -> tuple[int, re.Match] | None:
    for i, l in enumerate(lines):
        if not l.strip() or l.lstrip().startswith("#"):
            continue
        m = _HEADER.match(l.rstrip())
        return (i, m) if m else None
    return None


def detect(lines: list[str]) -> bool:
    return _header(lines) is not None


def cpu_model(lines: list[str]) -> str | None:
    return None                      # the rows never name the core (its file name may)


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="topdown-tool-csv", catalog=catalog)
    vals = Values(res, catalog)
    lines = text.splitlines()
    found = _header(lines)
    if found is None:
        first = next((n for n, l in enumerate(lines, 1) if l.strip() and not l.lstrip().startswith("#")), None)
        raise TmaParseError(source, first, "not a topdown-tool metrics CSV (expected the header "
                            "'time,group,stage,level,metric,value,units')")
    for lineno, line in enumerate(lines[:found[0]], 1):
        if line.strip():
            res.notes.append(f"line {lineno}: {line.strip()}")
    m = _CORE_FILE.search(source)
    scope = f"CPU{m.group('n')}" if m else None
    head, sep = found[0], found[1].group("sep")
    names = [c.strip().lower().lstrip("\ufeff") for c in next(csv.reader([lines[head]], delimiter=sep))]
    for lineno, line in enumerate(lines[head + 1:], head + 2):
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            res.notes.append(f"line {lineno}: {line.strip()}")
            continue
        row = next(csv.reader([line], delimiter=sep))
        if len(row) != len(names):
            raise TmaParseError(source, lineno, f"{len(row)} fields, the header has {len(names)}: "
                                f"{line.strip()!r}")
        r = dict(zip(names, (c.strip() for c in row)))
        title = r["metric"]
        if not title:
            raise TmaParseError(source, lineno, "row without a metric name")
        time = number(r["time"], source, lineno, "time") if r.get("time") else None
        level = r.get("level") or ""
        if level and not level.isdigit():
            raise TmaParseError(source, lineno, f"{title}: level {level!r} is not a whole number")
        vals.add(title, number(r["value"], source, lineno, title), r.get("units") or r.get("unit", ""),
                 lineno, scope=scope, interval=time, level=int(level) if level else None)
    return res


FORMAT = Format("topdown-tool-csv", detect, parse, cpu_model)
