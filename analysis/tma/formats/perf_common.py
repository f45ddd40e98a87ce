"""What perf stat's standard, CSV and JSON outputs share: flat metric names placed in the
tree through the catalogue (perf prints no domain), CPU scopes, numbers, kept lines.

Intel's names are tma_*; AMD's (backend_bound_memory) and Arm's (frontend_bound) are bare,
so a metric is a top-down value when it is tma_* or a name the result's catalogue knows.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.tma.catalog import Catalog
from analysis.tma.formats.format import SEPARATORS
from analysis.tma.formats.numbers import parse_number
from analysis.tma.model import TmaResult, TmaValue

TS = r"\d+\.\d{6,}"                                       # -I interval timestamp
AGG = r"(?:CPU\d+|S\d+(?:-D\d+)?(?:-[CLN]\d+)?(?:-T\d+)?)"  # -A / --per-* aggregation
GROUP_NAME = re.compile(r"^(?P<group>[A-Za-z][\w-]*)(?:\s*\((?P<pmu>cpu_\w+)\))?$")
_HYBRID = re.compile(r"^(cpu_core|cpu_atom)/")
METRIC_NAME = r"[A-Za-z][\w.]*"


@dataclass
class PerfCounter:
    """One counter line of a perf stat output (standard, -x or -j), its numbers read in
    the file's locale: what every perf parser reads before it looks for top-down metrics,
    so recordings of any event (the software events of a machine without a PMU) test the
    reading of intervals, separators and numbers that TMA lines go through too."""
    lineno: int
    interval: float | None         # the -I timestamp: the interval's end (s)
    scope: str | None              # -A / --per-* aggregation, hybrid PMU
    event: str
    count: float | None            # None: <not counted> / <not supported>
    unit: str                      # msec, ... ("" for plain counts)
    multiplex: float | None        # % of the time the counter ran
    metric: float | None = None    # the metric perf printed beside it, if any
    metric_unit: str = ""


def is_tma_name(name: str, catalog: Catalog) -> bool:
    """A perf metric name that is a top-down value: tma_* or one the catalogue knows."""
    return name.lower().startswith("tma_") or catalog.by_perf_name(name) is not None


class PerfValues:
    """Builds a result's TmaValues; a later duplicate (same node/scope/interval)
    replaces the earlier one, with a warning."""

    def __init__(self, res: TmaResult, catalog: Catalog):
        self.res, self.catalog = res, catalog
        self.index: dict[tuple, int] = {}
        self.fraction_warned = False

    def add(self, name: str, value: float | None, lineno: int, scope: str | None,
            interval: float | None, multiplex: float | None = None,
            threshold: str | None = None) -> TmaValue:
        cat = self.catalog.by_perf_name(name)
        v = TmaValue(name=cat.path if cat else name, value=value,
                     domain=cat.domain if cat else None, level=cat.level if cat else None,
                     scope=scope, interval=interval, multiplex=multiplex,
                     perf_threshold=threshold, raw_name=name, known=cat is not None,
                     in_tree=cat is not None, line=lineno)
        key = (v.name, scope, interval)
        if key in self.index:
            old = self.res.values[self.index[key]]
            self.res.warnings.append(f"line {lineno}: {name} measured again (first on line "
                                     f"{old.line}); the later value is used")
            self.res.values[self.index[key]] = v
        else:
            self.index[key] = len(self.res.values)
            self.res.values.append(v)
        return v

    def finish(self) -> TmaResult:
        vals = self.res.values
        scopes = {v.scope for v in vals}
        if scopes & {"cpu_core", "cpu_atom"} and None in scopes:
            # Hybrid: metrics printed on PMU-less events (duration_time) belong to the
            # P-core model when they are P-core (catalogue) names.
            for v in vals:
                if v.scope is None and v.known:
                    v.scope = "cpu_core"
        return self.res


def number(text: object, source: str, lineno: int, what: str) -> float | None:
    """A perf number that perf prints ungrouped (metric values, running shares, -x and -j
    fields, --topdown cells): "18.0" or, in a decimal-comma locale, "18,0"; quoted in
    JSON; None for NaN and empty fields. analysis.tma.formats.numbers reads it."""
    return parse_number(text, source, lineno, what)


def timestamp(text: str, source: str, lineno: int) -> float:
    """An -I timestamp: the interval's end in seconds since counting started, always with
    a '.' (perf prints it with "%lu.%09lu" whatever the locale)."""
    value = parse_number(text, source, lineno, "interval timestamp", decimal=".")
    assert value is not None
    return value


def scope(agg: str | None, event: str | None) -> str | None:
    """CPU scope of a value: the aggregation prefix and/or the hybrid PMU of its event."""
    m = _HYBRID.match(event or "")
    if agg and m:
        return f"{agg}/{m.group(1)}"
    return agg or (m.group(1) if m else None)


def group_pmu(group: str) -> str | None:
    """'cpu_core/' for a metric group header 'TopdownL1 (cpu_core)', else None."""
    m = GROUP_NAME.match(group)
    return (m.group("pmu") + "/") if m and m.group("pmu") else None


def note(res: TmaResult, lineno: int, line: str) -> None:
    """Keep a line that holds no value; a `perf stat` command line is also a command."""
    res.notes.append(f"line {lineno}: {line.strip()}")
    # perf's own hints quote "perf stat ..." (the NMI-watchdog one); that is no command.
    if re.search(r"\bperf stat\b", line) and not re.fullmatch(r"\s*perf stat \.\.\.\s*", line):
        res.commands.append(line.strip().lstrip("$ ").strip())
