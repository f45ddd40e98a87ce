"""perf stat -x, CSV output with top-down metrics -> TmaResult.

Intel's tma_*, AMD's PipelineL1/L2 and Arm's TopdownL1 names (perf_common.is_tma_name).

The last seven fields of a row are value, unit, event, runtime, pcnt-running,
metric-value, metric-unit; interval (-I) and aggregation (-A, --per-*) fields come before
them. perf 6.5+ also prints group rows `,<runtime>,<pcnt>,,,,TopdownL1` whose share of
running time applies to the metric rows `,,,,,70.1,%  tma_x` under them (empty = NaN).
"""
from __future__ import annotations

import csv
import re

from analysis.tma.catalog import Catalog
import analysis.tma.formats.perf_common as common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult


def detect(lines: list[str]) -> bool:
    for l in lines:
        if l.lstrip().startswith("#"):
            continue
        if l.count(",") >= 6 and ("tma_" in l or "<not supported>" in l or "<not counted>" in l
                                  or re.search(r",(?:task|cpu)-clock,", l)
                                  or re.search(r",%\s+[a-z]\w*_bound\w*\s*$", l)):
            return True
    return False


def _prefix(fields: list[str], source: str, lineno: int) -> tuple[float | None, str | None]:
    """Interval timestamp and aggregation scope from the fields before the last seven."""
    ts, agg = None, None
    for p in (f.strip() for f in fields):
        if re.fullmatch(common.TS, p) or re.fullmatch(r"\d+\.\d+", p):
            ts = float(p)
        elif re.fullmatch(common.AGG, p):
            agg = p
        elif not re.fullmatch(r"\d+", p):   # digits: how many CPUs were aggregated
            raise TmaParseError(source, lineno, f"unexpected leading CSV field {p!r}")
    return ts, agg


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="perf-csv", catalog=catalog)
    values = common.PerfValues(res, catalog)
    group_pcnt: float | None = None
    group_scope: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            common.note(res, lineno, line)
            continue
        row = next(csv.reader([line]))
        if len(row) < 7:
            if "tma_" in line and " " not in row[0]:
                raise TmaParseError(source, lineno, f"truncated perf CSV row ({len(row)} fields, "
                                    f"expected 7): {line.strip()!r}")
            common.note(res, lineno, line)
            continue
        ts, agg = _prefix(row[:-7], source, lineno)
        value, unit, event, runtime, pcnt, mval, munit = (x.strip() for x in row[-7:])
        tm = re.fullmatch(rf"%\s+({common.METRIC_NAME})", munit)
        tm = tm if tm and common.is_tma_name(tm.group(1), catalog) else None
        # Rows without a counter value shift runtime/pcnt into fields 2-3 (perf 6.5+):
        # group ",<runtime>,<pcnt>,,,,TopdownL1" and metric ",<runtime>,<pcnt>,,,<val>,<unit>".
        own_pcnt = None
        if not value and unit and event:
            own_pcnt = common.number(event, source, lineno, "pcnt-running")
        if tm:
            if value:
                mux = common.number(pcnt, source, lineno, "pcnt-running") if pcnt else None
                scope = common.scope(agg, event)
            elif own_pcnt is not None:
                mux, scope = own_pcnt, group_scope
            else:
                mux, scope = group_pcnt, group_scope
            values.add(tm.group(1), common.number(mval, source, lineno, tm.group(1)), lineno,
                       scope or agg, ts, mux)
        elif common.GROUP_NAME.match(munit) and not value and not mval:
            group_pcnt = own_pcnt
            group_scope = common.scope(agg, common.group_pmu(munit))
        else:
            group_pcnt, group_scope = None, None
    return values.finish()


FORMAT = Format("perf-csv", detect, parse)
