"""What toplev's human and CSV outputs share: the version line, numbers, node values and
the MUX row."""
from __future__ import annotations

import re
from statistics import mean

from analysis.tma.catalog import Catalog
from analysis.tma.formats.numbers import parse_number
from analysis.tma.model import TmaResult, TmaValue

# "# 5.01-full-perf on Intel(R) Xeon(R) Platinum 8488C [spr/sapphire_rapids]"
VERSION = re.compile(r"^#\s*(?P<ver>\d[\w.]*-(?:full|perf)[\w.-]*)\s+on\s+(?P<cpu>.+?)\s*$")
_CPU_TAG = re.compile(r"\[(?P<tag>[\w/.-]+)\]$")
NUM = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def version_line(line: str) -> re.Match | None:
    # The CSV output may quote the comment line.
    return VERSION.match(line.strip().strip('"'))


def cpu_model(lines: list[str]) -> str | None:
    """The model key at the end of toplev's version line: "spr/sapphire_rapids"."""
    for line in lines:
        m = version_line(line)
        if m and (tag := _CPU_TAG.search(m.group("cpu"))):
            return tag.group("tag")
    return None


def take_version(res: TmaResult, line: str) -> bool:
    """Fill tool_version and cpu_name from the first version line; True if it was one."""
    m = version_line(line)
    if not m or res.tool_version is not None:
        return False
    res.tool_version, res.cpu_name = m.group("ver"), m.group("cpu")
    return True


def number(text: str, source: str, lineno: int, what: str) -> float | None:
    """A value toplev printed: Python's "{:.1f}" / "{:,.1f}" whatever the locale (pmu-tools
    tl_uval.format_value), so '.' is the decimal mark and ',' groups thousands
    ("13,273.4"); the one number reader (formats/numbers) reads it."""
    return parse_number(text, source, lineno, what, decimal=".", noun="value ")


def node_value(name: str, val: float | None, unit: str, lineno: int, catalog: Catalog) -> TmaValue:
    """A TmaValue for a dotted toplev name: the domain is the unit toplev printed (the
    catalogue's only when the line has none), the level from the catalogue or the path."""
    domain = unit[1:].strip() or None
    cat = catalog.get(name)
    if domain is None and cat:
        domain = cat.domain
    return TmaValue(name=name, value=val, domain=domain,
                    level=cat.level if cat else name.count(".") + 1,
                    raw_name=name, known=cat is not None, line=lineno)


def apply_overall_mux(res: TmaResult, muxes: list[float]) -> None:
    # Without a per-node [xx%] column, toplev's MUX row is the share for every node.
    if muxes:
        res.overall_multiplex = mean(muxes)
        for v in res.values:
            if v.multiplex is None:
                v.multiplex = res.overall_multiplex
