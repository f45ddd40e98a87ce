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
    """Interval timestamp and aggregation scope from the fields before the counter's."""
    ts, agg = None, None
    for p in (f.strip() for f in fields):
        if re.fullmatch(common.TS, p) or re.fullmatch(r"\d+\.\d+", p):
            ts = float(p)
        elif re.fullmatch(common.AGG, p):
            agg = p
        elif not re.fullmatch(r"\d+", p):   # digits: how many CPUs were aggregated
            raise TmaParseError(source, lineno, f"unexpected leading CSV field {p!r}")
    return ts, agg


def _split(row: list[str]) -> tuple[list[str], list[str]]:
    """(prefix fields, the seven counter fields). perf writes fields unquoted, so an event
    name holding the separator (AMD's cpu/de_no_dispatch_per_slot.no_ops_from_frontend,
    cmask=0x6/) spreads over two: the last four fields and the leading -I/-A ones are
    fixed, and whatever lies between value+unit and the last four is the event."""
    if len(row) <= 7:
        return row[:-7], row[-7:]
    k = 0
    while k < len(row) - 7 and (re.fullmatch(common.TS, row[k].strip())
                                or re.fullmatch(r"\d+\.\d+", row[k].strip())
                                or re.fullmatch(common.AGG, row[k].strip())
                                or (k and re.fullmatch(common.AGG, row[k - 1].strip())
                                    and re.fullmatch(r"\d+", row[k].strip()))):
        k += 1
    head, body, tail = row[:k], row[k:-4], row[-4:]
    return head, [body[0], body[1], ",".join(body[2:])] + tail


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="perf-csv", catalog=catalog)
    values = common.PerfValues(res, catalog)
    group_pcnt: float | None = None
    group_scope: str | None = None
    counter_pcnt: float | None = None     # a continuation metric's is its counter's
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
        head, fields = _split(row)
        ts, agg = _prefix(head, source, lineno)
        value, unit, event, runtime, pcnt, mval, munit = (x.strip() for x in fields)
        tm = re.fullmatch(rf"%\s+({common.METRIC_NAME})", munit)
        tm = tm if tm and common.is_tma_name(tm.group(1), catalog) else None
        # Rows without a counter value shift runtime/pcnt into fields 2-3 (perf 6.5+):
        # group ",<runtime>,<pcnt>,,,,TopdownL1" and metric ",<runtime>,<pcnt>,,,<val>,<unit>".
        own_pcnt = None
        if not value and unit and event:
            own_pcnt = common.number(event, source, lineno, "pcnt-running")
        if value:
            counter_pcnt = common.number(pcnt, source, lineno, "pcnt-running") if pcnt else None
        if tm:
            if value:
                mux = counter_pcnt
                scope = common.scope(agg, event)
            elif own_pcnt is not None:
                mux, scope = own_pcnt, group_scope
            else:
                mux = group_pcnt if group_pcnt is not None else counter_pcnt
                scope = group_scope
            values.add(tm.group(1), common.number(mval, source, lineno, tm.group(1)), lineno,
                       scope or agg, ts, mux)
        elif common.GROUP_NAME.match(munit) and not value and not mval:
            group_pcnt = own_pcnt
            group_scope = common.scope(agg, common.group_pmu(munit))
        else:
            group_pcnt, group_scope = None, None
    return values.finish()


FORMAT = Format("perf-csv", detect, parse)
