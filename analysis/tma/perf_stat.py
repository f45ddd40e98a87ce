"""perf stat output with tma_* metrics -> TmaResult (standard, -x, CSV, -j JSON).

perf names are flat (tma_mem_latency) and carry no domain; both come from the catalogue
in analysis.tma. Also recognises what perf prints on machines without a PMU, so the
caller gets NoPmuError instead of an empty tree.
"""
from __future__ import annotations

import csv
import json
import math
import re

from analysis.tma.model import NoPmuError, TmaParseError, TmaResult, TmaValue, by_perf_name

_TS = r"\d+\.\d{6,}"
_AGG = r"(?:CPU\d+|S\d+(?:-D\d+)?(?:-[CLN]\d+)?(?:-T\d+)?)"
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_TMA_METRIC = re.compile(
    rf"^#\s*(?P<val>{_NUMBER}|-?nan|-?inf)\s*%\s+(?P<name>tma_\w+)\s*$", re.I)
_PCT_TAIL = re.compile(r"\(\s*(?P<pct>\d+(?:\.\d+)?)\s*%\)\s*$")
_COUNTER = re.compile(
    rf"^\s*(?:(?P<ts>{_TS})\s+)?(?:(?P<agg>{_AGG})(?:\s+\d+)?\s+)?"
    r"(?P<count>[\d,]+(?:\.\d+)?|<not supported>|<not counted>)\s+"
    r"(?:(?:msec|ns|us|ms|Joules|MiB|W)\s+)?(?P<event>\S+)\s*$")
_GROUP = re.compile(rf"^\s*(?:(?P<ts>{_TS})\s+)?(?:(?P<agg>{_AGG})(?:\s+\d+)?\s+)?"
                    r"(?P<group>[A-Za-z][\w-]*)(?:\s*\((?P<pmu>cpu_\w+)\))?\s*$")
_CONT = re.compile(rf"^\s*(?:(?P<ts>{_TS})\s+)?(?:(?P<agg>{_AGG})(?:\s+\d+)?\s+)?$")
_HYBRID = re.compile(r"^(cpu_core|cpu_atom)/")
_GROUP_NAME = re.compile(r"^(?P<group>[A-Za-z][\w-]*)(?:\s*\((?P<pmu>cpu_\w+)\))?$")


# ---------------------------------------------------------------- format sniffing
def looks_like_perf_list(lines: list[str]) -> bool:
    return any(re.search(r"\[(?:Software|Tool|Kernel PMU|Hardware) event\]|List of pre-defined events", l)
               for l in lines[:200])


def looks_like_csv(body: list[str]) -> bool:
    for l in body:
        if l.count(",") >= 6 and ("tma_" in l or "<not supported>" in l or re.search(r",(?:task|cpu)-clock,", l)):
            return True
    return False


def looks_like_std(lines: list[str]) -> bool:
    return any("Performance counter stats for" in l or "perf stat" in l
               or re.search(r"#\s*\S+\s*%\s+tma_\w+", l) or re.match(r"^\s*<not supported>\s+\S+", l)
               for l in lines)


# ---------------------------------------------------------------- no PMU
_NO_PMU_PATTERNS = [
    (re.compile(r"Cannot find PMU [`'](?P<ev>[^`']+)'.*Missing kernel support\?"),
     "perf could not open the TMA events ('Cannot find PMU `{ev}'. Missing kernel support?')"
     " and silently fell back to its default events"),
    (re.compile(r"top down event configuration requires system-wide mode \(-a\)"),
     "perf stat --topdown refused to run ('top down event configuration requires "
     "system-wide mode (-a)'); --topdown needs -a and topdown-capable PMU events"),
    (re.compile(r"No supported events found|topdown events not supported"),
     "perf found no supported events"),
    (re.compile(r"<not supported>[\s,]+(?:cpu_core/|cpu_atom/)?(?P<ev>cycles|instructions|TOPDOWN\.SLOTS|topdown-[\w-]+|slots)\b"),
     "perf reports '<not supported>' for the hardware counter '{ev}'"),
    (re.compile(r'"counter-value"\s*:\s*"<not supported>".*"event"\s*:\s*"(?:cpu_core/|cpu_atom/)?'
                r'(?P<ev>cycles|instructions|TOPDOWN\.SLOTS|topdown-[\w-]+|slots)\b'),
     "perf reports '<not supported>' for the hardware counter '{ev}'"),
]


def check_no_pmu(stdout: str, stderr: str, rc: int, source: str) -> None:
    """Raise NoPmuError if the captured streams show perf ran without a hardware PMU."""
    for stream_name, text in (("stderr", stderr), ("output", stdout)):
        for lineno, line in enumerate(text.splitlines(), 1):
            for pat, msg in _NO_PMU_PATTERNS:
                m = pat.search(line)
                if m:
                    evidence = msg.format(**m.groupdict())
                    raise NoPmuError(source, None, f"{evidence} ({stream_name} line {lineno}, "
                                     f"exit code {rc})")


# ---------------------------------------------------------------- shared
class _Collector:
    """Builds TmaValues; later duplicates (same node/scope/interval) replace earlier ones."""

    def __init__(self, res: TmaResult):
        self.res = res
        self.index: dict[tuple, int] = {}

    def add(self, name: str, value: float | None, lineno: int, scope: str | None,
            interval: float | None, multiplex: float | None = None,
            threshold: str | None = None) -> TmaValue:
        cat = by_perf_name(name)
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


def _float(text: str, source: str, lineno: int, what: str) -> float | None:
    t = str(text).strip().strip('"')
    if t == "" or t.lower() in ("nan", "-nan"):
        return None
    try:
        f = float(t.replace(",", "")) if re.fullmatch(r"[-+]?[\d,]*\.?\d+(?:[eE][-+]?\d+)?|[-+]?inf", t) else None
    except ValueError:
        f = None
    if f is None:
        raise TmaParseError(source, lineno, f"{what}: {t!r} is not a number")
    return None if math.isnan(f) else f


def _scope(agg: str | None, event: str | None) -> str | None:
    m = _HYBRID.match(event or "")
    if agg and m:
        return f"{agg}/{m.group(1)}"
    return agg or (m.group(1) if m else None)


def parse(text: str, source: str, fmt: str) -> TmaResult:
    res = TmaResult(source=source, fmt=fmt)
    if fmt == "perf":
        _parse_std(text, source, _Collector(res))
    elif fmt == "perf-csv":
        _parse_csv(text, source, _Collector(res))
    elif fmt == "perf-json":
        _parse_json(text, source, _Collector(res))
    else:
        raise ValueError(fmt)
    return res


def _note(res: TmaResult, lineno: int, line: str) -> None:
    res.notes.append(f"line {lineno}: {line.strip()}")
    if re.search(r"\bperf stat\b", line):
        res.commands.append(line.strip().lstrip("$ ").strip())


# ---------------------------------------------------------------- standard output
def _parse_std(text: str, source: str, col: _Collector) -> None:
    res = col.res
    scope: str | None = None
    pending: list[TmaValue] = []   # metrics waiting for the counter's "(xx.xx%)"

    def end_block() -> None:
        pending.clear()

    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            end_block()
            continue
        if line.startswith("#") or line.strip() == "(...)":
            end_block()
            _note(res, lineno, line)
            continue
        pct = None
        body = line.rstrip()
        m = _PCT_TAIL.search(body)
        if m:
            pct = float(m.group("pct"))
            body = body[:m.start()].rstrip()
        left, hash_, metric = body.partition("#")
        ts = None
        if (m := _COUNTER.match(left)) is not None:
            end_block()
            scope = _scope(m.group("agg"), m.group("event"))
            ts = m.group("ts")
        elif hash_ and (m := _CONT.match(left)) is not None:
            ts = m.group("ts")
            if m.group("agg"):
                scope = m.group("agg")
        elif hash_ and (m := _GROUP.match(left)) is not None:
            end_block()
            scope = _scope(m.group("agg"), (m.group("pmu") + "/") if m.group("pmu") else None)
            ts = m.group("ts")
        else:
            if "tma_" in line:
                raise TmaParseError(source, lineno, f"malformed perf stat line: {line.strip()!r}")
            _note(res, lineno, line)
            continue
        if hash_ and "tma_" in metric:
            mm = _TMA_METRIC.match("#" + metric.rstrip())
            if not mm:
                raise TmaParseError(source, lineno, "malformed tma_ metric (expected "
                                    f"'# <value> %  tma_<name>'): {line.strip()!r}")
            val = _float(mm.group("val"), source, lineno, mm.group("name"))
            v = col.add(mm.group("name"), val, lineno, scope, float(ts) if ts else None)
            pending.append(v)
        if pct is not None:
            for v in pending:
                v.multiplex = pct
            pending.clear()
    col.finish()


# ---------------------------------------------------------------- -x, CSV
def _parse_csv(text: str, source: str, col: _Collector) -> None:
    res = col.res
    group_pcnt: float | None = None
    group_scope: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            _note(res, lineno, line)
            continue
        row = next(csv.reader([line]))
        if len(row) < 7:
            if "tma_" in line and " " not in row[0]:
                raise TmaParseError(source, lineno, f"truncated perf CSV row ({len(row)} fields, "
                                    f"expected 7): {line.strip()!r}")
            _note(res, lineno, line)
            continue
        prefix, f = row[:-7], [x.strip() for x in row[-7:]]
        ts, agg = None, None
        for p in prefix:
            p = p.strip()
            if re.fullmatch(_TS, p) or re.fullmatch(r"\d+\.\d+", p):
                ts = float(p)
            elif re.fullmatch(_AGG, p):
                agg = p
            elif re.fullmatch(r"\d+", p):
                continue  # number of CPUs aggregated (--per-core/--per-socket)
            else:
                raise TmaParseError(source, lineno, f"unexpected leading CSV field {p!r}")
        value, unit, event, runtime, pcnt, mval, munit = f
        tm = re.fullmatch(r"%\s+(tma_\w+)", munit)
        gm = _GROUP_NAME.match(munit)
        # Rows without a counter value shift runtime/pcnt into fields 2-3 (perf 6.5+):
        # group ",<runtime>,<pcnt>,,,,TopdownL1" and metric ",<runtime>,<pcnt>,,,<val>,<unit>".
        own_pcnt = None
        if not value and unit and event:
            own_pcnt = _float(event, source, lineno, "pcnt-running")
        if tm:
            if value:
                mux = _float(pcnt, source, lineno, "pcnt-running") if pcnt else None
                scope = _scope(agg, event)
            elif own_pcnt is not None:
                mux, scope = own_pcnt, group_scope
            else:
                mux, scope = group_pcnt, group_scope
            col.add(tm.group(1), _float(mval, source, lineno, tm.group(1)), lineno,
                    scope or agg, ts, mux)
        elif gm and not value and not mval:
            group_pcnt = own_pcnt
            group_scope = _scope(agg, (gm.group("pmu") + "/") if gm.group("pmu") else None)
        else:
            group_pcnt, group_scope = None, None
    col.finish()


# ---------------------------------------------------------------- -j JSON
def _json_scope(obj: dict) -> str | None:
    if "cpu" in obj:
        return f"CPU{obj['cpu']}"
    for k in ("thread", "core", "die", "socket", "node", "cluster"):
        if k in obj:
            return str(obj[k])
    return None


def _parse_json(text: str, source: str, col: _Collector) -> None:
    res = col.res
    ctx_pcnt: float | None = None
    ctx_scope: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("{"):
            _note(res, lineno, line)   # "# started on ...", stderr messages
            continue
        # perf 6.13 prints counter-only objects as `..., "pcnt-running" : 100.00, }`.
        fixed = re.sub(r",\s*}\s*$", "}", s)
        try:
            obj = json.loads(fixed)
        except json.JSONDecodeError as e:
            raise TmaParseError(source, lineno, f"invalid JSON ({e.msg} at column {e.colno}); "
                                "the line is cut short or not perf -j output") from None
        if not isinstance(obj, dict):
            raise TmaParseError(source, lineno, "expected one JSON object per line")
        agg = _json_scope(obj)
        if "metricgroup" in obj:
            gm = _GROUP_NAME.match(str(obj["metricgroup"]))
            ctx_scope = _scope(agg, (gm.group("pmu") + "/") if gm and gm.group("pmu") else None)
        elif "event" in obj:
            ctx_scope = _scope(agg, str(obj["event"]))
        if "pcnt-running" in obj:
            ctx_pcnt = _float(obj["pcnt-running"], source, lineno, "pcnt-running")
        unit = str(obj.get("metric-unit", ""))
        tm = re.fullmatch(r"%\s+(tma_\w+)", unit.strip())
        if not tm:
            continue
        if "metric-value" not in obj:
            raise TmaParseError(source, lineno, f"{tm.group(1)} has no metric-value")
        val = _float(obj["metric-value"], source, lineno, tm.group(1))
        interval = _float(obj["interval"], source, lineno, "interval") if "interval" in obj else None
        col.add(tm.group(1), val, lineno, ctx_scope or agg, interval, ctx_pcnt,
                obj.get("metric-threshold"))
    col.finish()
