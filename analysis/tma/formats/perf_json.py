"""perf stat -j JSON output with top-down metrics -> TmaResult.

Intel's tma_*, AMD's PipelineL1/L2 and Arm's TopdownL1 names (perf_common.is_tma_name).

One object per line. A metric is `{"metric-value": ..., "metric-unit": "%  tma_x"}`, on
its own or riding on a counter object; its scope and share of running time come from
the last counter or `{"metricgroup": "TopdownL1 (cpu_core)", "pcnt-running": ...}`
header before it. Values may be quoted (6.5+) or bare (6.1), or "nan"; -I adds
"interval", 6.13 adds "metric-threshold".
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


def _object(text: str, source: str, lineno: int) -> dict:
    # perf 6.13 prints counter-only objects as `..., "pcnt-running" : 100.00, }`.
    try:
        obj = json.loads(re.sub(r",\s*}\s*$", "}", text))
    except json.JSONDecodeError as e:
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
        interval = (common.number(obj["interval"], source, lineno, "interval")
                    if "interval" in obj else None)
        values.add(tm.group(1), val, lineno, ctx_scope or agg, interval, ctx_pcnt,
                   obj.get("metric-threshold"))
    return values.finish()


FORMAT = Format("perf-json", detect, parse)
