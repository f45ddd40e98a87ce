"""`perf stat --topdown` column layout -> TmaResult.

`perf stat --topdown` prints its metrics as columns, not one per line: a header row of
names and one row of values per interval (-I) or one for the whole run:

    #           time      %  tma_retiring %  tma_backend_bound ...     (perf 6.x)
         1.001141351                 11.5                 34.9 ...
    #           time             retiring      bad speculation ...     (perf 4.x-5.x)
         1.001195802                 6.7%                 6.6% ...

A row may start with an -I timestamp and/or an -A / --per-core aggregation column
(CPU3, S0-C0 with its cpu count). Rows keep their timestamp and scope, as the other perf
parsers do; collapsing them (mean over intervals, per scope) is the model's job. A new
header row (perf repeats it, or a level-2 section follows) names the columns of the rows
after it. The older spelled-out names map onto catalogue nodes through their tma_ name.
"""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog
import analysis.tma.formats.perf_common as common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult

# Columns perf 4.x-5.x printed before the tma_ names (builtin-stat's topdown headers).
OLD_NAMES = {
    "retiring": "tma_retiring", "bad speculation": "tma_bad_speculation",
    "frontend bound": "tma_frontend_bound", "backend bound": "tma_backend_bound",
    "heavy operations": "tma_heavy_operations", "light operations": "tma_light_operations",
    "branch mispredict": "tma_branch_mispredicts", "machine clears": "tma_machine_clears",
    "fetch latency": "tma_fetch_latency", "fetch bandwidth": "tma_fetch_bandwidth",
    "memory bound": "tma_memory_bound", "core bound": "tma_core_bound",
}
_OLD = "|".join(sorted((re.escape(n).replace(r"\ ", r"\s+") for n in OLD_NAMES), key=len, reverse=True))
# Leading columns of a header: "#", "time", an aggregation name ("core cpus", "CPU").
_LEAD = r"^\s*#?\s*(?:time\s+)?(?:(?:CPU|core|socket|die|node)\s+(?:cpus\s+)?)?"
_TMA_HEADER = re.compile(_LEAD + r"(?P<cols>(?:%\s+tma_\w+\s*){2,})$")
_OLD_HEADER = re.compile(_LEAD + rf"(?P<cols>(?:(?:{_OLD})\s*){{2,}})$", re.I)
_OLD_COL = re.compile(_OLD, re.I)
_ROW = re.compile(rf"^\s*(?:(?P<ts>{common.TS})\s+)?(?:(?P<agg>{common.AGG})(?:\s+\d+)?\s+)?"
                  r"(?P<vals>\S.*?)\s*$")
# A cell: "11.5", "6.7%" (perf 4.x-5.x) or, in a decimal-comma locale, "11,5" ("%*.1f").
_CELL = re.compile(r"^(?:[-+]?(?:\d+(?:[.,]\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf)%?$", re.I)


def header_names(line: str) -> list[str] | None:
    """The tma_ names a header row gives its columns, in order; None if no header."""
    if (m := _TMA_HEADER.match(line)) is not None:
        return re.findall(r"tma_\w+", m.group("cols"))
    if (m := _OLD_HEADER.match(line)) is not None:
        return [OLD_NAMES[" ".join(c.lower().split())] for c in _OLD_COL.findall(m.group("cols"))]
    return None


def detect(lines: list[str]) -> bool:
    return any(header_names(l) for l in lines[:400])


def _row(res: TmaResult, values: common.PerfValues, names: list[str], line: str,
         lineno: int) -> bool:
    """Add one value row under `names`; False when the line is no value row."""
    m = _ROW.match(line)
    cells = m.group("vals").split() if m else []
    if not cells or not all(_CELL.match(c) for c in cells):
        return False
    if len(cells) != len(names):
        raise TmaParseError(res.source, lineno, f"{len(cells)} values for {len(names)} columns "
                            f"({', '.join(names)}) in the header above: {line.strip()!r}")
    ts = common.timestamp(m.group("ts"), res.source, lineno) if m.group("ts") else None
    for name, cell in zip(names, cells):
        val = common.number(cell.rstrip("%"), res.source, lineno, name)
        values.add(name, val, lineno, m.group("agg"), ts)
    return True


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="perf-topdown", catalog=catalog)
    values = common.PerfValues(res, catalog)
    names: list[str] | None = None
    header_line = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if (found := header_names(line)) is not None:
            names, header_line = found, lineno
            continue
        if "tma_" in line and re.match(_LEAD + "%", line):
            raise TmaParseError(source, lineno, "malformed --topdown header (expected "
                                f"'%  tma_<name>' columns): {line.strip()!r}")
        if names and _row(res, values, names, line, lineno):
            continue
        common.note(res, lineno, line)
    if names is None:
        raise TmaParseError(source, None, "no `perf stat --topdown` header row "
                            "('%  tma_retiring %  tma_backend_bound ...') found")
    if not res.values:
        raise TmaParseError(source, header_line, "a --topdown header row with no value row "
                            "under it (output cut short?)")
    return res


FORMAT = Format("perf-topdown", detect, parse)
