"""toplev (pmu-tools) human output -> TmaResult.

Node lines look like (pmu-tools tl_output.py OutputHuman.show):
    [timestamp] [CPU] AREA  Dotted.Node.Name  % Domain  VALUE [<|?] [+- sd] [[ 33.0%]] [<==]
followed, without --no-desc, by tab-indented description lines; a MUX row, the version
line and stray warnings may come between them.
"""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog, is_tree_name
import analysis.tma.formats.toplev_common as common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult

_CPU = r"(?:S\d+-C\d+(?:-T\d+)?|S\d+|C\d+(?:-T\d+)?|CPU\d+|cpu_core|cpu_atom)"
_AREA = r"(?:FE|BAD|BE|RET)(?:/\w+)?"
_NODE_LINE = re.compile(
    rf"^(?:(?P<ts>\d+\.\d+|SUMMARY)\s+)?(?:(?P<cpu>{_CPU})\s+)?(?:(?P<area>{_AREA})\s+)?"
    rf"(?P<name>[A-Za-z_][\w.]*)\s+(?P<unit>%(?: [A-Za-z_]+)?)\s+(?P<value>\S+)(?P<rest>.*)$")
# toplev 3.x and before: "S0-C0  Backend_Bound.Memory_Bound:  44.59 % Slots <==" (name
# with a colon, the value before the unit, "+- sd" in repeat mode), as the perf-book
# chapter on TMA pastes it (tests/data/tma/SOURCES.md).
_OLD_LINE = re.compile(
    rf"^(?:(?P<ts>\d+\.\d+|SUMMARY)\s+)?(?:(?P<cpu>{_CPU})\s+)?(?:(?P<area>{_AREA})\s+)?"
    rf"(?P<name>[A-Za-z_][\w.]*):\s+(?P<value>\S+)(?P<sd>\s+\+-\s+\S+)?\s+"
    rf"(?P<unit>%(?: [A-Za-z_]+)?)(?P<rest>.*)$")
# The start of a node line, to tell a cut-off node line from an unrelated one.
_LEAD = re.compile(rf"^(?:(?:\d+\.\d+|SUMMARY)\s+)?(?:{_CPU}\s+)?(?:{_AREA}\s+)?(?P<name>[A-Za-z_][\w.]*)")


def _match(line: str) -> re.Match | None:
    return _NODE_LINE.match(line) or _OLD_LINE.match(line)


def detect(lines: list[str]) -> bool:
    return any(common.version_line(l) for l in lines) or any(
        (m := _match(l)) and is_tree_name(m.group("name")) for l in lines)


def _marks(rest: str, source: str, lineno: int) -> tuple[bool, bool, float | None]:
    """Marks after the value: below-threshold, bottleneck, multiplex %."""
    mux = None
    m = re.search(r"\[\s*([\d.]+)\s*%\]", rest)
    if m:
        mux = common.number(m.group(1), source, lineno, "multiplexing share")
        rest = rest[:m.start()] + " " + rest[m.end():]
    bottleneck = "<==" in rest
    rest = rest.replace("<==", " ")
    rest = re.sub(r"\+-\s*\S+", " ", rest)  # stddev in interval/repeat mode
    below = bool(re.search(r"(?:^|\s)(?:[<?]|below)(?:\s|$)", rest))   # toplev 3.x: "below"
    rest = re.sub(r"(?:^|\s)(?:[<?]|below)(?=\s|$)", " ", rest)
    if rest.strip():
        raise TmaParseError(source, lineno, f"unexpected text after the value: {rest.strip()!r}")
    return below, bottleneck, mux


def _comment(res: TmaResult, lineno: int, line: str) -> None:
    if common.take_version(res, line):
        return
    res.notes.append(f"line {lineno}: {line.strip()}")
    if "toplev" in line:
        res.commands.append(line.lstrip("# ").strip())


def _node(res: TmaResult, m: re.Match, lineno: int, catalog: Catalog) -> None:
    name = m.group("name")
    val = common.number(m.group("value"), res.source, lineno, name)
    v = common.node_value(name, val, m.group("unit"), lineno, catalog)
    v.below_threshold, v.bottleneck, v.multiplex = _marks(m.group("rest"), res.source, lineno)
    v.scope = m.group("cpu")
    ts = m.group("ts")
    if ts and ts != "SUMMARY":
        v.interval = common.number(ts, res.source, lineno, "timestamp")
    res.values.append(v)


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="toplev", catalog=catalog)
    muxes: list[float] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line[0] in " \t":
            continue  # description / "Sampling events:" lines printed under a node
        if line.startswith("#"):
            _comment(res, lineno, line)
            continue
        if line.startswith("$ ") and "toplev" in line:      # a pasted shell prompt
            res.commands.append(line[2:].strip())
            continue
        m = _match(line)
        if m and m.group("name") == "MUX":
            if (mux := common.number(m.group("value"), source, lineno, "MUX")) is not None:
                muxes.append(mux)
        elif m and is_tree_name(m.group("name")):
            _node(res, m, lineno, catalog)
        elif (lead := _LEAD.match(line)) and is_tree_name(lead.group("name")):
            raise TmaParseError(source, lineno, "truncated or malformed toplev node line "
                                f"(expected NAME  % Domain  VALUE): {line.strip()!r}")
        else:
            res.notes.append(f"line {lineno}: {line.strip()}")  # warnings, hints, Info rows
    common.apply_overall_mux(res, muxes)
    return res


FORMAT = Format("toplev", detect, parse, common.cpu_model)
