"""toplev (pmu-tools) -x, / --csv CSV output -> TmaResult.

Rows are
    [Timestamp,][CPUs,]Node,Value,Unit[ <],Description,Sample,Stddev,Multiplex,Bottleneck[,Idle]
with or without a header (whose "Area" column really holds the node name). With
stdout and stderr captured together, toplev's hint lines and its `# version` line come
between the rows. The separator is the one -x / --csv was given (',' ';' tab '|': toplev
writes through Python's csv module with it); toplev's numbers are Python's ('.' decimals)
whatever the locale, -I timestamps included.
"""
from __future__ import annotations

import csv
import re

from analysis.tma.catalog import Catalog, is_tree_name
import analysis.tma.formats.toplev_common as common
from analysis.tma.formats.format import SEPARATORS, Format
from analysis.tma.model import TmaParseError, TmaResult

_UNIT = re.compile(r"^%(?: [A-Za-z_]+)?(?: [<?])?$")
# Header name -> our column key; the columns this parser does not read are left out.
_HEADER_KEYS = {"timestamp": "ts", "cpus": "cpu", "cpu": "cpu", "value": "value",
                "unit": "unit", "multiplex": "mux", "bottleneck": "bn"}
_HEADER_FIRST = ("Timestamp", "CPUs", "CPU", "Area", "Node")


def separator(lines: list[str]) -> str | None:
    """The separator of a toplev CSV output (one of format.SEPARATORS), or None."""
    for sep in SEPARATORS:
        s = re.escape(sep)
        for l in lines:
            if re.match(rf"^(?:Timestamp{s})?(?:CPUs?{s})?(?:Area|Node){s}.*Value{s}Unit", l):
                return sep
            if re.search(rf"(?:^|{s})[A-Z][\w.]*{s}[-+\d.]+{s}%(?: [A-Za-z_]+)?(?: [<?])?{s}", l):
                return sep
    return None


def detect(lines: list[str]) -> bool:
    return separator(lines) is not None


def _header_map(row: list[str]) -> dict[str, int]:
    cols = {}
    names = [c.strip().lower() for c in row]
    for i, c in enumerate(names):
        if c == "node" or (c == "area" and "node" not in names):
            cols["name"] = i   # the real toplev header calls the node column "Area"
        elif c in _HEADER_KEYS:
            cols[_HEADER_KEYS[c]] = i
    return cols


def _headerless_map(row: list[str]) -> dict[str, int] | None:
    """Columns of a row without a header: found from the '% Domain' unit column."""
    for i in range(2, len(row)):
        if not _UNIT.match(row[i].strip()):
            continue
        start = i - 2
        cols = {"name": start, "value": i - 1, "unit": i, "mux": i + 4, "bn": i + 5}
        pre = row[:start]
        if len(pre) == 2:
            cols.update(ts=0, cpu=1)
        elif len(pre) == 1:
            cols["ts" if common.NUM.match(pre[0].strip()) else "cpu"] = 0
        elif len(pre) > 2:
            return None
        return cols
    return None


def _row(res: TmaResult, row: list[str], cols: dict[str, int], lineno: int,
         catalog: Catalog, muxes: list[float]) -> None:
    """One data row: a MUX row, a node value, or a row that is kept as a note."""
    def get(key: str) -> str:
        return row[cols[key]].strip() if key in cols and cols[key] < len(row) else ""

    name, unit, source = get("name"), get("unit"), res.source
    if name == "MUX":
        if (mux := common.number(get("value"), source, lineno, "MUX")) is not None:
            muxes.append(mux)
        return
    if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
        raise TmaParseError(source, lineno, f"bad node name {name!r}")
    if not unit.startswith("%"):
        res.notes.append(f"line {lineno}: non-percent metric {name} ({unit}) skipped")
        return
    if not is_tree_name(name):
        res.notes.append(f"line {lineno}: {name} is not a TMA tree node, skipped")
        return
    below = unit.endswith((" <", " ?"))
    v = common.node_value(name, common.number(get("value"), source, lineno, name),
                          unit[:-2] if below else unit, lineno, catalog)
    v.below_threshold = below
    v.bottleneck = get("bn") == "<=="
    mux = get("mux")
    v.multiplex = common.number(mux, source, lineno, f"{name} multiplex") if mux else None
    v.scope = get("cpu") or None
    ts = get("ts")
    if ts and ts != "SUMMARY":
        v.interval = common.number(ts, source, lineno, "timestamp")
    res.values.append(v)


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="toplev-csv", catalog=catalog)
    header: dict[str, int] | None = None
    muxes: list[float] = []
    sep = separator(text.splitlines()) or ","
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            if not common.take_version(res, line):
                res.notes.append(f"line {lineno}: {line.strip()}")
            continue
        row = next(csv.reader([line], delimiter=sep))
        if not row or " " in row[0].strip() or len(row) == 1:
            # stderr hint lines interleaved with the rows ("Run toplev --describe ...").
            res.notes.append(f"line {lineno}: {line.strip()}")
            continue
        if row[0].strip() in _HEADER_FIRST and "Value" in row:
            header = _header_map(row)
            if not {"name", "value", "unit"} <= header.keys():
                raise TmaParseError(source, lineno, "CSV header lacks a node/Value/Unit column")
            continue
        cols = header or _headerless_map(row)
        if cols is None:
            raise TmaParseError(source, lineno, "not a toplev CSV row (no '% Domain' unit "
                                f"column found): {line.strip()!r}")
        need = max(cols["name"], cols["value"], cols["unit"])
        if len(row) <= need:
            raise TmaParseError(source, lineno, f"truncated CSV row ({len(row)} fields, "
                                f"expected at least {need + 1}): {line.strip()!r}")
        _row(res, row, cols, lineno, catalog, muxes)
    common.apply_overall_mux(res, muxes)
    if res.values and all(v.value is None for v in res.values):
        res.warnings.append("every value is NaN: nothing was counted")
    return res


FORMAT = Format("toplev-csv", detect, parse, common.cpu_model)
