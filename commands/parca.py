"""`stallscope parca`: fetch a merged CPU profile for a time window from a Parca
server (or Polar Signals Cloud), as pprof or as the top functions."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from analysis.command_end import UserError
from collectors.command import run_command
from collectors.profilers.parca.client import (DEFAULT_TYPE, DEFAULT_URL_ENV, REPORTS, TOKEN_ENV,
                                               ParcaClient, ParcaError, parse_time, pprof_bytes,
                                               pprof_sample_count, read_window_file, rfc3339,
                                               selector, top_report, TopReport)

EPILOG = """examples:
  # merged CPU profile of redis-server for a window, saved as pprof
  stallscope parca --parca-url http://127.0.0.1:7070 \\
      --start 2026-11-21T22:56:47Z --end 2026-11-21T22:57:17Z --out profile.pb.gz

  # the same window from a T0=/T1= file, by stallscope labels, top functions (ns)
  STALLSCOPE_PARCA_URL=https://parca.example STALLSCOPE_PARCA_TOKEN="$(cat token)" \\
  stallscope parca --window-file window.txt --label stallscope_variant=base --report top

  # what the server has
  stallscope parca --parca-url http://127.0.0.1:7070 --list-types
"""


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="stallscope parca", epilog=EPILOG,
        # No abbreviations: `--parca-token SECRET` must not pass as --parca-token-file.
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fetch the merged CPU profile of a process for a time window from a Parca "
                    "server (or Polar Signals Cloud) and save it as pprof (profile.pb.gz), or print "
                    "the top functions by flat/cumulative CPU time (ns).")
    ap.add_argument("--parca-url", help=f"Parca base URL (default ${DEFAULT_URL_ENV})")
    ap.add_argument("--parca-token-file", metavar="PATH",
                    help=f"file holding the bearer token (default ${TOKEN_ENV}); a token on the "
                         "command line would show in ps, so there is no flag for it")
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
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    # A URL, token or window we cannot use is bad input (2); Parca unreachable, refusing
    # or answering nonsense: it ran, but failed (1).
    return run_command("stallscope parca", lambda: _query(ap, a))


def _query(ap: argparse.ArgumentParser, a: argparse.Namespace) -> int:
    try:
        client = ParcaClient.from_env(a.parca_url, a.parca_token_file)
        if a.list_types:
            t0 = t1 = None
        elif a.window_file:
            t0, t1 = read_window_file(a.window_file)
        elif a.start and a.end:
            t0, t1 = parse_time(a.start), parse_time(a.end)
        else:
            ap.error("give the window: --start and --end, or --window-file")
    except ParcaError as e:
        raise UserError(str(e)) from None
    if a.list_types:
        print("\n".join(client.profile_types()))
        return 0
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
    else:
        print_top(top_report(resp), f"{query} {rfc3339(t0)}..{rfc3339(t1)}", a.limit, a.out)
    return 0


def print_top(rep: TopReport, what: str, limit: int, out: str | None) -> None:
    """The top functions as a table on stdout (and the whole report as JSON to `out`)."""
    if out:
        Path(out).write_text(json.dumps(asdict(rep), indent=2) + "\n")
    print(f"{what}: total {rep.total_ns / 1e9:.3f} s CPU")
    print(f"{'flat (s)':>10} {'flat%':>6} {'cum (s)':>10} {'cum%':>6}  function")
    for r in rep.rows[:limit]:
        print(f"{r.flat_ns / 1e9:10.3f} {100 * r.flat_ns / rep.total_ns:5.1f}% "
              f"{r.cum_ns / 1e9:10.3f} {100 * r.cum_ns / rep.total_ns:5.1f}%  {r.name}"
              + ("  (cum clamped)" if r.clamped else ""))
    for n in rep.notes:
        print(f"note: {n}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
