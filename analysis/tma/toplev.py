"""toplev (pmu-tools) output -> TmaResult: the human table and the -x, / --csv CSV.

Human lines look like (pmu-tools tl_output.py OutputHuman.show):
    [timestamp] [CPU] AREA  Dotted.Node.Name  % Domain  VALUE [<|?] [+- sd] [[ 33.0%]] [<==]
followed, without --no-desc, by tab-indented description lines. CSV rows are
    [Timestamp,][CPUs,]Node,Value,Unit[ <],Description,Sample,Stddev,Multiplex,Bottleneck[,Idle]
with or without a header (whose "Area" column really holds the node name).
"""
from __future__ import annotations

import csv
import math
import re
from statistics import mean

from analysis.tma.model import CATALOG, L1_NODES, TmaParseError, TmaResult, TmaValue

_CPU = r"(?:S\d+-C\d+(?:-T\d+)?|S\d+|C\d+(?:-T\d+)?|CPU\d+|cpu_core|cpu_atom)"
_AREA = r"(?:FE|BAD|BE|RET)(?:/\w+)?"
_NODE_LINE = re.compile(
    rf"^(?:(?P<ts>\d+\.\d+|SUMMARY)\s+)?(?:(?P<cpu>{_CPU})\s+)?(?:(?P<area>{_AREA})\s+)?"
    rf"(?P<name>[A-Za-z_][\w.]*)\s+(?P<unit>%(?: [A-Za-z_]+)?)\s+(?P<value>\S+)(?P<rest>.*)$")
_LEAD = re.compile(rf"^(?:(?:\d+\.\d+|SUMMARY)\s+)?(?:{_CPU}\s+)?(?:{_AREA}\s+)?(?P<name>[A-Za-z_][\w.]*)")
# "# 5.01-full-perf on Intel(R) Xeon(R) Platinum 8488C [spr/sapphire_rapids]"
_VERSION = re.compile(r"^#\s*(?P<ver>\d[\w.]*-(?:full|perf)[\w.-]*)\s+on\s+(?P<cpu>.+?)\s*$")
_CSV_UNIT = re.compile(r"^%(?: [A-Za-z_]+)?(?: [<?])?$")
_NUM = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def _is_tma_name(name: str) -> bool:
    return name in CATALOG or name.split(".", 1)[0] in L1_NODES


def _number(text: str, source: str, lineno: int, what: str) -> float | None:
    t = text.strip()
    if t.lower() in ("nan", "-nan", ""):
        return None
    if not _NUM.match(t):
        raise TmaParseError(source, lineno, f"{what}: value {t!r} is not a number")
    return float(t)


def _value(name: str, val: float | None, unit: str, source_line: int) -> TmaValue:
    """A TmaValue with level/domain from the toplev line (the unit is the domain)."""
    domain = unit[1:].strip() or None
    cat = CATALOG.get(name)
    if domain is None and cat:
        domain = cat.domain
    return TmaValue(name=name, value=val, domain=domain,
                    level=cat.level if cat else name.count(".") + 1,
                    raw_name=name, known=cat is not None,
                    in_tree=name.split(".", 1)[0] in L1_NODES, line=source_line)


def looks_like_human(lines: list[str]) -> bool:
    return any(_VERSION.match(l) for l in lines) or any(
        (m := _NODE_LINE.match(l)) and _is_tma_name(m.group("name")) for l in lines)


def looks_like_csv(lines: list[str]) -> bool:
    for l in lines:
        if re.match(r"^(?:Timestamp,)?(?:CPUs?,)?(?:Area|Node),.*Value,Unit", l):
            return True
        if re.search(r"(?:^|,)[A-Z][\w.]*,[-+\d.]+,%(?: [A-Za-z_]+)?(?: [<?])?,", l):
            return True
    return False


def _parse_rest(rest: str, source: str, lineno: int) -> tuple[bool | None, bool, float | None]:
    """Marks after the value: below-threshold, bottleneck, multiplex %."""
    mux = None
    m = re.search(r"\[\s*([\d.]+)\s*%\]", rest)
    if m:
        mux = float(m.group(1))
        rest = rest[:m.start()] + " " + rest[m.end():]
    bottleneck = "<==" in rest
    rest = rest.replace("<==", " ")
    rest = re.sub(r"\+-\s*\S+", " ", rest)  # stddev in interval/repeat mode
    below = bool(re.search(r"(?:^|\s)[<?](?:\s|$)", rest))
    rest = re.sub(r"(?:^|\s)[<?](?=\s|$)", " ", rest)
    if rest.strip():
        raise TmaParseError(source, lineno, f"unexpected text after the value: {rest.strip()!r}")
    return below, bottleneck, mux


def parse_human(text: str, source: str) -> TmaResult:
    res = TmaResult(source=source, fmt="toplev")
    muxes: list[float] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line[0] in " \t":
            continue  # description / "Sampling events:" lines printed under a node
        if line.startswith("#"):
            m = _VERSION.match(line)
            if m and res.tool_version is None:
                res.tool_version, res.cpu_name = m.group("ver"), m.group("cpu")
            else:
                res.notes.append(f"line {lineno}: {line.strip()}")
                if "toplev" in line:
                    res.commands.append(line.lstrip("# ").strip())
            continue
        m = _NODE_LINE.match(line)
        if m and m.group("name") == "MUX":
            v = _number(m.group("value"), source, lineno, "MUX")
            if v is not None:
                muxes.append(v)
            continue
        if not m or not _is_tma_name(m.group("name")):
            lead = _LEAD.match(line)
            if lead and _is_tma_name(lead.group("name")):
                raise TmaParseError(source, lineno, "truncated or malformed toplev node line "
                                    f"(expected NAME  % Domain  VALUE): {line.strip()!r}")
            res.notes.append(f"line {lineno}: {line.strip()}")  # warnings, hints, Info rows
            continue
        name = m.group("name")
        val = _number(m.group("value"), source, lineno, name)
        below, bn, mux = _parse_rest(m.group("rest"), source, lineno)
        v = _value(name, val, m.group("unit"), lineno)
        v.below_threshold, v.bottleneck, v.multiplex = below, bn, mux
        v.scope = m.group("cpu")
        ts = m.group("ts")
        v.interval = float(ts) if ts and ts != "SUMMARY" else None
        res.values.append(v)
    _apply_overall_mux(res, muxes)
    return res


def _apply_overall_mux(res: TmaResult, muxes: list[float]) -> None:
    # Without a per-node [xx%] column, toplev's MUX row is the share for every node.
    if muxes:
        res.overall_multiplex = mean(muxes)
        for v in res.values:
            if v.multiplex is None:
                v.multiplex = res.overall_multiplex


_HEADER_KEYS = {"timestamp": "ts", "cpus": "cpu", "cpu": "cpu", "value": "value", "unit": "unit",
                "description": "desc", "sample": "sample", "stddev": "stddev",
                "multiplex": "mux", "bottleneck": "bn", "idle": "idle"}


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
    for i in range(2, len(row)):
        if _CSV_UNIT.match(row[i].strip()):
            start = i - 2
            cols = {"name": start, "value": i - 1, "unit": i}
            pre = row[:start]
            if len(pre) == 2:
                cols.update(ts=0, cpu=1)
            elif len(pre) == 1:
                cols["ts" if _NUM.match(pre[0].strip()) else "cpu"] = 0
            elif len(pre) > 2:
                return None
            for k, off in (("desc", 1), ("sample", 2), ("stddev", 3), ("mux", 4), ("bn", 5), ("idle", 6)):
                cols[k] = i + off
            return cols
    return None


def parse_csv(text: str, source: str) -> TmaResult:
    res = TmaResult(source=source, fmt="toplev-csv")
    header: dict[str, int] | None = None
    muxes: list[float] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            m = _VERSION.match(line.strip().strip('"'))
            if m and res.tool_version is None:
                res.tool_version, res.cpu_name = m.group("ver"), m.group("cpu")
            else:
                res.notes.append(f"line {lineno}: {line.strip()}")
            continue
        row = next(csv.reader([line]))
        if not row or " " in row[0].strip() or len(row) == 1:
            # stderr hint lines interleaved with the rows ("Run toplev --describe ...").
            res.notes.append(f"line {lineno}: {line.strip()}")
            continue
        if row[0].strip() in ("Timestamp", "CPUs", "CPU", "Area", "Node") and "Value" in row:
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
        get = lambda k: row[cols[k]].strip() if k in cols and cols[k] < len(row) else ""
        name = get("name")
        unit_field = get("unit")
        if name == "MUX":
            v = _number(get("value"), source, lineno, "MUX")
            if v is not None:
                muxes.append(v)
            continue
        if not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            raise TmaParseError(source, lineno, f"bad node name {name!r}")
        if not unit_field.startswith("%"):
            res.notes.append(f"line {lineno}: non-percent metric {name} ({unit_field}) skipped")
            continue
        if not _is_tma_name(name):
            res.notes.append(f"line {lineno}: {name} is not a TMA tree node, skipped")
            continue
        below = unit_field.endswith((" <", " ?"))
        unit = unit_field[:-2] if below else unit_field
        val = _number(get("value"), source, lineno, name)
        v = _value(name, val, unit, lineno)
        v.below_threshold = below
        v.bottleneck = get("bn") == "<=="
        mux = get("mux")
        v.multiplex = _number(mux, source, lineno, f"{name} multiplex") if mux else None
        v.scope = get("cpu") or None
        ts = get("ts")
        if ts and ts != "SUMMARY":
            v.interval = _number(ts, source, lineno, "timestamp")
        res.values.append(v)
    _apply_overall_mux(res, muxes)
    if res.values and all(math.isnan(v.value) if v.value is not None else True for v in res.values):
        res.warnings.append("every value is NaN: nothing was counted")
    return res
