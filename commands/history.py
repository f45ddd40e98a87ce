"""stallscope history: keep runs, find where their series shifted, mark, compare, plot.

The store is an SQLite file by default (./history.sqlite, or $STALLSCOPE_HISTORY), or
PostgreSQL with --history postgresql://USER@HOST/DB for many runners (docs/history.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.command_end import end_command
from analysis.history.store import HistoryError, HistoryStore

EPILOG = """\
Examples:
  stallscope history ingest runs/20261121-234500-mset-50keys --job nightly-mset
  stallscope history runs --job nightly-mset
  stallscope history changes --job nightly-mset          # detect, store and list change points
  stallscope history mark 3 false-positive --note "host was rebooted mid-run"
  stallscope history mark-run 12 good                    # baseline policy last-good uses it
  stallscope history compare 11 12                        # two stored runs, no re-run
  stallscope history trends --out reports/trends          # index.html + one page per job
  stallscope history series --job nightly-mset --series paired:mset-50keys --format json
  stallscope history alert --job nightly-mset --out alert.md
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stallscope history", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", metavar="URL", help="store: a path (SQLite) or postgresql://... "
                   "(default $STALLSCOPE_HISTORY or ./history.sqlite)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ingest", help="store runs made by hand (run directories or report directories)")
    s.add_argument("paths", nargs="+", type=Path)
    s.add_argument("--job", help="job name (default: the case name)")
    sub.add_parser("runs", help="list stored runs").add_argument("--job")
    sub.add_parser("show", help="one stored run's points and in-run changes").add_argument("run")
    s = sub.add_parser("compare", help="compare two stored runs' candidate values, no re-run")
    s.add_argument("run_a")
    s.add_argument("run_b")
    sub.add_parser("changes", help="detect regressions (in-run paired test, E-Divisive) and list them").add_argument("--job")
    s = sub.add_parser("mark", help="mark a change point: acknowledged | expected | false-positive")
    s.add_argument("change_id", type=int)
    s.add_argument("mark")
    s.add_argument("--note", default="")
    s = sub.add_parser("mark-run", help="mark a run good (or bad; '' clears)")
    s.add_argument("run_id", type=int)
    s.add_argument("mark")
    s = sub.add_parser("series", help="every stored point of a job's series (the full data behind "
                       "a trend page's downsampled plots), as CSV or JSON")
    s.add_argument("--job", required=True)
    s.add_argument("--series", action="append", metavar="NAME",
                   help="a series key, e.g. paired:mset-50keys (repeat; default: every series of the job)")
    s.add_argument("--variant", choices=("cand", "base", "both"), default="both",
                   help="the candidate's points, the baseline's, or both (default)")
    s.add_argument("--format", choices=("csv", "json"), default="csv",
                   help="csv (one point per line, no reps) or json (by columns, with each point's reps; "
                   "docs/history.md, \"At scale\")")
    s.add_argument("--out", type=Path, help="file to write (default: standard output)")
    sub.add_parser("trends", help="write the trend pages").add_argument("--out", type=Path, default=Path("reports/trends"))
    s = sub.add_parser("alert", help="the alert Markdown of a job's newest run")
    s.add_argument("--job", required=True)
    s.add_argument("--out", type=Path)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    return end_command("stallscope history", lambda: COMMANDS[a.cmd](HistoryStore.open(a.history), a))


def _ingest(store: HistoryStore, a) -> int:
    from analysis.history.sources import results_of
    from analysis.history.store import Incoming
    incoming = []
    for p in a.paths:                 # every path read first: one bad path stores nothing
        results, report, source = results_of(p)
        incoming.append(Incoming(results, a.job, report_url=report, source=source))
    for r in store.ingest_batch(incoming):          # one transaction
        print(f"stored run {r.id}: job {r.job}, {r.run_id} ({r.started_at})")
    return 0


def _runs(store: HistoryStore, a) -> int:
    for r in store.runs(a.job):
        print(f"{r.id:>5}  {r.started_at}  {r.job:<24} {r.run_id:<40} {r.commit('cand')[:12]:<12} {r.mark or ''}")
    return 0


def _show(store: HistoryStore, a) -> int:
    r = store.run(a.run)
    print(json.dumps({"run": r.__dict__, "points": store.points(r.id), "changes": store.changes(r.id)},
                     indent=1, default=str))
    return 0


def _compare(store: HistoryStore, a) -> int:
    from analysis import stats
    ra, rb = store.run(a.run_a), store.run(a.run_b)
    pa = {(p["series"], p["variant"]): p for p in store.points(ra.id)}
    print(f"{'series':<48} {'run ' + str(ra.id):>14} {'run ' + str(rb.id):>14}  change (95% CI)")
    for p in store.points(rb.id):
        if p["variant"] != "cand" or (p["series"], "cand") not in pa:
            continue
        q = pa[(p["series"], "cand")]
        if not q["values"] or not p["values"]:
            continue         # a run stored without its reps' values: no interval to give
        ch = stats.compare(q["values"], p["values"], higher_is_better=p["higher_is_better"])
        ci = "" if ch.rel_ci_low is None else f" [{100 * ch.rel_ci_low:+.1f}, {100 * ch.rel_ci_high:+.1f}]%"
        rel = "n/a" if ch.rel is None else f"{100 * ch.rel:+.1f}%"
        print(f"{p['series'][:48]:<48} {q['value']:>14,.1f} {p['value']:>14,.1f}  {rel}{ci} {p['unit']}")
    return 0


def _changes(store: HistoryStore, a) -> int:
    from analysis.history.changepoints import detect
    for job in ([a.job] if a.job else store.jobs()):
        for c in detect(store, job):
            lo, hi = c.commit_range
            ci = "" if c.shift_low is None else f" [{100 * c.shift_low:+.1f}, {100 * c.shift_high:+.1f}]%"
            print(f"{c.id:>4}  {job:<20} {c.series:<44} {c.direction:<11} {100 * c.shift:+.1f}%{ci}  "
                  f"{lo[:12]}..{hi[:12]}  at {c.first_run.run_id}  by {c.kind}  {c.mark or ''}")
            if c.ahead:
                print(f"        {c.ahead}")
            if culprit_line(c.first_run):
                print(f"        {culprit_line(c.first_run)}")
            for m in c.movers[:3]:
                print(f"        moved with it: {m.series} {100 * m.shift:+.1f}%")
    return 0


def culprit_line(run) -> str:
    """What bisecting the run's range found (schedule jobs with a bisect: block), one line."""
    b = (getattr(run, "meta", None) or {}).get("bisect")
    if not b:
        return ""
    if b.get("culprit"):
        return f"culprit: {b['culprit'][:12]} {b.get('subject', '')} (bisected: {b.get('why', '')})"
    return f"bisected: {b.get('why', b.get('status', ''))}"


def _mark(store: HistoryStore, a) -> int:
    store.mark(a.change_id, a.mark, a.note)
    return 0


def _mark_run(store: HistoryStore, a) -> int:
    store.mark_run(a.run_id, a.mark)
    return 0


def _series(store: HistoryStore, a) -> int:
    from analysis.history.export import write_csv, write_json
    if a.job not in store.jobs():
        raise HistoryError(f"no stored run of job {a.job!r} (stallscope history runs lists them)")
    roles = ("cand", "base") if a.variant == "both" else (a.variant,)
    by_variant = store.series_by_variant(a.job, roles, names=a.series, reps=a.format == "json")
    missing = [n for n in a.series or [] if not any(n in s for s in by_variant.values())]
    if missing:
        raise HistoryError(f"job {a.job!r} has no series {', '.join(map(repr, missing))} "
                           "(stallscope history show RUN lists a run's series)")
    write = write_csv if a.format == "csv" else write_json
    if a.out:
        with a.out.open("w", newline="") as fh:
            n = write(fh, a.job, by_variant, a.series)
        print(f"wrote {n:,} points to {a.out}", file=sys.stderr)
    else:
        write(sys.stdout, a.job, by_variant, a.series)
    return 0


def _trends(store: HistoryStore, a) -> int:
    from analysis.history.trends import write_trend_pages
    print(write_trend_pages(store, a.out))
    return 0


def _alert(store: HistoryStore, a) -> int:
    from analysis.history.alert_due import due
    from analysis.history.alert_md import render_alert
    runs = store.runs(a.job)
    if not runs:
        raise HistoryError(f"no stored run of job {a.job!r}")
    text = render_alert(due(store, a.job, runs[-1]), runs[-1])
    if a.out:
        a.out.write_text(text)
    else:
        print(text)
    return 0


COMMANDS = {"ingest": _ingest, "runs": _runs, "show": _show, "compare": _compare, "changes": _changes,
            "mark": _mark, "mark-run": _mark_run, "series": _series, "trends": _trends, "alert": _alert}
