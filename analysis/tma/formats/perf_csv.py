"""perf stat -x CSV output with top-down metrics -> TmaResult.

Intel's tma_*, AMD's PipelineL1/L2 and Arm's TopdownL1 names (perf_common.is_tma_name).

The last seven fields of a row are value, unit, event, runtime, pcnt-running,
metric-value, metric-unit; interval (-I) and aggregation (-A, --per-*) fields come before
them. perf 6.5+ also prints group rows `,<runtime>,<pcnt>,,,,TopdownL1` whose share of
running time applies to the metric rows `,,,,,70.1,%  tma_x` under them (empty = NaN).

Any separator -x was given (',' ';' tab '|'). Numbers take the locale's decimal mark
("100,00"); with -x, in a decimal-comma locale a value or share spreads over two fields
(`2011,70,msec,task-clock,2011699916,100,00,...`), which are joined again. perf cuts a CSV
metric value at the first character that is neither a digit nor '.' (print_metric_csv),
so in a decimal-comma locale every metric value is a whole number ("70" for 70,1 %):
read as printed, with a warning.
"""
from __future__ import annotations

import csv
import re
from typing import Iterator

from analysis.tma.catalog import Catalog
import analysis.tma.formats.perf_common as common
from analysis.tma.formats.format import Format
from analysis.tma.model import TmaParseError, TmaResult

CUT_METRICS = ("perf -x in a decimal-comma locale prints metric values cut at the decimal "
               "comma (perf's print_metric_csv keeps only digits and '.'): the values are "
               "whole percents, up to 1 pp below the measurement; run perf with "
               "LC_NUMERIC=C, or -j, for the decimals")


def separator(lines: list[str]) -> str | None:
    """The -x separator of a perf CSV output (one of format.SEPARATORS), or None."""
    for sep in common.SEPARATORS:
        s = re.escape(sep)
        for l in lines:
            if l.lstrip().startswith("#") or l.count(sep) < 6:
                continue
            if ("tma_" in l or "<not supported>" in l or "<not counted>" in l
                    or re.search(rf"{s}(?:task|cpu)-clock{s}", l)
                    or re.search(rf"{s}%\s+[a-z]\w*_bound\w*\s*$", l)):
                return sep
    return None


def detect(lines: list[str]) -> bool:
    return separator(lines) is not None


def _is_prefix(row: list[str], k: int) -> bool:
    p = row[k].strip()
    return bool(re.fullmatch(common.TS, p) or re.fullmatch(r"\d+\.\d+", p)
                or re.fullmatch(common.AGG, p)
                or (k and re.fullmatch(common.AGG, row[k - 1].strip()) and re.fullmatch(r"\d+", p)))


def _prefix(fields: list[str], source: str, lineno: int) -> tuple[float | None, str | None]:
    """Interval timestamp and aggregation scope from the fields before the counter's."""
    ts, agg = None, None
    for p in (f.strip() for f in fields):
        if re.fullmatch(common.TS, p) or re.fullmatch(r"\d+\.\d+", p):
            ts = common.timestamp(p, source, lineno)
        elif re.fullmatch(common.AGG, p):
            agg = p
        elif not re.fullmatch(r"\d+", p):   # digits: how many CPUs were aggregated
            raise TmaParseError(source, lineno, f"unexpected leading CSV field {p!r}")
    return ts, agg


def _join_decimals(row: list[str]) -> list[str]:
    """A counter row of -x, in a decimal-comma locale, its split numbers joined: the
    share "100,00" (runtime, then 1-3 digits, then exactly 2: perf prints it %.2f) and
    a value with a fraction ("2011,70": digits, then 2 digits where the unit would be,
    and a unit is never digits)."""
    if len(row) < 8 or not (re.fullmatch(r"\d+", row[-5].strip()) and
                            re.fullmatch(r"\d{1,3}", row[-4].strip()) and
                            re.fullmatch(r"\d\d", row[-3].strip())):
        return row
    row = row[:-4] + [f"{row[-4]},{row[-3]}"] + row[-2:]
    k = 0
    while k < len(row) - 7 and _is_prefix(row, k):
        k += 1
    if k + 1 < len(row) - 5 and re.fullmatch(r"\d+", row[k].strip()) \
            and re.fullmatch(r"\d\d", row[k + 1].strip()):
        row = row[:k] + [f"{row[k]},{row[k + 1]}"] + row[k + 2:]
    return row


def _split(row: list[str]) -> tuple[list[str], list[str]]:
    """(prefix fields, the seven counter fields). perf writes fields unquoted, so an event
    name holding the separator (AMD's cpu/de_no_dispatch_per_slot.no_ops_from_frontend,
    cmask=0x6/) spreads over two: the last four fields and the leading -I/-A ones are
    fixed, and whatever lies between value+unit and the last four is the event."""
    if len(row) <= 7:
        return row[:-7], row[-7:]
    k = 0
    while k < len(row) - 7 and _is_prefix(row, k):
        k += 1
    head, body, tail = row[:k], row[k:-4], row[-4:]
    return head, [body[0], body[1], ",".join(body[2:])] + tail


def _rows(text: str, source: str, res: TmaResult | None
          ) -> Iterator[tuple[int, float | None, str | None, list[str]]]:
    """(line, interval, aggregation, the seven counter fields) of every row; other lines
    are kept as notes in `res`."""
    lines = text.splitlines()
    sep = separator(lines) or ","
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            if res is not None:
                common.note(res, lineno, line)
            continue
        row = next(csv.reader([line], delimiter=sep))
        if len(row) < 7:
            if "tma_" in line and " " not in row[0]:
                raise TmaParseError(source, lineno, f"truncated perf CSV row ({len(row)} fields, "
                                    f"expected 7): {line.strip()!r}")
            if res is not None:
                common.note(res, lineno, line)
            continue
        if sep == ",":
            row = _join_decimals(row)
        head, fields = _split(row)
        ts, agg = _prefix(head, source, lineno)
        yield lineno, ts, agg, [x.strip() for x in fields]


def parse(text: str, source: str, catalog: Catalog) -> TmaResult:
    res = TmaResult(source=source, fmt="perf-csv", catalog=catalog)
    values = common.PerfValues(res, catalog)
    group_pcnt: float | None = None
    group_scope: str | None = None
    counter_pcnt: float | None = None     # a continuation metric's is its counter's
    comma = False                         # a decimal-comma locale: metric values are cut
    for lineno, ts, agg, fields in _rows(text, source, res):
        value, unit, event, runtime, pcnt, mval, munit = fields
        tm = re.fullmatch(rf"%\s+({common.METRIC_NAME})", munit)
        tm = tm if tm and common.is_tma_name(tm.group(1), catalog) else None
        # Rows without a counter value shift runtime/pcnt into fields 2-3 (perf 6.5+):
        # group ",<runtime>,<pcnt>,,,,TopdownL1" and metric ",<runtime>,<pcnt>,,,<val>,<unit>".
        own_pcnt = None
        if not value and unit and event:
            own_pcnt = common.number(event, source, lineno, "pcnt-running")
            comma = comma or "," in event
        if value:
            counter_pcnt = common.number(pcnt, source, lineno, "pcnt-running") if pcnt else None
            comma = comma or "," in pcnt
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
    if comma and res.values:
        res.warnings.append(CUT_METRICS)
    return values.finish()


def counters(text: str, source: str) -> list[common.PerfCounter]:
    """Every counter row (one with a value), its numbers read in the file's locale."""
    out = []
    for lineno, ts, agg, fields in _rows(text, source, None):
        value, unit, event, _runtime, pcnt, mval, munit = fields
        if not value:
            continue
        count = None if value.startswith("<") else common.number(value, source, lineno, event)
        out.append(common.PerfCounter(
            lineno, ts, common.scope(agg, event), event, count, unit,
            common.number(pcnt, source, lineno, "pcnt-running") if pcnt else None,
            common.number(mval, source, lineno, "metric") if mval else None, munit))
    return out


FORMAT = Format("perf-csv", detect, parse)
