"""What Arm topdown-tool's three output formats share (topdown_tool_text, _table, _csv):
numbers in any locale, units and their domains, the core name's catalogue key, the
shell line that ran the tool, and Values, which places printed titles in the catalogue."""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog, is_ratio
import analysis.tma.formats.toplev_common as toplev_common
from analysis.tma.formats.numbers import parse_number
from analysis.tma.model import TmaResult, TmaValue

_MISSING = ("", "nan", "-nan", "+nan", "-", "\u2013", "\u2014", "n/a")
MPKI_UNIT = re.compile(r"^misses per 1[ ,.'\u00a0\u202f]?000 instructions$", re.I)
MODEL_IN_TEXT = re.compile(r"\b(Neoverse[ _-]?[A-Z]\d+[A-Z]?)\b", re.I)


def slug(title: str) -> str:
    """topdown-tool's metric name of a printed title: "Branch MPKI" -> branch_mpki."""
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")


def number(text: str, source: str, lineno: int, what: str) -> float | None:
    """A value as any locale prints it: 16.48 / 16,48 / 1,234.5 / 1.234,5 / 1 234,5 /
    1'234.5. The last '.' or ',' is the decimal separator when it occurs once (topdown-tool
    prints two or three decimals, so "0,372" is 0.372); every other separator must group
    thousands (formats/numbers, the reader every format uses). "nan", "-" and an empty
    field are no value (None)."""
    if text.strip().lower() in _MISSING:
        return None
    return parse_number(text, source, lineno, what, noun="value ")


def unit_text(unit: str) -> str:
    """A printed unit with its spacing normalised: "%slots" / "%  slots" -> "% slots"."""
    u = " ".join(unit.split())
    return re.sub(r"^%\s*", "% ", u).strip() if u.startswith("%") else u


def unit_domain(unit: str) -> str | None:
    """The domain a printed unit names: "% slots" -> Slots, "% cycles" -> Cycles, "%"
    -> None (percent of something unsaid), "misses per 1,000 instructions" -> MPKI,
    any other ratio unit as printed ("per branch")."""
    u = unit_text(unit)
    if u in ("", "%"):
        return None
    if u.startswith("% "):
        word = u[2:]
        return word[:1].upper() + word[1:]
    if MPKI_UNIT.match(u):
        return "MPKI"
    return u


def model_key(name: str | None) -> str | None:
    """The catalogue key of a core name topdown-tool printed: "Neoverse V2" -> neoverse-v2
    (the registry falls back to guessing from the names when no catalogue has that key)."""
    if not name or not name.strip():
        return None
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    return re.sub(r"^neoverse(?=[a-z]\d)", "neoverse-", key)


class Values:
    """Builds a result's TmaValues from printed titles; the same metric printed again
    (combined mode repeats a metric under several nodes) is kept once, and a different
    later value replaces the earlier one with a warning."""

    def __init__(self, res: TmaResult, catalog: Catalog):
        self.res, self.catalog = res, catalog
        self.index: dict[tuple, int] = {}

    def add(self, title: str, value: float | None, unit: str, lineno: int,
            scope: str | None = None, interval: float | None = None,
            metric: str | None = None, level: int | None = None) -> TmaValue:
        node = None
        for key in (metric, slug(title)):
            if key and (node := self.catalog.by_perf_name(key)) is not None:
                break
        unit = unit_text(unit)
        domain = (node.domain if node and node.domain else None) or unit_domain(unit)
        v = TmaValue(name=node.path if node else (metric or slug(title)), value=value,
                     domain=domain, level=node.level if node else level, scope=scope,
                     interval=interval, raw_name=title, known=node is not None,
                     in_tree=node is not None, line=lineno)
        if node and node.domain and unit and unit.startswith("%") == is_ratio(node.domain):
            self.res.warnings.append(
                f"line {lineno}: {title} is printed in '{unit}' but the catalogue "
                f"({self.catalog.model}) counts {node.path} in {node.domain}")
        key = (v.name, scope, interval)
        if key in self.index:
            old = self.res.values[self.index[key]]
            if old.value != value:
                self.res.warnings.append(f"line {lineno}: {title} printed again with another "
                                         f"value (first on line {old.line}); the later one is used")
                self.res.values[self.index[key]] = v
            return v
        self.index[key] = len(self.res.values)
        self.res.values.append(v)
        return v


def is_command(line: str) -> str | None:
    """The command of a pasted shell line running topdown-tool ("$ topdown-tool ...")."""
    m = re.match(r"^\s*\$\s*(\S*topdown[-_]tool\b.*)$", line)
    return m.group(1).strip() if m else None


def foreign(lines: list[str]) -> bool:
    """True when the text is perf stat or toplev output (what other formats read)."""
    for l in lines[:400]:
        if ("Performance counter stats for" in l or toplev_common.version_line(l)
                or re.search(r"#\s*\S+\s*%\s+tma_\w+", l)
                or re.match(r"^\s*<not (?:supported|counted)>\s+\S+", l)
                or re.match(r"^\s*\{\s*\"", l)):
            return True
    return False
