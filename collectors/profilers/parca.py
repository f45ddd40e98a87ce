"""Parca query client: the merged CPU profile of the server for a rep's window.

Users run parca-agent continuously (a service, with external labels) sending to a Parca
server or Polar Signals Cloud; stallscope does not reinvent that. Per rep it records the
wall-clock window (t0, t1) and the labels, and afterwards asks Parca's REST gateway for
the merged profile of that window:

  GET {url}/api/profiles/query?mode=MODE_MERGE
      &merge.query=parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server"}
      &merge.start=2026-11-21T22:56:47Z&merge.end=2026-11-21T22:57:17Z   (RFC 3339, UTC)
      &reportType=REPORT_TYPE_PPROF
  -> {"pprof": base64(gzipped profile.proto), "total": "...", "filtered": "..."}

Quirks of real responses (../shared/fixtures/parca):
  - REPORT_TYPE_PPROF answers "total": "0" even when the profile has samples, so the
    empty-window check decodes the pprof and counts its samples instead.
  - REPORT_TYPE_TOP: values are nanoseconds; the response's "total" is the profile total
    (the nested top.total is not: 1.46 s against 14.3 s of samples), and an unsymbolised
    [kernel.kallsyms] row can have cumulative > total (recursive kernel frames counted
    once per occurrence). Such rows are clamped to the total and flagged `clamped`.
"""
from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field, asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

DEFAULT_TYPE = "parca_agent:samples:count:cpu:nanoseconds:delta"
DEFAULT_URL_ENV = "STALLSCOPE_PARCA_URL"
TOKEN_ENV = "STALLSCOPE_PARCA_TOKEN"
REPORTS = {"pprof": "REPORT_TYPE_PPROF", "top": "REPORT_TYPE_TOP"}


class ParcaError(Exception):
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
    from analysis.profile import profile_pb2
    prof = profile_pb2.Profile()
    prof.ParseFromString(gzip.decompress(data))
    return len(prof.sample)


# --------------------------------------------------------------------------------------
# The client.

@dataclass
class ParcaClient:
    url: str
    token: str | None = None
    timeout_s: float = 30.0

    @classmethod
    def from_env(cls, url: str | None = None, token: str | None = None) -> "ParcaClient":
        url = url or os.environ.get(DEFAULT_URL_ENV)
        if not url:
            raise ParcaError(f"no Parca URL: pass --parca-url URL or set {DEFAULT_URL_ENV}")
        return cls(url.rstrip("/"), token or os.environ.get(TOKEN_ENV) or None)

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        qs = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        full = f"{self.url.rstrip('/')}{path}" + (f"?{qs}" if qs else "")
        req = urllib.request.Request(full, headers={"Accept": "application/json"})
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            raise _HttpError(e.code, _error_text(e.read())) from None
        except urllib.error.URLError as e:
            why = getattr(e.reason, "strerror", None) or str(e.reason)
            raise ParcaError(f"cannot reach Parca at {self.url}: {why.lower()}; is the server "
                             f"running? set --parca-url (or {DEFAULT_URL_ENV})") from None
        except TimeoutError:
            raise ParcaError(f"Parca at {self.url} did not answer within {self.timeout_s:g} s") from None
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

    def label_values(self, label: str, t0: float | datetime, t1: float | datetime) -> list[str]:
        d = self._get_checked(f"/api/profiles/labels/{urllib.parse.quote(label)}/values",
                              {"start": rfc3339(t0), "end": rfc3339(t1)})
        return list(d.get("labelValues", []))

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


# --------------------------------------------------------------------------------------
# Per-rep collector (same shape as TmaCollector).

class ParcaProfileCollector:
    """Record the window and labels of each rep; afterwards fetch its merged profile.

    parca-agent ships samples in batches (about every 10 s), so `collect` waits until
    `settle_s` after the window's end before asking; a runner can instead call `collect`
    for all reps at the end of the run.
    """

    def __init__(self, client: ParcaClient, comm: str = "redis-server",
                 labels: dict[str, str] | None = None, profile_type: str = DEFAULT_TYPE,
                 settle_s: float = 15.0):
        self.client, self.comm, self.profile_type = client, comm, profile_type
        self.labels = dict(labels or {})
        self.settle_s = settle_s

    def preflight(self):
        from collectors.host.preflight import Finding, Preflight
        pf = Preflight("parca")
        try:
            types = self.client.profile_types()
        except ParcaError as e:
            pf.findings.append(Finding("parca", False, str(e),
                                       "start the Parca server and parca-agent (docs/tma-collection.md)",
                                       blocking=True))
            return pf
        want = self.profile_type
        pf.findings.append(Finding("parca", want in types,
                                   f"Parca at {self.client.url} has profile types: {', '.join(types) or 'none'}",
                                   None if want in types else f"is parca-agent sending {want} to this server?",
                                   blocking=want not in types))
        return pf

    def query_for(self, ctx) -> str:
        # Only labels the agent attaches (comm, its external labels) can select profiles;
        # the rep's own labels are recorded in parca.json, not queried.
        labels = {"comm": self.comm} if self.comm else {}
        labels.update(self.labels)
        return selector(labels, self.profile_type)

    def _meta_path(self, ctx) -> Path:
        return Path(ctx.rep_dir) / "parca.json"

    def start(self, ctx) -> None:
        Path(ctx.rep_dir).mkdir(parents=True, exist_ok=True)
        self._write(ctx, {"t0": time.time(), "t1": None, "query": self.query_for(ctx),
                          "labels": dict(getattr(ctx, "labels", None) or {}), "url": self.client.url,
                          "status": "recording"})

    def stop(self, ctx) -> dict[str, Any]:
        meta = self._read(ctx)
        meta.update(t1=time.time(), status="pending")
        self._write(ctx, meta)
        return {"status": "pending", "reason": "profile is fetched from Parca after the rep"}

    def collect(self, ctx, wait: bool = True) -> dict[str, Any]:
        """Fetch profile.pb.gz for the recorded window; returns the status for the manifest."""
        meta = self._read(ctx)
        if meta.get("t0") is None or meta.get("t1") is None:
            return {"status": "failed", "reason": f"{self._meta_path(ctx)}: window not recorded (start/stop not called)"}
        if wait:
            delay = meta["t1"] + self.settle_s - time.time()
            if delay > 0:
                time.sleep(delay)
        try:
            resp = self.client.query(meta["query"], meta["t0"], meta["t1"], "pprof")
            data = pprof_bytes(resp)
        except ParcaError as e:
            meta.update(status="unavailable", reason=str(e))
            self._write(ctx, meta)
            return {"status": "unavailable", "reason": str(e)}
        (Path(ctx.rep_dir) / "profile.pb.gz").write_bytes(data)
        meta.update(status="ok", reason=None, window=[rfc3339(meta["t0"]), rfc3339(meta["t1"])],
                    samples=pprof_sample_count(data), bytes=len(data))
        self._write(ctx, meta)
        return {"status": "ok", "reason": None, "file": "profile.pb.gz", "samples": meta["samples"]}

    def _read(self, ctx) -> dict[str, Any]:
        p = self._meta_path(ctx)
        return json.loads(p.read_text()) if p.exists() else {}

    def _write(self, ctx, meta: dict[str, Any]) -> None:
        self._meta_path(ctx).write_text(json.dumps(meta, indent=2) + "\n")


class ParcaRepCollector(ParcaProfileCollector):
    """The runner's RepCollector: stop() also fetches the profile (after settle_s)."""
    name = "parca"

    def stop(self, ctx) -> dict[str, Any]:
        super().stop(ctx)
        return self.collect(ctx, wait=True)


# --------------------------------------------------------------------------------------
# Runner plugin hooks (collectors/run.py PLUGIN_MODULES). The token is never a run flag:
# the manifest keeps the command line and options, so it comes from the environment or
# a file named on the command line.

PROFILERS = ("parca",)


def add_run_arguments(parser) -> None:
    g = parser.add_argument_group(
        "Parca profiles (--profile parca)",
        "profile reps record their window; the merged CPU profile of that window is fetched "
        "from Parca (parca-agent must run as a service) into <variant>/<rep>/profile.pb.gz")
    g.add_argument("--parca-url", help=f"Parca base URL (default ${DEFAULT_URL_ENV})")
    g.add_argument("--parca-token-file", metavar="PATH",
                   help=f"file holding the bearer token (default ${TOKEN_ENV}; never stored in the run)")
    g.add_argument("--parca-comm", default="redis-server",
                   help="process name to select (comm label; default redis-server, '' for none)")
    g.add_argument("--parca-label", action="append", default=[], metavar="K=V",
                   help="label the agent attaches (its --metadata-external-labels), repeatable")
    g.add_argument("--parca-settle", type=float, default=15.0, metavar="SECONDS",
                   help="wait after a window before querying, for the agent to ship (default 15)")


def client_from_options(options) -> ParcaClient:
    extra = getattr(options, "extra", None) or {}
    token = None
    if extra.get("parca_token_file"):
        p = Path(extra["parca_token_file"])
        try:
            token = p.read_text().strip()
        except OSError as e:
            raise ParcaError(f"{p}: cannot read the Parca token file: {e.strerror}") from None
    return ParcaClient.from_env(extra.get("parca_url"), token)


def rep_collectors(options, kind: str) -> list:
    if getattr(options, "profile", None) != "parca" or kind != "profile":
        return []
    extra = getattr(options, "extra", None) or {}
    labels = {}
    for kv in extra.get("parca_label") or []:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise ParcaError(f"--parca-label {kv!r}: expected KEY=VALUE")
        labels[k] = v
    return [ParcaRepCollector(client_from_options(options), comm=extra.get("parca_comm", "redis-server"),
                              labels=labels, settle_s=float(extra.get("parca_settle", 15.0)))]


def manifest_sections(options, host) -> dict[str, Any]:
    if getattr(options, "profile", None) != "parca":
        return {}
    # The "profiling" block is the runner's; say where profiles come from without the token.
    extra = getattr(options, "extra", None) or {}
    client = client_from_options(options)
    return {"profiling": {"profiler": "parca", "mode": "separate", "parca_url": client.url,
                          "comm": extra.get("parca_comm", "redis-server"),
                          "labels": list(extra.get("parca_label") or []),
                          "note": "merged CPU profile per profile rep, from Parca's query API"}}


# --------------------------------------------------------------------------------------
# CLI: python -m collectors parca

EPILOG = """examples:
  # merged CPU profile of redis-server for a window, saved as pprof
  python -m collectors parca --parca-url http://127.0.0.1:7070 \\
      --start 2026-11-21T22:56:47Z --end 2026-11-21T22:57:17Z --out profile.pb.gz

  # the same window from a T0=/T1= file, by stallscope labels, top functions (ns)
  STALLSCOPE_PARCA_URL=https://api.polarsignals.com STALLSCOPE_PARCA_TOKEN=... \\
  python -m collectors parca --window-file window.txt --label stallscope_variant=base --report top

  # what the server has
  python -m collectors parca --parca-url http://127.0.0.1:7070 --list-types
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m collectors parca", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fetch the merged CPU profile of a process for a time window from a Parca "
                    "server (or Polar Signals Cloud) and save it as pprof (profile.pb.gz), or print "
                    "the top functions by flat/cumulative CPU time (ns).")
    ap.add_argument("--parca-url", help=f"Parca base URL (default ${DEFAULT_URL_ENV})")
    ap.add_argument("--parca-token", help=f"bearer token (default ${TOKEN_ENV})")
    ap.add_argument("--comm", default="redis-server", help="process name label (default redis-server; '' for none)")
    ap.add_argument("--label", action="append", default=[], metavar="K=V", help="extra label matcher (repeatable)")
    ap.add_argument("--query", help="full Parca query, overrides --comm/--label/--type")
    ap.add_argument("--type", default=DEFAULT_TYPE, help=f"profile type (default {DEFAULT_TYPE})")
    ap.add_argument("--start", help="window start: RFC 3339 or epoch s")
    ap.add_argument("--end", help="window end: RFC 3339 or epoch s")
    ap.add_argument("--window-file", help="file with T0=... and T1=... lines")
    ap.add_argument("--report", choices=sorted(REPORTS), default="pprof")
    ap.add_argument("--out", help="pprof output file (default profile.pb.gz) or top JSON output")
    ap.add_argument("--limit", type=int, default=15, help="rows to print for --report top")
    ap.add_argument("--list-types", action="store_true", help="list the server's profile types and exit")
    a = ap.parse_args(argv)
    try:
        client = ParcaClient.from_env(a.parca_url, a.parca_token)
        if a.list_types:
            print("\n".join(client.profile_types()))
            return 0
        if a.window_file:
            t0, t1 = read_window_file(a.window_file)
        elif a.start and a.end:
            t0, t1 = parse_time(a.start), parse_time(a.end)
        else:
            ap.error("give the window: --start and --end, or --window-file")
        labels = {"comm": a.comm} if a.comm else {}
        for kv in a.label:
            k, sep, v = kv.partition("=")
            if not sep or not k:
                ap.error(f"--label {kv!r}: expected KEY=VALUE")
            labels[k] = v
        query = a.query or selector(labels, a.type)
        resp = client.query(query, t0, t1, a.report)
        if a.report == "pprof":
            data = pprof_bytes(resp)
            out = Path(a.out or "profile.pb.gz")
            out.write_bytes(data)
            print(f"{out}: {len(data)} bytes, {pprof_sample_count(data)} samples for {query} "
                  f"between {rfc3339(t0)} and {rfc3339(t1)}")
            return 0
        rep = top_report(resp)
        if a.out:
            Path(a.out).write_text(json.dumps(asdict(rep), indent=2) + "\n")
        print(f"{query} {rfc3339(t0)}..{rfc3339(t1)}: total {rep.total_ns / 1e9:.3f} s CPU")
        print(f"{'flat (s)':>10} {'flat%':>6} {'cum (s)':>10} {'cum%':>6}  function")
        for r in rep.rows[:a.limit]:
            print(f"{r.flat_ns / 1e9:10.3f} {100 * r.flat_ns / rep.total_ns:5.1f}% "
                  f"{r.cum_ns / 1e9:10.3f} {100 * r.cum_ns / rep.total_ns:5.1f}%  {r.name}"
                  + ("  (cum clamped)" if r.clamped else ""))
        for n in rep.notes:
            print(f"note: {n}", file=sys.stderr)
        return 0
    except ParcaError as e:
        print(f"parca: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
