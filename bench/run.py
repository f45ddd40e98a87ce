"""`make bench`: stallscope's own speed figures, each with its unit and spread.

1. Analysis time of a run directory of 2 variants x 5 reps (~300k profile samples in
   all), built from the real recorded folded stacks in tests/data/profile/ (each rep a
   copy with its weights scaled to 30k samples and jittered so reps differ), timed in a
   fresh process per run (median of 3, with min-max) with that process's peak RSS.
2. `perf script` read once, as the collector reads it (its bytes into inferno-collapse-perf,
   samples per thread counted in the same bytes) vs the two passes it replaced (`perf script |
   inferno-collapse-perf`, then `perf script -F tid,comm`): on a live 2 s perf recording, in
   s per rep and ms per MB of perf script text (median of 3); and the cost of the counting on a
   real recording's text replicated to ~20 MB (inferno fed through us vs reading the file).
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
    """Figure 2: the collector's one pass of `perf script` next to the two it replaced."""
    print("== 2. `perf script` read once (into inferno-collapse-perf + thread counts) vs two passes")
    from analysis.toolpaths import perf_binary, which_tool
    perf, inferno = perf_binary(), which_tool("inferno-collapse-perf")
    if not inferno:
        print("   skipped: inferno-collapse-perf missing (make setup)")
        return
    with tempfile.TemporaryDirectory(prefix="stallscope-bench-") as tmp:
        data = _record_busy(perf, Path(tmp)) if perf else None
        if data is None:
            print("   live recording: skipped (perf missing or not permitted here)")
        else:
            _bench_passes(perf, inferno, data, Path(tmp))
        _bench_counting(inferno, target_mb, Path(tmp))


def _record_busy(perf: str, tmp: Path) -> Path | None:
    """A stand-in rep: 2 s of a busy Python at the collector's rate (999 Hz, frame pointers)."""
    from collectors.profilers.perf.record import record_argv
    data = tmp / "perf.data"
    argv = record_argv(perf, 0, data, 999, "fp")
    argv = argv[:argv.index("-p")] + ["-q", "-o", str(data), "--", sys.executable, "-c",
                                      "import time\nt = time.time() + 2\nwhile time.time() < t: sum(range(999))"]
    r = subprocess.run(argv, capture_output=True, timeout=60)
    return data if r.returncode == 0 and data.is_file() else None


def _bench_passes(perf: str, inferno: str, data: Path, tmp: Path) -> None:
    from collections import Counter
    from collectors.profilers.perf.record import fold
    text_mb = len(subprocess.run([perf, "script", "-i", str(data)], capture_output=True).stdout) / 1e6
    one, two, facts = [], [], {}
    for _ in range(3):
        t0 = time.perf_counter()
        facts = fold(perf, inferno, [data], tmp / "one.folded", tmp / "err", tmp / "one.tsv")
        one.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with open(tmp / "two.folded", "wb") as out:
            ps = subprocess.Popen([perf, "script", "-i", str(data)], stdout=subprocess.PIPE)
            subprocess.run([inferno], stdin=ps.stdout, stdout=out, check=True)
            ps.stdout.close()
            ps.wait()
        lines = subprocess.run([perf, "script", "-i", str(data), "-F", "tid,comm"],
                               capture_output=True, text=True).stdout.splitlines()
        threads = Counter((int(ln.split()[-1]), " ".join(ln.split()[:-1])) for ln in lines if ln.strip())
        two.append(time.perf_counter() - t0)
    print(f"   live recording: {facts['samples']:,} samples, {text_mb:.1f} MB of perf script text")
    for name, ts in (("one pass (collector)", one), ("two passes (before) ", two)):
        med = statistics.median(ts)
        print(f"   {name}  {med:6.3f} s per rep  {med / text_mb * 1e3:7.1f} ms/MB  "
              f"(median of 3, min {min(ts):.3f} s, max {max(ts):.3f} s)")
    same = ((tmp / "one.folded").read_bytes() == (tmp / "two.folded").read_bytes()
            and sum(threads.values()) == facts["samples"])
    print(f"   same perf.folded and thread counts: {'yes' if same else 'NO (a bug: tests/test_perfscript.py)'}")


def _bench_counting(inferno: str, target_mb: float, tmp: Path) -> None:
    """What reading the bytes on their way to inferno costs (perf script itself left out)."""
    from collectors.profilers.perf.record import InfernoFold
    one = gzip.decompress((DATA / SCRIPT).read_bytes())
    copies = max(1, int(target_mb * 1e6 / len(one)))
    big = tmp / "perf.script"
    big.write_bytes(one * copies)
    size_mb = big.stat().st_size / 1e6
    t0 = time.perf_counter()
    with open(big, "rb") as src, open(tmp / "err", "ab") as err:
        with InfernoFold(inferno, tmp / "ours.folded", err) as fold_pass:
            fold_pass.feed(src)
            fold_pass.finish()
    ours_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open(big, "rb") as src, open(tmp / "alone.folded", "wb") as out:
        subprocess.run([inferno], stdin=src, stdout=out, check=True)
    alone_s = time.perf_counter() - t0
    samples = sum(fold_pass.threads.samples.values())
    print(f"   text: {size_mb:.1f} MB, {samples:,} samples ({copies} copies of a real recording)")
    print(f"   inferno fed through us + counts  {ours_s / size_mb * 1e3:6.1f} ms/MB  ({ours_s:.2f} s)")
    print(f"   inferno reading the file alone   {alone_s / size_mb * 1e3:6.1f} ms/MB  ({alone_s:.2f} s)")


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
