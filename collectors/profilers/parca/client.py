"""Parca query client: the merged CPU profile of a process for a time window.

Users run parca-agent continuously (a service, with external labels) sending to a Parca
server or Polar Signals Cloud; stallscope does not reinvent that. It asks Parca's REST
gateway for the merged profile of a window:

  GET {url}/api/profiles/query?mode=MODE_MERGE
      &merge.query=parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server"}
      &merge.start=2026-11-21T22:56:47Z&merge.end=2026-11-21T22:57:17Z   (RFC 3339, UTC)
      &reportType=REPORT_TYPE_PPROF
  -> {"pprof": base64(gzipped profile.proto), "total": "...", "filtered": "..."}

Requests go through collectors/http_client.py (a GET answered 502/503/504 or 429 is tried
again; the bearer token is not sent on to another origin by a redirect).

Quirks of real responses (tests/data/fixtures/parca):
  - REPORT_TYPE_PPROF answers "total": "0" even when the profile has samples, so the
    empty-window check decodes the pprof and counts its samples instead.
  - REPORT_TYPE_TOP: values are nanoseconds; the response's "total" is the profile total
    (the nested top.total is not: 1.46 s against 14.3 s of samples), and an unsymbolised
    [kernel.kallsyms] row can have cumulative > total (recursive kernel frames counted
    once per occurrence). Such rows are clamped to the total and flagged `clamped`.
"""
from __future__ import annotations

import base64
import gzip
import json
import os
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from analysis.errors import Failed
from analysis.profile import profile_pb2
from collectors.http_client import Unreachable, read_token, send

DEFAULT_TYPE = "parca_agent:samples:count:cpu:nanoseconds:delta"
DEFAULT_URL_ENV = "STALLSCOPE_PARCA_URL"
TOKEN_ENV = "STALLSCOPE_PARCA_TOKEN"
REPORTS = {"pprof": "REPORT_TYPE_PPROF", "top": "REPORT_TYPE_TOP"}


class ParcaError(Failed):
    """A query that did not give a profile; the message says why and what to do."""


# --------------------------------------------------------------------------------------
# Small pure helpers.

def rfc3339(t: float | datetime) -> str:
    """Epoch seconds or datetime -> '2026-11-21T22:56:47Z' (what the gateway parses)."""
    if isinstance(t, datetime):
        dt = t.astimezone(timezone.utc) if t.tzinfo else t.replace(tzinfo=timezone.utc)
    else:
        dt = datetime.fromtimestamp(t, tz=timezone.utc)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> datetime:
    """RFC 3339 ('...Z' or with offset) or epoch seconds -> aware datetime."""
    s = s.strip()
    try:
        return datetime.fromtimestamp(float(s), tz=timezone.utc)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ParcaError(f"time {s!r}: expected RFC 3339 (2026-11-21T22:56:47Z) or epoch seconds") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def read_window_file(path: str | Path) -> tuple[datetime, datetime]:
    """A window file of `T0=...` / `T1=...` lines (as fixtures/parca/window.txt)."""
    vals: dict[str, datetime] = {}
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise ParcaError(f"{p}: cannot read window file: {e.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, val = line.partition("=")
        if not sep or key.strip() not in ("T0", "T1"):
            raise ParcaError(f"{p}:{n}: expected T0=<time> or T1=<time>, found {line.strip()!r}")
        try:
            vals[key.strip()] = parse_time(val)
        except ParcaError as e:
            raise ParcaError(f"{p}:{n}: {e}") from None
    if set(vals) != {"T0", "T1"}:
        raise ParcaError(f"{p}: needs both T0= and T1= lines")
    return vals["T0"], vals["T1"]


def _quote(v: str) -> str:
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def selector(labels: dict[str, str], profile_type: str = DEFAULT_TYPE) -> str:
    """`type{k="v",...}`: Parca's query language (Prometheus-style matchers)."""
    inner = ",".join(f"{k}={_quote(v)}" for k, v in labels.items())
    return f"{profile_type}{{{inner}}}"


@dataclass
class TopRow:
    name: str            # function name ("" symbols: mapping file + address)
    file: str            # mapping (binary) file
    flat_ns: int
    cum_ns: int
    clamped: bool = False  # cumulative > total in the response; clamped to total


@dataclass
class TopReport:
    total_ns: int
    rows: list[TopRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def share(self, name: str) -> tuple[float, float]:
        """(flat, cumulative) share of the total for a function, summed over its rows
        (cumulative: the largest row, since rows of one function overlap in stacks)."""
        rows = [r for r in self.rows if r.name == name]
        if not rows or not self.total_ns:
            return 0.0, 0.0
        return (sum(r.flat_ns for r in rows) / self.total_ns,
                max(r.cum_ns for r in rows) / self.total_ns)


def top_report(resp: dict[str, Any]) -> TopReport:
    """Flat/cumulative ns per function from a REPORT_TYPE_TOP response."""
    top = resp.get("top")
    if not isinstance(top, dict) or not isinstance(top.get("list"), list):
        raise ParcaError("response has no top.list: was it asked with reportType=REPORT_TYPE_TOP?")
    rows = []
    for r in top["list"]:
        meta = r.get("meta") or {}
        fn = meta.get("function") or {}
        mapping = meta.get("mapping") or {}
        loc = meta.get("location") or {}
        name = fn.get("name") or fn.get("systemName") or ""
        file = mapping.get("file") or ""
        if not name:
            addr = int(loc.get("address") or 0)
            name = f"{file or '?'}+0x{addr:x}"
        rows.append(TopRow(name, file, int(r.get("flat") or 0), int(r.get("cumulative") or 0)))
    total = int(resp.get("total") or 0) or sum(r.flat_ns for r in rows)
    rep = TopReport(total, rows)
    for r in rows:
        if r.cum_ns > total:
            rep.notes.append(f"{r.name} ({r.file}): cumulative {r.cum_ns} ns > total {total} ns "
                             f"as Parca reported it; clamped to the total")
            r.cum_ns, r.clamped = total, True
    rows.sort(key=lambda r: (-r.flat_ns, -r.cum_ns, r.name))
    return rep


def pprof_bytes(resp: dict[str, Any]) -> bytes:
    """The gzipped profile.proto carried (base64) in a REPORT_TYPE_PPROF response."""
    b64 = resp.get("pprof")
    if not isinstance(b64, str) or not b64:
        raise ParcaError("response has no 'pprof' field: was it asked with reportType=REPORT_TYPE_PPROF?")
    try:
        data = base64.b64decode(b64, validate=True)
    except ValueError as e:
        raise ParcaError(f"response 'pprof' is not base64: {e}") from None
    if data[:2] != b"\x1f\x8b":
        data = gzip.compress(data)  # pprof files are conventionally gzipped
    return data


def pprof_sample_count(data: bytes) -> int:
    prof = profile_pb2.Profile()
    prof.ParseFromString(gzip.decompress(data))
    return len(prof.sample)


# --------------------------------------------------------------------------------------
# The client.

@dataclass
class ParcaClient:
    url: str
    token: str | None = field(default=None, repr=False)     # never in a log or a message
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, url: str | None = None, token_file: str | None = None) -> "ParcaClient":
        """URL from the argument or $STALLSCOPE_PARCA_URL; the token from `token_file` or
        $STALLSCOPE_PARCA_TOKEN, never from a command-line word (ps shows those)."""
        url = url or os.environ.get(DEFAULT_URL_ENV)
        if not url:
            raise ParcaError(f"no Parca URL: pass --parca-url URL or set {DEFAULT_URL_ENV}")
        return cls(url.rstrip("/"), read_token(token_file, (TOKEN_ENV,), "Parca", ParcaError))

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        qs = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        full = f"{self.url.rstrip('/')}{path}" + (f"?{qs}" if qs else "")
        headers = {"Accept": "application/json", **({"Authorization": f"Bearer {self.token}"} if self.token else {})}
        try:
            reply = send("GET", full, headers=headers, timeout=self.timeout_s)
        except Unreachable as e:
            if e.timed_out:
                raise ParcaError(f"Parca at {self.url} did not answer within {self.timeout_s:g} s") from None
            raise ParcaError(f"cannot reach Parca at {self.url}: {e.reason}; is the server "
                             f"running? set --parca-url (or {DEFAULT_URL_ENV})") from None
        if not 200 <= reply.status < 300:
            raise _HttpError(reply.status, _error_text(reply.body))
        body = reply.body
        try:
            return json.loads(body)
        except json.JSONDecodeError as e:
            raise ParcaError(f"Parca at {self.url}{path} answered non-JSON ({e.msg} at byte {e.pos}): "
                             f"{body[:120]!r}") from None

    def profile_types(self) -> list[str]:
        d = self._get_checked("/api/profiles/types", {})
        out = []
        for t in d.get("types", []):
            name = ":".join(str(t.get(k, "")) for k in ("name", "sampleType", "sampleUnit",
                                                         "periodType", "periodUnit"))
            out.append(name + (":delta" if t.get("delta") else ""))
        return out

    def _get_checked(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        try:
            return self._get(path, params)
        except _HttpError as e:
            raise ParcaError(f"Parca at {self.url}{path} answered HTTP {e.code}: {e.text}") from None

    def query(self, query: str, t0: float | datetime, t1: float | datetime,
              report: str = "pprof") -> dict[str, Any]:
        """Merged profile for `query` between t0 and t1; raw response JSON."""
        if report not in REPORTS:
            raise ParcaError(f"report {report!r}: choose one of {', '.join(REPORTS)}")
        params = {"mode": "MODE_MERGE", "merge.query": query, "merge.start": rfc3339(t0),
                  "merge.end": rfc3339(t1), "reportType": REPORTS[report]}
        try:
            resp = self._get("/api/profiles/query", params)
        except _HttpError as e:
            msg = f"Parca rejected {query} between {rfc3339(t0)} and {rfc3339(t1)}: HTTP {e.code}: {e.text}"
            try:
                types = self.profile_types()
                msg += f". Profile types this server has: {', '.join(types) or 'none'}"
            except ParcaError as e2:
                msg += f". (Listing the profile types failed too: {e2})"
            raise ParcaError(msg) from None
        empty = f"no samples for {query} between {rfc3339(t0)} and {rfc3339(t1)}: is parca-agent running and sending to this server?"
        if report == "top":
            if not int(resp.get("total") or 0) and not (resp.get("top") or {}).get("list"):
                raise ParcaError(empty)
        else:
            if pprof_sample_count(pprof_bytes(resp)) == 0:
                raise ParcaError(empty)
        return resp


class _HttpError(Exception):
    def __init__(self, code: int, text: str):
        super().__init__(f"HTTP {code}: {text}")
        self.code, self.text = code, text


def _error_text(body: bytes) -> str:
    """grpc-gateway errors are {"code":N,"message":"..."}; show the message."""
    try:
        d = json.loads(body)
        if isinstance(d, dict) and d.get("message"):
            return str(d["message"])
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    return body.decode("utf-8", "replace").strip()[:500] or "(empty body)"
