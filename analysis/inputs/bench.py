"""Throughput and latency from the load generator's raw outputs: the one parser of each
format, used by the collectors (right after saving the raw file) and by analysis.

Collectors save what the tool printed (bench.csv / bench.txt / bench.json); this module
reads it back. Throughput is in operations (requests) per second, latencies in
milliseconds, as both redis-benchmark and memtier_benchmark print them.

Formats:
- `redis-benchmark --csv`: 7.x/8.x header
  "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
  "p99_latency_ms","max_latency_ms"; 6.x has only "test","rps".
- redis-benchmark plain output: per test a "====== NAME ======" block ending in
  "throughput summary: N requests per second" and a latency summary table
  (avg min p50 p95 p99 max, msec); `-q` prints "NAME: N requests per second, p50=X msec".
  Progress lines end in carriage returns and are ignored.
- memtier_benchmark --json-out-file: "ALL STATS" -> "Totals" -> "Ops/sec", "Latency" or
  "Average Latency" (ms), "Min Latency", "Max Latency", "Percentile Latencies" ->
  {"p50.00": ms, ...}. (Implemented from memtier's documented output; no real memtier
  file is in tests/data, see tests/data/SOURCES.md.)
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import UserError
from analysis.inputs.layout import BENCH_CSV, BENCH_JSON, BENCH_TXT

LATENCY_KEYS = ("avg", "min", "p50", "p95", "p99", "max")


class ThroughputError(UserError, ValueError):
    """A load-generator output we cannot read; the message starts with file[:line]."""


@dataclass
class RepThroughput:
    ops_per_sec: float                    # operations (requests) per second
    latency_ms: dict[str, float] = field(default_factory=dict)   # avg/min/p50/p95/p99/max, ms
    test: str = ""                        # e.g. "SET", "MSET (10 keys)", "Totals"
    source: str = ""                      # the file parsed


def _num(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ThroughputError(f"{where}: {text!r} is not a number") from None


def parse_redis_benchmark_csv(path: str | Path) -> list[RepThroughput]:
    """One RepThroughput per test row of a `redis-benchmark --csv` output file."""
    p = Path(path)
    return parse_redis_benchmark_csv_text(_read(p), str(p))


def parse_redis_benchmark_csv_text(text: str, source: str = BENCH_CSV) -> list[RepThroughput]:
    """The same, from text in memory (`source` names it in errors)."""
    p = source
    rows = list(csv.reader(text.splitlines()))
    rows = [(i + 1, r) for i, r in enumerate(rows) if r and any(c.strip() for c in r)]
    if not rows:
        raise ThroughputError(f"{p}: empty; expected redis-benchmark --csv output")
    (hline, header), body = rows[0], rows[1:]
    header = [h.strip() for h in header]
    if header[:2] != ["test", "rps"]:
        raise ThroughputError(f"{p}:{hline}: expected a header starting \"test\",\"rps\", got {header[:3]}")
    col = {name: i for i, name in enumerate(header)}
    out = []
    for lineno, r in body:
        if len(r) != len(header):
            raise ThroughputError(f"{p}:{lineno}: {len(r)} fields, header has {len(header)}")
        where = f"{p}:{lineno}"
        lat = {k: _num(r[col[f"{k}_latency_ms"]], where)
               for k in LATENCY_KEYS if f"{k}_latency_ms" in col}
        out.append(RepThroughput(_num(r[col["rps"]], where), lat, r[0], str(p)))
    if not out:
        raise ThroughputError(f"{p}: header only, no test rows (did the benchmark fail?)")
    return out


_BLOCK = re.compile(r"^====== (.+) ======\s*$")
_SUMMARY = re.compile(r"throughput summary:\s*([\d.]+) requests per second")
_QUIET = re.compile(r"^(.+?): ([\d.]+) requests per second(?:, p50=([\d.]+) msec)?\s*$")
_OLD = re.compile(r"^\s*([\d.]+) requests per second\s*$")


def parse_redis_benchmark_text(path: str | Path) -> list[RepThroughput]:
    """Tests from redis-benchmark's plain (or -q) output, in order."""
    p = Path(path)
    # progress updates are rewritten in place with \r: only the text after the last \r counts
    lines = [ln.split("\r")[-1] for ln in _read(p).split("\n")]
    out: list[RepThroughput] = []
    test = ""
    lat_header: list[str] | None = None
    for i, line in enumerate(lines, 1):
        m = _BLOCK.match(line)
        if m:
            test, lat_header = m.group(1), None
            continue
        m = _SUMMARY.search(line)
        if m:
            out.append(RepThroughput(_num(m.group(1), f"{p}:{i}"), {}, test, str(p)))
            continue
        if "latency summary" in line:
            lat_header = []
            continue
        if lat_header == [] and line.split() and all(w in LATENCY_KEYS for w in line.split()):
            lat_header = line.split()
            continue
        if lat_header and out and line.split():
            vals = line.split()
            if len(vals) == len(lat_header):
                out[-1].latency_ms = {k: _num(v, f"{p}:{i}") for k, v in zip(lat_header, vals)}
            lat_header = None
            continue
        m = _QUIET.match(line)
        if m and not line.startswith(" "):
            lat = {"p50": _num(m.group(3), f"{p}:{i}")} if m.group(3) else {}
            out.append(RepThroughput(_num(m.group(2), f"{p}:{i}"), lat, m.group(1), str(p)))
            continue
        m = _OLD.match(line)     # 6.x and older: "NNN requests per second" closes a block
        if m and test:
            out.append(RepThroughput(_num(m.group(1), f"{p}:{i}"), {}, test, str(p)))
    if not out:
        raise ThroughputError(f"{p}: no 'requests per second' figure found; is this redis-benchmark output?")
    return out


_MEMTIER_LAT = {"Latency": "avg", "Average Latency": "avg", "Min Latency": "min", "Max Latency": "max"}


def parse_memtier_json(path: str | Path) -> list[RepThroughput]:
    """Totals and per-command rows of a memtier_benchmark --json-out-file."""
    p = Path(path)
    try:
        doc = json.loads(_read(p))
    except json.JSONDecodeError as e:
        raise ThroughputError(f"{p}:{e.lineno}: malformed JSON: {e.msg}") from None
    stats = doc.get("ALL STATS") if isinstance(doc, dict) else None
    if not isinstance(stats, dict) or "Totals" not in stats:
        raise ThroughputError(f"{p}: no \"ALL STATS\" -> \"Totals\"; is this a memtier --json-out-file?")
    out = []
    # Totals first: it is what a single-command case reports
    for name in ["Totals"] + [k for k in stats if k != "Totals"]:
        row = stats[name]
        if not isinstance(row, dict) or "Ops/sec" not in row:
            continue
        where = f"{p}: \"{name}\""
        lat = {short: _num(str(row[k]), f"{where} {k}") for k, short in _MEMTIER_LAT.items()
               if k in row}
        for k, v in (row.get("Percentile Latencies") or {}).items():
            m = re.fullmatch(r"p?(\d+(?:\.\d+)?)", k)
            if m and isinstance(v, (int, float)):
                q = float(m.group(1))
                lat[f"p{q:g}"] = float(v)
        out.append(RepThroughput(_num(str(row["Ops/sec"]), f"{where} Ops/sec"), lat, name, str(p)))
    if not out:
        raise ThroughputError(f"{p}: no \"Ops/sec\" in \"ALL STATS\" -> \"Totals\" or any command row")
    return out


def load_rep(rep_dir: str | Path, test: str | None = None) -> RepThroughput:
    """The throughput of one rep: bench.csv, else bench.json, else bench.txt.

    With several tests in the file, `test` picks one (case-insensitive); without it the
    file must hold one test (or memtier's Totals is used)."""
    d = Path(rep_dir)
    for name, parser in ((BENCH_CSV, parse_redis_benchmark_csv), (BENCH_JSON, parse_memtier_json),
                         (BENCH_TXT, parse_redis_benchmark_text)):
        f = d / name
        if f.is_file():
            rows = parser(f)
            if test is not None:
                hits = [r for r in rows if r.test.lower() == test.lower()]
                if not hits:
                    raise ThroughputError(f"{f}: no test {test!r} (has {[r.test for r in rows]})")
                return hits[0]
            if name == BENCH_JSON or len(rows) == 1:
                return rows[0]
            raise ThroughputError(f"{f}: {len(rows)} tests ({[r.test for r in rows]}); say which with test=")
    raise ThroughputError(f"{d}: no bench.csv, bench.json or bench.txt (was the rep run?)")


def _read(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ThroughputError(f"{p}: no such file") from None
