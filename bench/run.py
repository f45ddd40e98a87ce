"""`make bench`: stallscope's own speed figures, each with its unit and spread.

1. Analysis time of a run directory of 2 variants x 5 reps (~300k profile samples in
   all), built from the real recorded folded stacks in tests/data/profile/ (each rep a
   copy with its weights scaled to 30k samples and jittered so reps differ), timed in a
   fresh process per run (median of 3, with min-max) with that process's peak RSS.
2. Folding raw `perf script` text: the one collapser the collector runs (stacks and thread
   counts in one pass, analysis/profile/perfscript.py) next to inferno-collapse-perf on the
   same input (a real recording, replicated to ~20 MB), in ms per MB and MB/s.
3. The profiler's overhead on throughput, from a run directory given with --overhead-run
   (default: the newest demo run): the profile reps' windows with perf off vs on, paired.

Examples:
  .venv/bin/python bench/run.py
  .venv/bin/python bench/run.py --overhead-run runs/20261121-234500-mset-50keys
  .venv/bin/python bench/run.py --skip-ingest --repeats 5
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.profile import stacks as prof  # noqa: E402
from analysis import stats  # noqa: E402

DATA = REPO / "tests" / "data" / "profile"
FOLDED = ["redis-main.inferno.folded", "redis-io.inferno.folded"]
SCRIPT = "redis-io.perf.script.gz"
FOCUS = ["dictFind", "lookupKey", "dictSdsKeyCompare", "processCommand", "readQueryFromClient"]
VARIANTS, REPS, SAMPLES_PER_REP = ("base", "cand"), 5, 30_000


def build_run_dir(root: Path) -> tuple[Path, int]:
    """A run directory of real folded data; returns (path, total samples)."""
    from analysis.inputs.manifest import Manifest, Profiling, Rep, Variant
    from analysis.inputs.rundir import save_manifest
    src = prof.merge([prof.read_folded(DATA / f, unit="nanoseconds") for f in FOLDED])
    period = 1001001       # ns per sample at 999 Hz: the recordings' cpu-clock period
    scale = SAMPLES_PER_REP / (src.total / period)
    rng = random.Random(0)
    run = root / "bench-run"
    schedule, total = [], 0
    for rep in range(1, REPS + 1):
        for v in VARIANTS:
            d = run / v / str(rep)
            d.mkdir(parents=True)
            st = prof.Stacks(unit="samples")
            for k, w in src.weights.items():
                n = round(w / period * scale * rng.uniform(0.9, 1.1))
                if n:
                    st.weights[k] = n
            total += int(st.total)
            prof.write_folded(st, d / "perf.folded")
            shutil.copy(REPO / "tests/data/throughput/redis-benchmark-7.0.15.csv", d / "bench.csv")
            (d / "rep.json").write_text(json.dumps({"kind": "profile"}))
            schedule.append(Rep(variant=v, rep=rep, kind="profile", status="ok"))
    m = Manifest(run_id="bench-run", created="2026-11-21T00:00:00Z", command=["bench/run.py"],
                 case={"name": "bench"}, size="bench",
                 variants={v: Variant(name=v, spec="bench", kind="binary") for v in VARIANTS},
                 profiling=Profiling(profiler="perf", mode="separate"), schedule=schedule)
    save_manifest(run, m)
    return run, total


def analyse(run: Path) -> dict:
    """What a report does with the profiles: parse, views per rep, per-thread, stats."""
    from analysis.inputs.rundir import load_run
    rd = load_run(run)
    shares: dict[str, dict[str, list[float]]] = {v: {f: [] for f in FOCUS} for v in rd.variant_names}
    cum: dict[str, dict[str, list[float]]] = {v: {f: [] for f in FOCUS} for v in rd.variant_names}
    per_variant = {}
    for v in rd.variant_names:
        reps = []
        for r in rd.manifest.reps(variant=v, kind="profile"):
            st = prof.read_folded(rd.rep_dir(r) / "perf.folded")
            costs = prof.function_costs(st)
            prof.thread_groups(st)
            for f in FOCUS:
                c = costs.get(f)
                shares[v][f].append(c.flat_share if c else 0.0)
                cum[v][f].append(c.cum_share if c else 0.0)
            reps.append(st)
        merged = prof.merge(reps)
        per_variant[v] = merged
        prof.callers(merged, "dictFind")
        prof.callees(merged, "lookupKey")
    verdicts = {}
    for f in FOCUS:
        verdicts[f] = stats.compare_shares(shares["base"][f], shares["cand"][f]).verdict
        stats.compare_shares(cum["base"][f], cum["cand"][f])
    return {"samples": sum(s.total for s in per_variant.values()), "verdicts": verdicts}


def _child_analyse(run: str) -> int:
    import resource
    t0 = time.perf_counter()
    out = analyse(Path(run))
    out["wall_s"] = time.perf_counter() - t0
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))
    return 0


def fmt_spread(xs: list[float], unit: str, digits: int = 2) -> str:
    return (f"{statistics.median(xs):.{digits}f} {unit} (median of {len(xs)}, "
            f"min {min(xs):.{digits}f}, max {max(xs):.{digits}f})")


def bench_analysis(repeats: int) -> None:
    print("== 1. analysis time: 2 variants x 5 reps of real folded stacks")
    with tempfile.TemporaryDirectory(prefix="stallscope-bench-") as tmp:
        run, total = build_run_dir(Path(tmp))
        nstacks = len(prof.read_folded(run / "base/1/perf.folded").weights)
        print(f"   run directory: {total:,} samples in all, {nstacks:,} distinct stacks per rep")
        walls, rss, res = [], [], None
        for _ in range(repeats):
            r = subprocess.run([sys.executable, __file__, "--_analyse", str(run)],
                               capture_output=True, text=True, cwd=REPO)
            if r.returncode != 0:
                print(f"   FAILED: {r.stderr.strip()[-800:]}")
                return
            res = json.loads(r.stdout)
            walls.append(res["wall_s"])
            rss.append(res["maxrss_mb"])
        print(f"   read_folded + function_costs + thread_groups per rep, callers/callees, "
              f"compare_shares x{2 * len(FOCUS)}:")
        print(f"   wall time   {fmt_spread(walls, 's', 3)}  (target < 5 s)")
        print(f"   peak RSS    {fmt_spread(rss, 'MB', 1)}")
        print(f"   verdicts (same data both sides, expect no change): {res['verdicts']}")
        out = Path(tmp) / "reports"
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "analysis", "compare", str(run), "--out", str(out)],
                               capture_output=True, text=True, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
            ts.append(time.perf_counter() - t0)
            if r.returncode != 0:
                print(f"   full report: failed on this synthetic run directory: "
                      f"{(r.stderr or r.stdout).strip()[-400:]}")
                return
        print(f"   full report (python -m analysis compare, incl. interpreter start): {fmt_spread(ts, 's', 3)}")


def bench_ingest(target_mb: float) -> None:
    """The one collapser (stacks and per-thread counts in one pass, what the perf collector
    runs per rep) next to inferno-collapse-perf (stacks only; the collector used to run
    `perf script` a second time for the thread counts) on the same text."""
    print("== 2. folding raw `perf script` text: the one pass vs inferno-collapse-perf")
    from analysis.profile.perfscript import fold_file
    from analysis.report.flamegraph import FlameGraphError, find_inferno
    with tempfile.TemporaryDirectory(prefix="stallscope-bench-") as tmp:
        one = gzip.decompress((DATA / SCRIPT).read_bytes())
        copies = max(1, int(target_mb * 1e6 / len(one)))
        big = Path(tmp) / "perf.script"
        with open(big, "wb") as f:
            for _ in range(copies):
                f.write(one)
        size_mb = big.stat().st_size / 1e6
        t0 = time.perf_counter()
        folder = fold_file(big)
        py_s = time.perf_counter() - t0
        samples = sum(folder.thread_samples.values())
        print(f"   input: {size_mb:.1f} MB, {samples:,} samples ({copies} copies of a real recording)")
        print(f"   one pass (perfscript)  {py_s / size_mb * 1e3:7.1f} ms/MB  {size_mb / py_s:7.1f} MB/s  "
              f"{samples / py_s:12,.0f} samples/s  ({py_s:.2f} s: stacks + thread counts)")
        try:
            inferno = find_inferno("inferno-collapse-perf")
        except FlameGraphError as e:
            print(f"   inferno-collapse-perf: skipped ({e})")
            return
        t0 = time.perf_counter()
        r = subprocess.run([inferno, str(big)], capture_output=True)
        in_s = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"   inferno-collapse-perf failed: {r.stderr.decode()[:300]}")
            return
        print(f"   inferno-collapse-perf  {in_s / size_mb * 1e3:7.1f} ms/MB  {size_mb / in_s:7.1f} MB/s  "
              f"{samples / in_s:12,.0f} samples/s  ({in_s:.2f} s: stacks only, {os.cpu_count()} threads)")
        same = r.stdout.decode() == folder.folded_text()
        print(f"   same folded output: {'yes' if same else 'NO (a bug: tests/test_perfscript.py)'}")


def bench_overhead(run_dir: str | None) -> None:
    """The same computation the report prints (analysis.compare.profiler_cost): the paired
    change from each window without perf to the window beside it with perf."""
    print("== 3. profiler overhead on throughput (profile windows: perf off/on, ABBA)")
    if not run_dir:
        run_dir = _newest_demo_run()
        if run_dir:
            print(f"   from the newest demo run: {run_dir} (choose another with --overhead-run)")
    if not run_dir:
        print("   skipped: no demo run under runs/ (run `make demo` first, or give "
              "--overhead-run RUN_DIR: a run with profile reps)")
        return
    from analysis.compare.profiler_cost import profiler_cost
    from analysis.inputs.rundir import RunDirError, load_run
    try:
        rd = load_run(run_dir)
        names = rd.variant_names
        cost = profiler_cost(rd, names[0], names[-1])
    except RunDirError as e:
        print(f"   failed: {e}")
        return
    if not cost.available:
        print(f"   not measured: {cost.reason}")
        return
    print(f"   perf cpu-clock at {cost.frequency_hz} Hz")
    rows = list(cost.per_variant.items()) + ([("both", cost.pooled)] if cost.pooled else [])
    for name, ch in rows:
        n = sum(cost.pairs.values()) if name == "both" else cost.pairs.get(name, 0)
        if ch.rel_ci_low is None:
            print(f"   {name}: {n} window pairs, no interval")
            continue
        # A fall of throughput while perf samples is the cost: print it as a positive number.
        print(f"   {name}: overhead {-100 * ch.rel:+.1f}% "
              f"[{-100 * ch.rel_ci_high:+.1f}, {-100 * ch.rel_ci_low:+.1f}]% "
              f"({100 * ch.confidence:.0f}% CI, {n} window pairs, {ch.method})")


def _newest_demo_run() -> str | None:
    """Profile reps and throughput reps of the same variant both write bench files, so a
    demo-sized run gives the profiler's overhead for free."""
    runs = sorted(p.parent for p in (REPO / "runs").glob("*-mset-50keys*/manifest.json"))
    return str(runs[-1]) if runs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--overhead-run", metavar="RUN_DIR", help="run directory for figure 3")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of figure 1 (default 3)")
    ap.add_argument("--ingest-mb", type=float, default=20.0, help="perf script size for figure 2 (MB, default 20)")
    ap.add_argument("--skip-analysis", action="store_true")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--_analyse", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._analyse:
        return _child_analyse(a._analyse)
    if not a.skip_analysis:
        bench_analysis(a.repeats)
    if not a.skip_ingest:
        bench_ingest(a.ingest_mb)
    bench_overhead(a.overhead_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
