"""Arm topdown-tool (Arm Telemetry Solution), newer tree/table output -> TmaResult.

A box-drawing tree (stages, metric groups, and with `-s combined` the methodology's
nodes) whose leaves are rich tables with a Metric, a Value and a Unit column:

    CPU Neoverse V2 metrics
    ├── Stage 1 (Topdown metrics)
    │   └── Topdown Level 1 (Topdown_L1)
    │       └── ┏━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━┓
    │           ┃ Metric          ┃ Value ┃ Unit ┃
    │           ┡━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━┩
    │           │ Backend Bound   │ 39.07 │ %    │
    │           └─────────────────┴───────┴──────┘

With `-s combined` / `--cpu-node` a node heading "Frontend Bound (frontend_bound)" is
followed by a table without a Metric column (Value | Unit) holding that node's value.
With `-C 0,2-3` the value columns are "Aggregated (0,2-3) | #0 | #2 | #3": the aggregate
has no scope, "#2" is scope CPU2. The "CPU <core> metrics|topdown" line names the core
(its catalogue, e.g. neoverse-v2; without one the registry guesses from the names). A
table's rows are read at the column where its top border starts; a wrapped row (all
value cells empty) continues the row above; "..." where a pasted output was cut ends a
table.
Numbers in any locale (topdown_tool_common.number).
"""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog
from analysis.tma.formats.format import Format
from analysis.tma.formats.topdown_tool_common import Values, foreign, is_command, model_key, number
from analysis.tma.model import TmaParseError, TmaResult

_TREE_CHARS = "│├└─ \t"
_CPU_LINE = re.compile(r"^CPU (?P<name>.+?) (?:metrics|topdown)$")
_HEADING = re.compile(r"^(?P<title>.+?)(?:\s+\((?P<ident>[^()]+)\))?$")
_METRIC_IDENT = re.compile(r"[a-z][a-z0-9_]*")
_ELLIPSIS = re.compile(r"^(?:\.\.\.|\u2026)$")
_CPU_COLUMN = re.compile(r"^#\s*(?P<n>\d+)$")
_AGGREGATE = re.compile(r"^(?:Value|Aggregated(?:\s*\(.*\))?)$", re.I)


def detect(lines: list[str]) -> bool:
    """A rich table header (┃ Metric ┃ / ┃ Value ┃), or topdown-tool's "CPU <core>
    metrics" root line above a box-drawing tree."""
    if foreign(lines):
        return False
    if any(re.search(r"┃\s*(?:Metric|Value)\s*┃", l) for l in lines):
        return True
    return any(_CPU_LINE.match(l.strip()) for l in lines) and any(
        re.match(r"^[│ ]*[├└]── \S", l) for l in lines)


def cpu_model(lines: list[str]) -> str | None:
    for l in lines:
        if m := _CPU_LINE.match(l.strip()):
            return model_key(m.group("name"))
    return None


def _split_tree(line: str) -> tuple[str, str]:
    """(tree prefix, the rest) of a line: the prefix is the tree's │ ├── └── drawing."""
    i = 0
    while i < len(line) and line[i] in _TREE_CHARS:
        i += 1
    if i == len(line):
        return line, ""                 # a guide line of the tree alone ("│")
    # "└──────┘" at the start is a table's bottom border, not tree drawing: only a
    # prefix ending in a space (or nothing) is drawing.
    while i and line[i - 1] not in " \t":
        i -= 1
    return line[:i], line[i:]


def _cells(seg: str, bar: str, source: str, lineno: int) -> list[str]:
    if len(seg) < 2 or not seg.endswith(bar):
        raise TmaParseError(source, lineno, f"table row cut off (does not end with {bar!r}): "
                            f"{seg.strip()!r}")
    return [c.strip() for c in seg[1:-1].split(bar)]


class _Table:
    """One rich table being read: its header cells, then its rows."""

    def __init__(self, x: int, lineno: int, node: tuple[str, str, int] | None):
        self.x, self.lineno, self.node = x, lineno, node
        self.header: list[str] = []        # joined cell texts (a header may wrap)
        self.header_done = False
        self.rows: list[tuple[int, list[str]]] = []
        self.cols: dict | None = None

    def columns(self, res: TmaResult, lineno: int) -> dict:
        cols: dict = {"metric": None, "unit": None, "values": []}
        for i, name in enumerate(self.header):
            if name == "Metric":
                cols["metric"] = i
            elif name == "Unit":
                cols["unit"] = i
            elif _AGGREGATE.match(name):
                cols["values"].append((i, None))
            elif m := _CPU_COLUMN.match(name):
                cols["values"].append((i, f"CPU{m.group('n')}"))
            else:
                res.warnings.append(f"line {lineno}: table column {name!r} is not read")
        if not cols["values"]:
            raise TmaParseError(res.source, lineno, "table header has no Value column "
                                f"(found {' | '.join(self.header)!r})")
        if cols["metric"] is None and self.node is None:
            raise TmaParseError(res.source, lineno, "a table without a Metric column must "
                                "follow a node heading such as 'Frontend Bound (frontend_bound)'")
        return cols

    def row(self, cells: list[str], lineno: int, source: str) -> None:
        cols = self.cols
        if len(cells) != len(self.header):
            raise TmaParseError(source, lineno, f"table row has {len(cells)} cells, its header "
                                f"{len(self.header)}")
        if not any(cells):
            return
        if self.rows and all(cells[i] == "" for i, _ in cols["values"]):
            # A wrapped row: the rest of the metric name / unit of the row above.
            prev = self.rows[-1][1]
            for i, c in enumerate(cells):
                if c:
                    prev[i] = f"{prev[i]} {c}".strip()
            return
        self.rows.append((lineno, cells))

    def emit(self, vals: Values) -> None:
        cols, source = self.cols, vals.res.source
        if cols is None:
            return
        for lineno, cells in self.rows:
            if cols["metric"] is not None:
                m = _HEADING.match(cells[cols["metric"]])
                title, ident = m.group("title"), m.group("ident")
                if not title:
                    raise TmaParseError(source, lineno, "table row without a metric name")
                if ident and not _METRIC_IDENT.fullmatch(ident):
                    title, ident = cells[cols["metric"]], None
            else:
                title, ident, _ = self.node
            unit = cells[cols["unit"]] if cols["unit"] is not None else ""
            for i, scope in cols["values"]:
                vals.add(title, number(cells[i], source, lineno, title), unit, lineno,
                         scope=scope, metric=ident)


def _table_line(table: "_Table", line: str, lineno: int, vals: Values) -> bool:
    """Feed one line inside a table; True when the line ended the table."""
    res, source = vals.res, vals.res.source
    prefix, seg = line[:table.x], line[table.x:]
    if prefix.strip(_TREE_CHARS) and not _ELLIPSIS.match(line.strip(_TREE_CHARS)):
        raise TmaParseError(source, lineno, "unexpected text inside a table (rows "
                            f"start in column {table.x + 1}): {line.strip()!r}")
    head = seg[:1]
    if _ELLIPSIS.match(line.strip(_TREE_CHARS)):
        res.notes.append(f"line {lineno}: ... (the output was cut here, inside the "
                         f"table of line {table.lineno})")
        table.emit(vals)
        return True
    if head == "┃" and not table.header_done:
        cells = _cells(seg, "┃", source, lineno)
        if table.header and len(cells) != len(table.header):
            raise TmaParseError(source, lineno, "table header lines differ in cells")
        table.header = [f"{a} {b}".strip() for a, b in zip(table.header, cells)] \
            if table.header else cells
    elif head == "┡" and not table.header_done:
        table.header_done = True
        table.cols = table.columns(res, lineno)
    elif head == "│" and table.header_done:
        table.row(_cells(seg, "│", source, lineno), lineno, source)
    elif head == "├" and table.header_done:
        pass                                   # rich's row separators
    elif head == "└" and table.header_done:
        table.emit(vals)
        return True
    else:
        raise TmaParseError(source, lineno, f"malformed table line: {line.strip()!r}")
    return False


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="topdown-tool-table", catalog=catalog)
    vals = Values(res, catalog)
    table: _Table | None = None
    node: tuple[str, str, int] | None = None     # (title, metric name, line) of a node heading
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip().lstrip("\ufeff")
        if not line.strip():
            continue
        if table is not None:
            if _table_line(table, line, lineno, vals):
                table = None
            continue
        prefix, rest = _split_tree(line)
        if not rest:
            continue
        if rest.startswith("┏"):
            if not re.fullmatch(r"┏[━┳]*┓", rest):
                raise TmaParseError(source, lineno, f"malformed table border: {rest!r}")
            table = _Table(len(prefix), lineno, node)
        elif rest[:1] in "┃┡│└├┗╇┩":
            raise TmaParseError(source, lineno, "table line outside a table (no top border "
                                f"above it): {line.strip()!r}")
        elif _ELLIPSIS.match(rest):
            res.notes.append(f"line {lineno}: ... (the output was cut here)")
        elif cmd := is_command(line):
            res.commands.append(cmd)
        elif m := _CPU_LINE.match(rest):
            name = m.group("name")
            if res.cpu_name is None:
                res.cpu_name = name
            elif name != res.cpu_name:
                res.warnings.append(f"line {lineno}: a second CPU model ({name}) after "
                                    f"{res.cpu_name}: its values are placed in the "
                                    f"{catalog.model} catalogue too")
        elif prefix and re.search(r"[│┃]", rest):
            raise TmaParseError(source, lineno, "table row outside a table (no top border "
                                f"above it): {line.strip()!r}")
        elif prefix:
            # A tree heading: a stage, a metric group, or a node "Title (metric_name)".
            m = _HEADING.match(rest)
            ident = m.group("ident")
            node = (m.group("title"), ident, lineno) \
                if ident and _METRIC_IDENT.fullmatch(ident) else None
        else:
            res.notes.append(f"line {lineno}: {line.strip()}")  # "Monitoring command: ...", "Run 1"
    if table is not None:
        if not table.header_done:
            raise TmaParseError(source, table.lineno, "table cut off before its rows")
        res.warnings.append(f"line {table.lineno}: the table is not closed (the output was cut?); "
                            "its complete rows are read")
        table.emit(vals)
    return res


FORMAT = Format("topdown-tool-table", detect, parse, cpu_model)
