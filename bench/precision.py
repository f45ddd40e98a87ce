"""`make bench` figure 4: how precise is each way of measuring throughput, per minute of
machine time?

Runs the demo comparison (Redis vs Redis + the MSET bucket-prefetch patch, case
mset-50keys) once per method with no profile reps, each given about the same wall-clock
time, and prints the half-width of each one's 95% interval of the throughput change (as a
fraction of the ratio, the width `--precision` asks for), the minutes it took, and what
that means per minute: half-width × √minutes (lower is better: a method twice as precise
needs a quarter of the time) and the minutes the method would need for ±2%. The methods:

- unpaired: a server start and dataset reload per throughput rep, reps interleaved ABBA;
- paired, 16 pairs a rep: both builds loaded at once, 32 ABBA windows of 0.25 s a rep;
- paired, 32 pairs a rep (the default): 64 windows a rep.

Every run directory stays under --runs for a closer look. docs/statistics.md ("Where the
noise comes from") reads the choice of defaults off these figures. These are real A/B runs
(a +40% change, at settings of their own): what they measure is kept in records of the
bench's own (--records, STALLSCOPE_RECORDS for its runs), never among the host's, whose
noise and sample costs plan the user's next runs.

  .venv/bin/python bench/precision.py                    # default size: ~3 x 7 min on 2 cores
  .venv/bin/python bench/precision.py --size small       # a few minutes, plumbing only
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.compare.engine import analyse  # noqa: E402
from analysis.compare.options import CompareOptions  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402
from collectors.runner.api import RunRequest, execute, plan_run  # noqa: E402
from collectors.runner.options import RunOptions  # noqa: E402
from collectors.runner.demo import BASE, cand_spec  # noqa: E402

# (label, reps, RunOptions fields) per size, reps chosen so each method takes about the
# same time at default size on the 2-core VM: an unpaired rep is one restart and reload
# (~35 s) + 2 s warm-up + 20 s; a paired rep loads and settles both servers side by side
# (~46 s) and then runs 0.69 s per window pair.
PLAN = {
    "default": [("unpaired", 6, {"pairing": "unpaired"}),
                ("paired, 16 pairs a rep", 7, {"pairing": "paired", "paired_windows": 32}),
                ("paired, 32 pairs a rep (default)", 6, {"pairing": "paired"})],
    "small": [("unpaired", 3, {"pairing": "unpaired"}),
              ("paired, 16 pairs a rep", 3, {"pairing": "paired", "paired_windows": 32}),
              ("paired, 32 pairs a rep (default)", 3, {"pairing": "paired"})],
}


def one(how: dict, reps: int, size: str, runs: Path) -> tuple[float, dict]:
    opts = RunOptions(reps=reps, profile="off", size=size, **how)
    req = RunRequest("mset-50keys", [BASE, cand_spec(REPO)], opts, out=runs, progress=False)
    t0 = time.monotonic()
    outcome = execute(plan_run(req, lambda msg: print(msg, file=sys.stderr)))
    wall = time.monotonic() - t0
    if outcome.status != 0:
        raise SystemExit(f"bench/precision: the run {how} failed (exit {outcome.status})")
    r = analyse(load_run(outcome.run_dir), CompareOptions())
    row = (r.paired or r.throughput)[0]
    c = row.change
    return wall, {"run": str(outcome.run_dir), "n": f"{row.base.n}+{row.cand.n}",
                  "change": c.rel, "lo": c.rel_ci_low, "hi": c.rel_ci_high, "method": c.method}


def use_own_records(path: Path) -> Path:
    """Point this process's runs at records of the bench's own (collectors.variants.builder.
    records_dir reads STALLSCOPE_RECORDS), whatever the user exported."""
    path.mkdir(parents=True, exist_ok=True)
    os.environ["STALLSCOPE_RECORDS"] = str(path.resolve())
    return path


def half_width(lo: float, hi: float) -> float:
    """Half-width of an interval of the ratio, as a fraction of the ratio (log scale)."""
    return math.expm1((math.log1p(hi) - math.log1p(lo)) / 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(PLAN), default="default")
    ap.add_argument("--runs", default="runs/bench-precision", help="where the runs go")
    ap.add_argument("--records", default=None,
                    help="the records the runs write (noise, sample costs; default RUNS/records)")
    a = ap.parse_args(argv)
    runs = Path(a.runs)
    runs.mkdir(parents=True, exist_ok=True)
    use_own_records(Path(a.records) if a.records else runs / "records")
    print(f"== 4. precision of the throughput change per minute of machine time (size {a.size})")
    for label, reps, how in PLAN[a.size]:
        wall, res = one(how, reps, a.size, runs)
        minutes = wall / 60
        if res["lo"] is None:
            print(f"   {label:<34} {reps} reps, {minutes:4.1f} min: no interval ({res['method']})")
            continue
        hw = half_width(res["lo"], res["hi"])
        print(f"   {label:<34} {reps} reps, {minutes:4.1f} min: change {res['change'] * 100:+.1f}% "
              f"[{res['lo'] * 100:+.1f}, {res['hi'] * 100:+.1f}]%, half-width ±{hw:.1%} of the ratio; "
              f"{hw * 100 * math.sqrt(minutes):.1f} %·√min, ±2% would take {minutes * (hw / 0.02) ** 2:.0f} min "
              f"(n={res['n']}) -> {res['run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
