"""perf stat standard output with top-down metrics -> TmaResult.

Intel's tma_* metrics, AMD Zen's pipeline utilization (`-M PipelineL1,PipelineL2`:
backend_bound_memory ...) and Arm's TopdownL1 (frontend_bound ...), whichever the
catalogue knows. Early Arm patch sets printed fractions (`#  0.29 frontend_bound`, no
'%'): read as percent, with a warning. Any locale: counts grouped with ',', '.' or spaces,
metric values and multiplexing shares with a decimal comma; -I timestamps keep their point.

Two layouts, perf 6.1 to 6.13: event-interleaved
    <count> <event>  # <val> %  tma_x        [(pct%)]
    (continuation)   # <val> %  tma_y        [(pct%)]
where the "(pct%)" after a counter's last metric applies to all of its metrics, and
perf 6.5's default metric groups
    TopdownL1 (cpu_core)  # 68.7 %  tma_backend_bound
Several `perf stat` blocks in one file merge into one result. With -I every line starts
with the interval's end time and the output starts with perf's "# time counts unit
events" header instead of the banner; with -r N a "( +-  0,19% )" spread ends the line.
`counters` reads the counter lines themselves, in the file's locale. An excerpt without
the banner or the -I header is recognised by its counter and metric lines alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from analysis.tma.catalog import Catalog
import analysis.tma.formats.perf_common as common
from analysis.tma.formats.format import Format
from analysis.tma.formats.numbers import decimal_mark, parse_number
from analysis.tma.model import TmaParseError, TmaResult, TmaValue

# -A prints "CPU3"; --per-socket/-die/-core "S0-C0" and how many CPUs it sums ("S0-C0  2"),
# which must not take the first digits of a count grouped with spaces ("CPU0  1 006,33").
_PREFIX = (rf"^\s*(?:(?P<ts>{common.TS})\s+)?(?:(?P<cpu>CPU\d+)\s+|"
           rf"(?P<agg>(?!CPU){common.AGG})(?:\s+\d+)?\s+)?")
_VALUE = r"[-+]?(?:\d+(?:[.,]\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TMA_METRIC = re.compile(rf"^#\s*(?P<val>{_VALUE}|-?nan|-?inf)\s*(?P<pct>%)?\s+"
                         rf"(?P<name>{common.METRIC_NAME})\s*$", re.I)
_PCT_TAIL = re.compile(r"\(\s*(?P<pct>\d+(?:[.,]\d+)?)\s*%\)\s*$")
# -r N: the relative standard deviation over the N runs, "( +-  0,19% )"; not kept.
_RSD_TAIL = re.compile(r"\(\s*\+-\s*\d+(?:[.,]\d+)?\s*%\s*\)\s*$")
# A count grouped the locale's way: 1,234,567 / 1.234.567 / 1 234 567 (also U+00A0,
# U+202F) / 1’234’567 (de_CH).
_COUNT = r"\d(?:[\d,.'\u2019\u00a0\u202f ]*\d)?"
_UNIT = r"msec|ns|us|ms|Joules|MiB|W"
_COUNTER = re.compile(
    _PREFIX + rf"(?P<count>{_COUNT}|<not supported>|<not counted>)\s+"
    rf"(?:(?P<unit>{_UNIT})\s+)?(?P<event>\S+)\s*$")
_GROUP = re.compile(_PREFIX + r"(?P<group>[A-Za-z][\w-]*)(?:\s*\((?P<pmu>cpu_\w+)\))?\s*$")
_CONT = re.compile(_PREFIX + "$")
# Any metric after '#': "2,025 CPUs utilized", "3,34% of all branches", "1,21  insn per cycle".
_METRIC = re.compile(rf"^\s*({_VALUE})\s*(\S.*?)?\s*$")
# -I's header: "#           time             counts unit events" (with -A / --per-*:
# "time CPU  counts ...", "time core  cpus  counts ..."); no banner precedes it.
_INTERVAL_HEADER = re.compile(r"^#\s+time\s+(?:\S+\s+){0,2}counts\s+unit\s+events\s*$")


@dataclass
class _Line:
    """What one line of the standard output says: the text left of '#' located (a new
    counter block or not, its scope, its timestamp, and the counter itself), the text
    right of it, and the running share at its end."""
    new_block: bool
    scope: str | None
    ts: str | None
    counter: re.Match | None
    metric: str | None
    pct: float | None


def detect(lines: list[str]) -> bool:
    return any("Performance counter stats for" in l or "perf stat" in l
               or re.search(r"#\s*\S+\s*%\s+tma_\w+", l)
               or re.match(r"^\s*<not (?:supported|counted)>\s+\S+", l)
               or _INTERVAL_HEADER.match(l) or _excerpt_line(l)
               for l in lines)


def _excerpt_line(line: str) -> bool:
    """A line of perf stat's standard output that says so alone, in an excerpt cut without
    the banner or the -I header (any vendor's names, any locale): a counter `<count> [unit]
    <event>` with a `# <metric>` after it or an -I timestamp before it, or a metric line
    `[time] [group] # <value> [%] <name>` (a continuation or a group's)."""
    left, hash_, metric = _body(line)[0].partition("#")
    if (m := _COUNTER.match(left)) is not None:
        # an event name starts with a letter: a headerless --topdown row is numbers only
        return m.group("event")[0].isalpha() and (bool(hash_) or m.group("ts") is not None)
    return (bool(hash_) and _TMA_METRIC.match("#" + metric.rstrip()) is not None
            and (_CONT.match(left) is not None or _GROUP.match(left) is not None))


def _agg(m: re.Match) -> str | None:
    return m.group("cpu") or m.group("agg")


def _locate(left: str, has_metric: bool, scope: str | None
            ) -> tuple[bool, str | None, str | None, re.Match | None] | None:
    """What the text left of '#' says: (starts a new counter block, scope, timestamp, the
    counter match); None when it is no counter, continuation or group line."""
    if (m := _COUNTER.match(left)) is not None:
        return True, common.scope(_agg(m), m.group("event")), m.group("ts"), m
    if not has_metric:
        return None
    if (m := _CONT.match(left)) is not None:
        return False, _agg(m) or scope, m.group("ts"), None
    if (m := _GROUP.match(left)) is not None:
        pmu = (m.group("pmu") + "/") if m.group("pmu") else None
        return True, common.scope(_agg(m), pmu), m.group("ts"), None
    return None


def _body(line: str) -> tuple[str, str | None]:
    """The line without its running share "(50,00%)" and -r spread "( +- 0,19% )"; the
    share's text."""
    body, pct = line.rstrip(), None
    if (m := _PCT_TAIL.search(body)) is not None:
        pct, body = m.group("pct"), body[:m.start()].rstrip()
    if (m := _RSD_TAIL.search(body)) is not None:
        body = body[:m.start()].rstrip()
    return body, pct


def _decode(line: str, source: str, lineno: int, scope: str | None) -> _Line | None:
    """One line, or None when it holds no counter, group or metric continuation."""
    body, pct_text = _body(line)
    pct = common.number(pct_text, source, lineno, "running share") if pct_text else None
    left, hash_, metric = body.partition("#")
    where = _locate(left, bool(hash_), scope)
    if where is None:
        return None
    return _Line(*where, metric=metric if hash_ else None, pct=pct)


def _is_metric(text: str, catalog: Catalog) -> bool:
    """Does a '# ...' text hold a top-down metric (not IPC, GHz, "of all branches")? Any
    tma_ text counts, so one the pattern cannot read is reported as malformed."""
    mm = _TMA_METRIC.match("#" + text.rstrip())
    return bool(mm and common.is_tma_name(mm.group("name"), catalog)) or "tma_" in text


def _metric(values: common.PerfValues, text: str, line: str, lineno: int,
            scope: str | None, ts: str | None) -> TmaValue:
    mm = _TMA_METRIC.match("#" + text.rstrip())
    if not mm or (mm.group("pct") is None and mm.group("name").lower().startswith("tma_")):
        # Intel's tma_* metrics are always printed in percent; a bare number is damage.
        raise TmaParseError(values.res.source, lineno, "malformed tma_ metric (expected "
                            f"'# <value> %  <name>'): {line.strip()!r}")
    val = common.number(mm.group("val"), values.res.source, lineno, mm.group("name"))
    if mm.group("pct") is None and val is not None:
        # The first Neoverse N2 metrics (LKML RFC v2) printed fractions of slots.
        val *= 100.0
        if not values.fraction_warned:
            values.fraction_warned = True
            values.res.warnings.append(
                f"line {lineno}: metric values printed as fractions with no '%' (as early "
                "perf patch sets did); read as percent (0.29 -> 29 %)")
    interval = common.timestamp(ts, values.res.source, lineno) if ts else None
    return values.add(mm.group("name"), val, lineno, scope, interval)


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="perf", catalog=catalog)
    values = common.PerfValues(res, catalog)
    scope: str | None = None
    pending: list[TmaValue] = []   # metrics of this counter, waiting for its "(xx.xx%)"
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#") or line.strip() == "(...)":
            pending.clear()
            if line.strip():
                common.note(res, lineno, line)
            continue
        d = _decode(line, source, lineno, scope)
        named = d is not None and d.metric is not None and _is_metric(d.metric, catalog)
        if d is None:
            left, hash_, metric = _body(line)[0].partition("#")
            if hash_ and _is_metric(metric, catalog):
                raise TmaParseError(source, lineno, f"malformed perf stat line: {line.strip()!r}")
            common.note(res, lineno, line)
            continue
        scope = d.scope
        if d.new_block:
            pending.clear()
        if named:
            pending.append(_metric(values, d.metric, line, lineno, scope, d.ts))
        if d.pct is not None:
            for v in pending:
                v.multiplex = d.pct
            pending.clear()
    return values.finish()


def counters(text: str, source: str) -> list[common.PerfCounter]:
    """Every counter line, its count read in the file's locale (the decimal mark of its
    metric values and running shares; perf groups only the counts)."""
    lines = text.splitlines()
    mark = decimal_mark(lines)
    out: list[common.PerfCounter] = []
    scope: str | None = None
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        d = _decode(line, source, lineno, scope)
        if d is None or d.counter is None:
            continue
        scope, m = d.scope, d.counter
        count = None if m.group("count").startswith("<") else \
            parse_number(m.group("count"), source, lineno, m.group("event"), decimal=mark)
        metric = _METRIC.match(d.metric or "")
        out.append(common.PerfCounter(
            lineno, common.timestamp(d.ts, source, lineno) if d.ts else None, scope,
            m.group("event"), count, m.group("unit") or "", d.pct,
            common.number(metric.group(1), source, lineno, "metric") if metric else None,
            " ".join((metric.group(2) or "").split()) if metric else ""))
    return out


FORMAT = Format("perf", detect, parse)
