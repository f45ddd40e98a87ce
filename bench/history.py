"""`make bench` figure 5: the history store and its change-point detector.

1. Detector precision and recall on realistic synthetic history
   (bench/synthetic_history.py: noise read off the paired runs recorded on this VM,
   --noise quiet or noisy), for each signal (E-Divisive on the series, the in-run paired
   signal) and both combined, per shift size (2%, 5%, 10%) and baseline policy (pinned,
   previous): JOBS jobs of RUNS nightly runs with one shift injected at a random run, plus
   as many jobs with none. A finding on the paired throughput series within one run of the
   injected shift is a true positive; any other finding a false one. False alerts per 100
   runs come from the shift-free jobs. Then what the in-run paired test needs to reach the
   issue's goals (recall 0.9 at 5%, 0.5 at 2%), from the same noise model.
3. (5c) The function series (analysis/history/function_series.py): recall, precision and
   false alerts per 100 runs at throughput shifts of 1, 2 and 5% caused by one function,
   against a pinned baseline, without and with the function series, and with them each
   regression bisected over its run's range as a scheduled job's `bisect:` block does
   (bench/bisect_findings.py).
2. Store speed at about one million stored metric points, on SQLite and on PostgreSQL (a
   real local server started for the benchmark, or --pg URL), each beside its target
   (issue 18): the ingest rate (batches of BATCH runs; generating the runs is not timed),
   and ingesting the same runs again adds nothing; one series query (one series of one
   job, every run, with the reps), and all of a job's series; one job's trend page
   (downsampled plots, the full data written beside it).

Examples:
  .venv/bin/python bench/history.py
  .venv/bin/python bench/history.py --points 200000 --jobs 20 --noise noisy
  .venv/bin/python bench/history.py --figure 5b          # the store at scale only
  .venv/bin/python bench/history.py --figure 5c          # the function series only
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import binomtest, norm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.history.changepoints import detect  # noqa: E402
from analysis.history.paired_signal import ALPHA  # noqa: E402
from analysis.history.store import HistoryStore, Incoming  # noqa: E402
from analysis.history.extract import extract  # noqa: E402
from bench.bisect_findings import Bisector  # noqa: E402
from bench.synthetic_history import NOISY, PAIRS, QUIET, REPS, Noise, Shift, make_job, shares  # noqa: E402

SIGNALS = (("series", "change point"), ("paired", "paired"), ("combined", None))
GOALS = ((-0.05, 0.9), (-0.02, 0.5))          # (shift, recall) the issue asks for
FALSE_ALERTS_GOAL = 1.0                      # per 100 runs per metric


def _score(found: list, ids: list[int], at: int | None) -> dict[str, tuple[int, int]]:
    """signal -> (found the shift: 0/1, false findings) for one job."""
    out = {}
    for label, signal in SIGNALS:
        hits = [ids.index(c.first_run.id) for c in found if signal is None or signal in c.signals]
        good = any(at is not None and abs(x - at) <= 1 for x in hits)
        out[label] = (int(good), len(hits) - int(good))
    return out


def _ci(k: int, n: int, scale: float = 1.0) -> str:
    """k of n (times scale) with its 95% interval (Clopper-Pearson)."""
    iv = binomtest(k, n).proportion_ci(0.95)
    return f"{scale * k / n:.2f} [{scale * iv.low:.2f}-{scale * iv.high:.2f}]"


def _policy(d: Path, policy: str, jobs: int, runs: int, noise: Noise, rng: random.Random) -> None:
    print(f"   baseline {policy}: recall [95% CI] / precision, per signal")
    null = {label: 0 for label, _ in SIGNALS}
    null_runs = 0
    for size in (-0.02, -0.05, -0.10):
        st = HistoryStore.open(d / f"{policy}{abs(size)}.sqlite")
        tp = {label: 0 for label, _ in SIGNALS}
        fp = dict(tp)
        for j in range(2 * jobs):
            at = rng.randrange(runs // 4, 3 * runs // 4) if j < jobs else None
            h = make_job(f"j{j}", runs, [Shift(at, size)] if at is not None else [],
                         seed=rng.getrandbits(32), noise=noise, baseline=policy)
            for r in h.runs:
                st.ingest_results(r, job=h.job)
            ids = [r.id for r in st.runs(h.job)]
            for label, (t, f) in _score(detect(st, h.job, ("paired:",)), ids, at).items():
                tp[label] += t
                fp[label] += f
                null[label] += f if at is None else 0
            null_runs += runs if at is None else 0
        cells = [f"{label} {_ci(tp[label], jobs)} / "
                 + (f"{tp[label] / (tp[label] + fp[label]):.2f}" if tp[label] + fp[label] else "n/a")
                 for label, _ in SIGNALS]
        print(f"     shift {100 * size:+3.0f}%: " + "  ".join(cells))
    fa = "  ".join(f"{label} {_ci(null[label], null_runs, 100)}" for label, _ in SIGNALS)
    print(f"     false alerts per 100 runs [95% CI] ({null_runs} shift-free runs): {fa} "
          f"(goal: at most {FALSE_ALERTS_GOAL:.0f})")


def needs(sd: float, shift: float, recall: float, alpha: float = ALPHA) -> int:
    """Paired reps per run for the in-run test against the run's own baseline (one-sided
    at alpha, the spread known: the moderated t with many agreeing runs in its prior) to
    find `shift` with probability `recall`."""
    z = norm.ppf(1 - alpha) + norm.ppf(recall)
    return math.ceil((z * sd / abs(math.log1p(shift))) ** 2)


def _takes(noise: Noise, reps: int) -> None:
    sd = noise.rep_sd(PAIRS)
    print(f"   what it takes, {noise.name}: rep sd {sd:.4f} at {PAIRS} pairs")
    for shift, recall in GOALS:
        reach = norm.cdf(abs(math.log1p(shift)) / (sd / math.sqrt(reps)) - norm.ppf(1 - ALPHA))
        n = needs(sd, shift, recall)
        verdict = "goal met" if reach >= recall else (
            f"needs {n} paired reps per run (the run's change then has a 95% interval of "
            f"about ±{196 * sd / math.sqrt(n):.1f}%: --precision {196 * sd / math.sqrt(n):.1f}% "
            f"plans about that many or more)")
        print(f"     baseline previous, the paired test (one-sided p < {ALPHA}), {100 * shift:+.0f}% at "
              f"recall {recall}: {reps} reps reach {reach:.2f}; {verdict}")
    if noise is not QUIET:
        # E-Divisive over the in-run changes sees each run's mean log ratio: as many reps as
        # give it the spread it has on the quiet evening at the default reps
        n = math.ceil(round(REPS * (sd / QUIET.rep_sd(PAIRS)) ** 2, 6))
        print(f"     baseline pinned, E-Divisive over the in-run changes: a run's change has sd "
              f"{100 * sd / math.sqrt(reps):.2f}% with {reps} reps; {n} paired reps give it the "
              f"{100 * QUIET.rep_sd(PAIRS) / math.sqrt(REPS):.2f}% of the quiet evening's {REPS} "
              f"(figure 5a with --noise quiet)")


def detector(jobs: int, runs: int, noise: Noise, seed: int = 1) -> None:
    print(f"== 5a. detectors: {jobs} jobs x {runs} runs per shift size, {jobs} more without a shift; "
          f"{REPS} paired reps of {PAIRS} pairs per run, noise of the {noise.name}")
    print("   recall / precision per signal: series = E-Divisive on the series (p < 0.05), paired = the "
          f"in-run paired signal (one-sided p < {ALPHA} per run; E-Divisive over the in-run changes "
          "against a pinned baseline)")
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as d:
        for policy in ("pinned", "previous"):
            _policy(Path(d), policy, jobs, runs, noise, rng)
    for n in (QUIET, NOISY):
        _takes(n, REPS)


FN_SIZES = (-0.01, -0.02, -0.05)
FN_GOAL = (0.9, 0.9, 1.0)        # recall and precision at 2%, false alerts per 100 runs


def _fn_score(named: list[int], at: int | None) -> tuple[int, int]:
    """(found the shift within a run: 0/1, false findings) over the runs one job's findings
    name."""
    good = any(at is not None and abs(x - at) <= 1 for x in named)
    return int(good), len(named) - int(good)


def _fn_jobs(st: HistoryStore, n: int, size: float | None, runs: int, noise: Noise, rng: random.Random,
             tally: dict, bisector: Bisector) -> None:
    """n jobs (a shift of `size` in one recorded top function at a random run, or none),
    each detected without and with the function series, and with them each regression
    bisected (bench/bisect_findings.py); tally[label] += (hits, false)."""
    movers = [f for f, s in shares().items() if s >= 0.01]
    for j in range(n):
        at = rng.randrange(runs // 4, 3 * runs // 4) if size else None
        fn = rng.choice(movers)
        h = make_job(f"{size}-{j}", runs, [Shift(at, size, fn)] if size else [], seed=rng.getrandbits(32),
                     noise=noise, baseline="pinned")
        for r in h.runs:
            st.ingest_results(r, job=h.job)
        ids = [r.id for r in st.runs(h.job)]
        without = detect(st, h.job, ("paired:",), functions=False)
        with_fns = detect(st, h.job, ("paired:",), functions=True)
        for label, named in (("without", [ids.index(c.first_run.id) for c in without]),
                             ("with", [ids.index(c.first_run.id) for c in with_fns]),
                             ("bisected", bisector.confirm(with_fns, ids, at, size or 0.0))):
            t, f = _fn_score(named, at)
            tally[label] = (tally[label][0] + t, tally[label][1] + f)


def function_series(jobs: int, runs: int, noise: Noise, seed: int = 1) -> None:
    print(f"== 5c. function series: {jobs} jobs x {runs} runs per shift size, {2 * jobs} without a shift; "
          f"pinned baseline, noise of the {noise.name}; the throughput shift is one recorded top function "
          "(>= 1% of the CPU, chosen at random) growing by shift / its share; profile reps drawn from the "
          "16 of tests/data/runs/mset-aa-default")
    print("   without = the paired series' signals (in-run paired, E-Divisive); with = and the function "
          "series (Holm over the job's, findings placed by them); bisected = with, each regression "
          "bisected over its run's range as a job with a bisect: block does (bench/bisect_findings.py). "
          "A hit: a finding within one run of the shift; precision over every finding of the jobs "
          "with a shift")
    rng = random.Random(seed)
    bisector = Bisector(np.random.default_rng(seed))
    labels = ("without", "with", "bisected")
    with tempfile.TemporaryDirectory() as d:
        st = HistoryStore.open(Path(d) / "fn.sqlite")
        null = {label: (0, 0) for label in labels}
        _fn_jobs(st, 2 * jobs, None, runs, noise, rng, null, bisector)
        for size in FN_SIZES:
            tally = {label: (0, 0) for label in labels}
            _fn_jobs(st, jobs, size, runs, noise, rng, tally, bisector)
            cells = [f"{label} recall {_ci(t, jobs)} precision " + (f"{t / (t + f):.2f}" if t + f else "n/a")
                     for label, (t, f) in tally.items()]
            print(f"     shift {100 * size:+3.0f}%: " + "   ".join(cells))
    fa = "  ".join(f"{label} {_ci(f, 2 * jobs * runs, 100)}" for label, (_, f) in null.items())
    print(f"     false alerts per 100 runs [95% CI] ({2 * jobs * runs} shift-free runs): {fa}")
    total_runs = 2 * jobs * runs + len(FN_SIZES) * jobs * runs
    ck = bisector.clock
    print(f"     bisected: {bisector.bisections} bisections ({100 * bisector.bisections / total_runs:.1f} per "
          f"100 runs), {bisector.reps / max(bisector.bisections, 1):.0f} paired reps each on average, "
          f"ending {dict(bisector.outcomes)}; minimum change {bisector.min_change:.0%}, each step's reps from figure "
          f"15's recorded ones (sd {bisector.sd:.1%} a rep); a budget of {ck.budget_s / 60:.0f} min at --size small "
          f"({ck.rep_s:.0f} s a paired rep, {ck.look_s:.0f} s a look, {ck.build_s:.0f} s a probe's build)")
    for line in bisector.lines():
        print(f"       {line}")
    print(f"     goal at -2%: recall >= {FN_GOAL[0]}, precision >= {FN_GOAL[1]}; at most {FN_GOAL[2]:.0f} "
          "false alert per 100 runs")


def _many_functions_job(job: str, days: int, seed: int) -> list[dict]:
    """A job whose runs carry 48 focus functions: ~300 points per run, like a profile-rich job."""
    runs = make_job(job, days, [], seed=seed).runs
    for r in runs:
        focus = r["profile"]["focus"]
        r["profile"]["focus"] = [dict(f, name=f"{f['name']}_{k}") for k in range(12) for f in focus]
        r["profile"]["movers"] = []
    return runs


BATCH = 100            # runs per ingest transaction (~10,000 points)
TARGETS = {"ingest": 10_000, "series": 0.200, "page": 2.0}    # points/s, s, s (issue 18)


def _best(f, times: int = 5) -> float:
    """The fastest of `times` calls, in s: the machine's noise only ever adds time."""
    best = math.inf
    for _ in range(times):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def _ingest(st: HistoryStore, jobs: int, days: int) -> tuple[int, float]:
    """Every job's runs in batches of BATCH (generating them is not timed); runs, s."""
    n, spent = 0, 0.0
    for j in range(jobs):
        runs = [Incoming(r, f"job{j}") for r in _many_functions_job(f"job{j}", days, seed=j)]
        t0 = time.perf_counter()
        for i in range(0, len(runs), BATCH):
            st.ingest_batch(runs[i:i + BATCH])
        spent += time.perf_counter() - t0
        n += len(runs)
    return n, spent


def store_speed(url: str, label: str, points: int, jobs: int) -> None:
    st = HistoryStore.open(url)
    if st.jobs():
        raise SystemExit(f"bench/history.py: {label} store {url} holds runs already: give an empty one")
    per_run = len(extract(_many_functions_job("probe", 1, 0)[0])[0])   # both roles
    days = max(1, points // (per_run * jobs))
    n, dt = _ingest(st, jobs, days)
    total = n * per_run
    print(f"   {label}: ingest {total:,} points ({n:,} runs, {BATCH} a transaction): "
          f"{total / dt:,.0f} points/s, {n / dt:,.0f} runs/s (target >= {TARGETS['ingest']:,})")
    again = [Incoming(r, "job0") for r in _many_functions_job("job0", min(days, BATCH), seed=0)]
    before = len(st.runs("job0"))
    t = _best(lambda: st.ingest_batch(again), 1)
    print(f"   {label}: the same {len(again)} runs again: {len(st.runs('job0')) - before} added "
          f"(idempotent), {t:.2f} s")
    one = _best(lambda: st.series("job0", "cand", names=["paired:job0"]))
    print(f"   {label}: one series query (paired:job0, {days:,} runs, with reps): {1000 * one:.0f} ms "
          f"(target <= {1000 * TARGETS['series']:.0f} ms)")
    series = st.series("job0", "cand")
    whole = _best(lambda: st.series("job0", "cand"), 3)
    lean = _best(lambda: st.series("job0", "cand", reps=False), 3)
    print(f"   {label}: all of one job's series ({len(series)} series x {days:,} runs = "
          f"{sum(map(len, series.values())):,} points): {1000 * whole:.0f} ms with reps, "
          f"{1000 * lean:.0f} ms without")
    from analysis.history.trends import write_trend_pages
    with tempfile.TemporaryDirectory() as out:
        page = _best(lambda: write_trend_pages(st, Path(out), jobs=["job0"]), 3)
        size = (Path(out) / "job0.html").stat().st_size
    print(f"   {label}: one job's trend page (40 plots of {days:,} runs, downsampled; full data beside it): "
          f"{page:.2f} s, {size / 1e6:.1f} MB (target <= {TARGETS['page']:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/history.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=30, help="jobs per shift size for 5a (default 30)")
    ap.add_argument("--runs", type=int, default=40, help="runs per job for 5a (default 40)")
    ap.add_argument("--points", type=int, default=1_000_000, help="points stored for 5b (default 1M)")
    ap.add_argument("--store-jobs", type=int, default=10, help="jobs for 5b (default 10)")
    ap.add_argument("--pg", metavar="URL", help="PostgreSQL for 5b (default: a local server started here)")
    ap.add_argument("--noise", choices=("quiet", "noisy"), default="quiet",
                    help="noise of 5a: the quiet evening (default) or the noisier day recorded here")
    ap.add_argument("--figure", choices=("5a", "5b", "5c", "all"), default="all",
                    help="5a (detectors), 5b (store at scale), 5c (function series) or all (default)")
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of 5a's and 5c's synthetic jobs (default 1, the figures in docs/history.md)")
    a = ap.parse_args(argv)
    if a.figure in ("5a", "all"):
        detector(a.jobs, a.runs, QUIET if a.noise == "quiet" else NOISY, a.seed)
    if a.figure in ("5c", "all"):
        function_series(a.jobs, a.runs, QUIET if a.noise == "quiet" else NOISY, a.seed)
    if a.figure in ("5a", "5c"):
        return 0
    print(f"== 5b. history store at about {a.points:,} metric points (times: the best of 3-5 calls)")
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
