"""perf stat -j JSON output with top-down metrics -> TmaResult.

Intel's tma_*, AMD's PipelineL1/L2 and Arm's TopdownL1 names (perf_common.is_tma_name).

One object per line. A metric is `{"metric-value": ..., "metric-unit": "%  tma_x"}`, on
its own or riding on a counter object; its scope and share of running time come from
the last counter or `{"metricgroup": "TopdownL1 (cpu_core)", "pcnt-running": ...}`
header before it. Values may be quoted (6.5+) or bare (6.1), or "nan"; -I adds
"interval", 6.13 adds "metric-threshold".

perf writes the numbers with the locale's decimal mark: quoted ("2010,335096") they are
read like any other number; bare (6.1: `"pcnt-running" : 100,00, "metric-value" : 2,010335`)
they are no JSON, and are read with their comma taken for the decimal mark it is.
"""
from __future__ import annotations

import json
import re

from analysis.tma.catalog import Catalog
import analysis.tma.formats.perf_common as common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult


def detect(lines: list[str]) -> bool:
    return any(l.lstrip().startswith("{") for l in lines)


# A bare number with a decimal comma, as perf -j prints one under LC_NUMERIC=de_DE: a
# comma between digits right after a key's colon cannot be JSON's own separator (a key,
# a string, must follow that).
_BARE_COMMA = re.compile(r'(:\s*-?\d+),(\d+)(?=\s*[,}])')


def _object(text: str, source: str, lineno: int) -> dict:
    # perf 6.13 prints counter-only objects as `..., "pcnt-running" : 100.00, }`.
    text = re.sub(r",\s*}\s*$", "}", text)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        try:
            obj = json.loads(_BARE_COMMA.sub(r"\1.\2", text))
        except json.JSONDecodeError:
            raise TmaParseError(source, lineno, f"invalid JSON ({e.msg} at column {e.colno}); "
                                "the line is cut short or not perf -j output") from None
    if not isinstance(obj, dict):
        raise TmaParseError(source, lineno, "expected one JSON object per line")
    return obj


def _aggregation(obj: dict) -> str | None:
    if "cpu" in obj:
        return f"CPU{obj['cpu']}"
    for k in ("thread", "core", "die", "socket", "node", "cluster"):
        if k in obj:
            return str(obj[k])
    return None


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="perf-json", catalog=catalog)
    values = common.PerfValues(res, catalog)
    ctx_pcnt: float | None = None
    ctx_scope: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("{"):
            common.note(res, lineno, line)   # "# started on ...", stderr messages
            continue
        obj = _object(s, source, lineno)
        agg = _aggregation(obj)
        if "metricgroup" in obj:
            ctx_scope = common.scope(agg, common.group_pmu(str(obj["metricgroup"])))
        elif "event" in obj:
            ctx_scope = common.scope(agg, str(obj["event"]))
        if "pcnt-running" in obj:
            ctx_pcnt = common.number(obj["pcnt-running"], source, lineno, "pcnt-running")
        tm = re.fullmatch(rf"%\s+({common.METRIC_NAME})", str(obj.get("metric-unit", "")).strip())
        if not tm or not common.is_tma_name(tm.group(1), catalog):
            continue
        if "metric-value" not in obj:
            raise TmaParseError(source, lineno, f"{tm.group(1)} has no metric-value")
        val = common.number(obj["metric-value"], source, lineno, tm.group(1))
        interval = (common.timestamp(str(obj["interval"]), source, lineno)
                    if "interval" in obj else None)
        values.add(tm.group(1), val, lineno, ctx_scope or agg, interval, ctx_pcnt,
                   obj.get("metric-threshold"))
    return values.finish()


def counters(text: str, source: str) -> list[common.PerfCounter]:
    """Every counter object (one with "counter-value"), its numbers read in the file's
    locale."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s.startswith("{"):
            continue
        obj = _object(s, source, lineno)
        if "counter-value" not in obj:
            continue
        event, value = str(obj.get("event", "")), str(obj["counter-value"])
        out.append(common.PerfCounter(
            lineno, common.timestamp(str(obj["interval"]), source, lineno)
            if "interval" in obj else None, common.scope(_aggregation(obj), event), event,
            None if value.startswith("<") else common.number(value, source, lineno, event),
            str(obj.get("unit", "")),
            common.number(obj["pcnt-running"], source, lineno, "pcnt-running")
            if "pcnt-running" in obj else None,
            common.number(obj["metric-value"], source, lineno, "metric")
            if "metric-value" in obj else None, str(obj.get("metric-unit", ""))))
    return out


FORMAT = Format("perf-json", detect, parse)
