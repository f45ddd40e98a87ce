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
Several `perf stat` blocks in one file merge into one result.
"""
from __future__ import annotations

import re

from analysis.tma.catalog import Catalog
import analysis.tma.formats.perf_common as common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult, TmaValue

_PREFIX = rf"^\s*(?:(?P<ts>{common.TS})\s+)?(?:(?P<agg>{common.AGG})(?:\s+\d+)?\s+)?"
_VALUE = r"[-+]?(?:\d+(?:[.,]\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TMA_METRIC = re.compile(rf"^#\s*(?P<val>{_VALUE}|-?nan|-?inf)\s*(?P<pct>%)?\s+"
                         rf"(?P<name>{common.METRIC_NAME})\s*$", re.I)
_PCT_TAIL = re.compile(r"\(\s*(?P<pct>\d+(?:[.,]\d+)?)\s*%\)\s*$")
# A count grouped the locale's way: 1,234,567 / 1.234.567 / 1 234 567 (also no-break spaces).
_COUNT = r"\d(?:[\d,.'\u00a0\u202f ]*\d)?"
_COUNTER = re.compile(
    _PREFIX + rf"(?P<count>{_COUNT}|<not supported>|<not counted>)\s+"
    r"(?:(?:msec|ns|us|ms|Joules|MiB|W)\s+)?(?P<event>\S+)\s*$")
_GROUP = re.compile(_PREFIX + r"(?P<group>[A-Za-z][\w-]*)(?:\s*\((?P<pmu>cpu_\w+)\))?\s*$")
_CONT = re.compile(_PREFIX + "$")


def detect(lines: list[str]) -> bool:
    return any("Performance counter stats for" in l or "perf stat" in l
               or re.search(r"#\s*\S+\s*%\s+tma_\w+", l)
               or re.match(r"^\s*<not (?:supported|counted)>\s+\S+", l)
               for l in lines)


def _locate(left: str, has_metric: bool, scope: str | None
            ) -> tuple[bool, str | None, str | None] | None:
    """What the text left of '#' says: (starts a new counter block, scope, timestamp);
    None when it is no counter, continuation or group line."""
    if (m := _COUNTER.match(left)) is not None:
        return True, common.scope(m.group("agg"), m.group("event")), m.group("ts")
    if not has_metric:
        return None
    if (m := _CONT.match(left)) is not None:
        return False, m.group("agg") or scope, m.group("ts")
    if (m := _GROUP.match(left)) is not None:
        pmu = (m.group("pmu") + "/") if m.group("pmu") else None
        return True, common.scope(m.group("agg"), pmu), m.group("ts")
    return None


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
    val = common.metric_number(mm.group("val"), values.res.source, lineno, mm.group("name"))
    if mm.group("pct") is None and val is not None:
        # The first Neoverse N2 metrics (LKML RFC v2) printed fractions of slots.
        val *= 100.0
        if not values.fraction_warned:
            values.fraction_warned = True
            values.res.warnings.append(
                f"line {lineno}: metric values printed as fractions with no '%' (as early "
                "perf patch sets did); read as percent (0.29 -> 29 %)")
    return values.add(mm.group("name"), val, lineno, scope, float(ts) if ts else None)


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
        body, pct = line.rstrip(), None
        if (m := _PCT_TAIL.search(body)) is not None:
            pct, body = float(m.group("pct").replace(",", ".")), body[:m.start()].rstrip()
        left, hash_, metric = body.partition("#")
        named = bool(hash_) and _is_metric(metric, catalog)
        where = _locate(left, bool(hash_), scope)
        if where is None:
            if named:
                raise TmaParseError(source, lineno, f"malformed perf stat line: {line.strip()!r}")
            common.note(res, lineno, line)
            continue
        new_block, scope, ts = where
        if new_block:
            pending.clear()
        if named:
            pending.append(_metric(values, metric, line, lineno, scope, ts))
        if pct is not None:
            for v in pending:
                v.multiplex = pct
            pending.clear()
    return values.finish()


FORMAT = Format("perf", detect, parse)
