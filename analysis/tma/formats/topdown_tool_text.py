"""Arm topdown-tool (Arm Telemetry Solution), older text output -> TmaResult.

One metric per line, its title padded with dots, the value and its unit after it;
groups in brackets, optionally tagged on the right ("[Topdown group]", "[uarch
group]"); indented under their Stage-1 node with `-s combined`; "..." where a pasted
output was cut:

    $ topdown-tool ./a.out
    Stage 1 (Topdown metrics)
    =========================
    [Cycle Accounting]
    Frontend Stalled Cycles............. 0.02% cycles
    Backend Stalled Cycles.............. 42.59% cycles

    Stage 2 (uarch metrics)
    =======================
    [Branch Effectiveness]
      (follows Frontend Stalled Cycles)
    Branch MPKI......................... 0.372 misses per 1,000 instructions
    ...

Titles are looked up in the catalogue as their snake_case metric name ("Branch MPKI"
-> branch_mpki; titles that differ from the name are catalogue aliases). Values are
kept in their printed unit: percent for "% slots"/"% cycles"/"%", the plain number
for ratio units (MPKI, "per branch", ...). Any locale: "16,48%", "1 234,5", and the
"1,000"/"1.000"/"1 000" inside the MPKI unit.

The output never names the core (the README examples ran on Neoverse N1): cpu_model is
None unless a "Neoverse XX" is printed, and the registry then picks the Arm catalogue
whose names the output prints (analysis.tma.catalog.guess): N1's for a cycle-accounting
Stage 1 (frontend/backend stalled cycles), the generic arm64 one for Topdown Level 1 in
slots.

The helpers below (number, unit_domain, model_key, Values) are shared with the table
and CSV formats of the same tool (topdown_tool_table, topdown_tool_csv).
"""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog, is_ratio
import analysis.tma.formats.toplev_common as toplev_common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult, TmaValue

# ------------------------------------------------------------------ shared helpers
_NUMBER_TEXT = re.compile(r"([-+]?)(\d(?:[\d.,' \u00a0\u202f]*\d)?)(?:[eE]([-+]?\d+))?")
_MISSING = ("", "nan", "-nan", "+nan", "-", "\u2013", "\u2014", "n/a")
_MPKI_UNIT = re.compile(r"^misses per 1[ ,.'\u00a0\u202f]?000 instructions$", re.I)
_MODEL_IN_TEXT = re.compile(r"\b(Neoverse[ _-]?[A-Z]\d+[A-Z]?)\b", re.I)


def slug(title: str) -> str:
    """topdown-tool's metric name of a printed title: "Branch MPKI" -> branch_mpki."""
    return re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")


def number(text: str, source: str, lineno: int, what: str) -> float | None:
    """A value as any locale prints it: 16.48 / 16,48 / 1,234.5 / 1.234,5 / 1 234,5 /
    1'234.5. The last '.' or ',' is the decimal separator when it occurs once (topdown-tool
    prints two or three decimals, so "0,372" is 0.372); every other separator must group
    thousands. "nan", "-" and an empty field are no value (None)."""
    t = text.strip()
    if t.lower() in _MISSING:
        return None
    m = _NUMBER_TEXT.fullmatch(t)
    if not m:
        raise TmaParseError(source, lineno, f"{what}: value {t!r} is not a number")
    sign, body, exp = m.groups()
    marks = [c for c in body if c in ".,"]
    dec = marks[-1] if marks and marks.count(marks[-1]) == 1 else None
    int_part, _, frac = body.rpartition(dec) if dec else (body, "", "")
    groups = re.split(r"[.,' \u00a0\u202f]", int_part)
    if (not frac.isdigit() and dec) or not all(g.isdigit() for g in groups) or (
            len(groups) > 1 and not (len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]))):
        raise TmaParseError(source, lineno, f"{what}: value {t!r} is not a number")
    return float(f"{sign}{''.join(groups)}" + (f".{frac}" if dec else "") + (f"e{exp}" if exp else ""))


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
    if _MPKI_UNIT.match(u):
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


# ------------------------------------------------------------------ this format
_NUM = (r"[-+]?(?:\d{1,3}(?:[ \u00a0\u202f']\d{3})+(?!\d)|\d+)(?:[.,]\d+)*"
        r"(?:[eE][-+]?\d+)?")
_METRIC = re.compile(
    rf"^(?P<indent>[ \t]*)(?P<title>[A-Za-z0-9][^.]*?)(?P<dots>\.+)[ \t]+"
    rf"(?P<value>{_NUM}|[-+]?nan|-(?!\d))(?=%|\s|$)(?P<unit>.*)$", re.I)
# What a unit after the value may look like: "%", "% slots", "per branch",
# "misses per 1,000 instructions", "operations per cycle".
_UNIT = re.compile(r"^(?:%(?: [A-Za-z][\w ]*)?|[A-Za-z][\w ,.'\u00a0\u202f/-]*)?$")
# A title and its dot leader: a line meant as a metric line.
_LEADER = re.compile(r"^[ \t]*[A-Za-z0-9][^.]*?\.{2,}(?:[ \t]|$)")
_STAGE = re.compile(r"^Stage (?P<n>\d+) \((?P<what>[^)]*)\)$")
_RULE = re.compile(r"^=+$")
_GROUP = re.compile(r"^[ \t]*\[(?P<group>[^\[\]]+)\](?:[ \t]+\[(?P<tag>[^\[\]]+)\])?$")
_FOLLOWS = re.compile(r"^[ \t]*\(follows (?P<node>[^()]+)\)$")
_ELLIPSIS = re.compile(r"^[ \t]*(?:\.\.\.|\u2026)$")


def _tool_unit(unit: str) -> bool:
    u = unit_text(unit)
    return bool(re.match(r"^% (?:slots|cycles)$|\bper\b", u)) or bool(_MPKI_UNIT.match(u))


def detect(lines: list[str]) -> bool:
    if foreign(lines) or any("┃" in l or "┏" in l for l in lines[:400]):
        return False
    for l in (x.rstrip() for x in lines):
        if _STAGE.match(l) and re.search(r"Topdown metrics|uarch metrics", l):
            return True
        if (m := _GROUP.match(l)) and m.group("tag") and m.group("tag").endswith(" group"):
            return True
        if is_command(l):
            return True
        m = _METRIC.match(l)
        if m and len(m.group("dots")) >= 2 and _tool_unit(m.group("unit")):
            return True
    return False


def _printed_model(lines: list[str]) -> str | None:
    """A core name the output prints ("Neoverse N1"), not one inside the command run."""
    for l in lines:
        if is_command(l) or re.match(r"^\s*Monitoring", l):
            continue
        if m := _MODEL_IN_TEXT.search(l):
            return m.group(1)
    return None


def cpu_model(lines: list[str]) -> str | None:
    return model_key(_printed_model(lines))


def _metric(vals: Values, m: re.Match, lineno: int) -> None:
    title = m.group("title").strip()
    unit = m.group("unit").strip()
    if not _UNIT.match(unit_text(unit)):
        raise TmaParseError(vals.res.source, lineno, f"{title}: unexpected text after the "
                            f"value: {unit!r} (expected a unit such as '% slots')")
    value = number(m.group("value"), vals.res.source, lineno, title)
    vals.add(title, value, unit, lineno)


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="topdown-tool", catalog=catalog)
    vals = Values(res, catalog)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip().lstrip("\ufeff")
        if not line.strip():
            continue
        if cmd := is_command(line):
            res.commands.append(cmd)
        elif _ELLIPSIS.match(line):
            res.notes.append(f"line {lineno}: ... (the output was cut here)")
        elif _STAGE.match(line) or _RULE.match(line) or _FOLLOWS.match(line):
            continue                      # structure: stage headings, rules, "(follows X)"
        elif _GROUP.match(line):
            continue                      # [Group] [Topdown group]
        elif line.lstrip().startswith("["):
            raise TmaParseError(source, lineno, "malformed group header (expected "
                                f"'[Group title]' with an optional '[... group]' tag): {line.strip()!r}")
        elif m := _METRIC.match(line):
            _metric(vals, m, lineno)
        elif _LEADER.match(line):
            raise TmaParseError(source, lineno, "malformed or truncated topdown-tool metric "
                                f"line (expected 'Title..... VALUE UNIT'): {line.strip()!r}")
        else:
            if res.cpu_name is None and _printed_model([line]):
                res.cpu_name = _printed_model([line])
            res.notes.append(f"line {lineno}: {line.strip()}")
    return res


FORMAT = Format("topdown-tool", detect, parse, cpu_model)
