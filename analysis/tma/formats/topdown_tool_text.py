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

The helpers it shares with the table and CSV formats of the same tool are in
topdown_tool_common.
"""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog
from analysis.tma.formats.format import Format
from analysis.tma.formats.topdown_tool_common import (MODEL_IN_TEXT, MPKI_UNIT, Values, foreign,
                                                      is_command, model_key, number, unit_text)
from analysis.tma.model import TmaParseError, TmaResult

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
    return bool(re.match(r"^% (?:slots|cycles)$|\bper\b", u)) or bool(MPKI_UNIT.match(u))


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
        if m := MODEL_IN_TEXT.search(l):
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
