"""`make bench` figure 5: the history store and its change-point detector.

1. Detector precision and recall on realistic synthetic history
   (analysis/history/synthetic.py: run-to-run noise 3% CV as the paired demo measured here,
   CPU per op 4%): per shift size (2%, 5%, 10%), JOBS jobs of RUNS nightly runs with one
   shift injected at a random run, plus as many jobs with none. A detection on the
   throughput series within one run of the injected one is a true positive; any other
   detection (including on the shift-free jobs) a false positive.
2. Store speed at about one million stored metric points: ingest rate (runs/s, points/s),
   a series query and one job's trend page, on SQLite and on PostgreSQL (a real local
   server started for the benchmark, or --pg URL).

Examples:
  .venv/bin/python bench/history.py
  .venv/bin/python bench/history.py --points 200000 --jobs 20
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.history.changepoints import detect  # noqa: E402
from analysis.history.store import HistoryStore  # noqa: E402
from analysis.history.synthetic import FUNCTIONS, Shift, make_job  # noqa: E402


def detector(jobs: int, runs: int, seed: int = 1) -> None:
    print(f"== 5a. change-point detector: {jobs} jobs x {runs} runs per shift size, "
          f"{jobs} more without a shift (E-Divisive, p < 0.05)")
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        for size in (-0.02, -0.05, -0.10):
            st = HistoryStore.open(Path(d) / f"d{abs(size)}.sqlite")
            tp = fp = 0
            for j in range(2 * jobs):
                at = rng.randrange(runs // 4, 3 * runs // 4) if j < jobs else None
                h = make_job(f"j{j}", runs, [Shift(at, size)] if at is not None else [], seed=rng.getrandbits(32))
                for r in h.runs:
                    st.ingest_results(r, job=h.job)
                ids = [r.id for r in st.runs(h.job)]
                hits = [ids.index(c.first_run.id) for c in detect(st, h.job, ("paired:",), with_in_run=False)]
                good = [x for x in hits if at is not None and abs(x - at) <= 1]
                tp += 1 if good else 0
                fp += len(hits) - (1 if good else 0)
            recall = tp / jobs
            precision = tp / (tp + fp) if tp + fp else float("nan")
            print(f"   shift {100 * size:+.0f}%: recall {100 * recall:.0f}% ({tp}/{jobs}), "
                  f"precision {100 * precision:.0f}% ({fp} false detections in {2 * jobs} jobs)")


def _many_functions_job(job: str, days: int, seed: int) -> list[dict]:
    """A job whose runs carry 48 focus functions: ~100 points per run, like a profile-rich job."""
    runs = make_job(job, days, [], seed=seed).runs
    for r in runs:
        focus = r["profile"]["focus"]
        r["profile"]["focus"] = [dict(f, name=f"{f['name']}_{k}") for k in range(12) for f in focus]
    return runs


def store_speed(url: str, label: str, points: int, jobs: int) -> None:
    st = HistoryStore.open(url)
    per_run = 2 + 2 * 12 * len(FUNCTIONS)          # paired + 48 functions, both roles
    days = max(1, points // (per_run * jobs))
    t0 = time.perf_counter()
    n = 0
    for j in range(jobs):
        for r in _many_functions_job(f"job{j}", days, seed=j):
            st.ingest_results(r, job=f"job{j}")
            n += 1
    dt = time.perf_counter() - t0
    total = n * per_run
    print(f"   {label}: ingest {n:,} runs ({total:,} points) in {dt:.1f} s: "
          f"{n / dt:,.0f} runs/s, {total / dt:,.0f} points/s")
    t0 = time.perf_counter()
    series = st.series("job0", "cand")
    q = time.perf_counter() - t0
    print(f"   {label}: one job's series query ({len(series)} series x {days} runs): {1000 * q:.0f} ms")
    from analysis.report.trends import write_trend_pages
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        write_trend_pages(st, Path(out), jobs=["job0"])
        print(f"   {label}: one job's trend page (40 plots): {time.perf_counter() - t0:.1f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/history.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=30, help="jobs per shift size for 5a (default 30)")
    ap.add_argument("--runs", type=int, default=40, help="runs per job for 5a (default 40)")
    ap.add_argument("--points", type=int, default=1_000_000, help="points stored for 5b (default 1M)")
    ap.add_argument("--store-jobs", type=int, default=10, help="jobs for 5b (default 10)")
    ap.add_argument("--pg", metavar="URL", help="PostgreSQL for 5b (default: a local server started here)")
    a = ap.parse_args(argv)
    detector(a.jobs, a.runs)
    print(f"== 5b. history store at about {a.points:,} metric points")
    with tempfile.TemporaryDirectory() as d:
        store_speed(str(Path(d) / "h.sqlite"), "SQLite", a.points, a.store_jobs)
    if a.pg:
        store_speed(a.pg, "PostgreSQL", a.points, a.store_jobs)
        return 0
    from tests import pg
    tmp = Path(tempfile.mkdtemp(prefix="stallscope-pg-"))
    try:
        for url in pg.server(tmp):
            store_speed(url, "PostgreSQL", a.points, a.store_jobs)
    except RuntimeError as e:
        print(f"   PostgreSQL: skipped ({e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
