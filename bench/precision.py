"""`make bench` figure 4: how precise is each way of measuring throughput, for the same
time on the machine?

Runs the demo comparison (Redis vs Redis + the MSET bucket-prefetch patch, case
mset-50keys) twice with no profile reps: unpaired (a server restart and dataset reload per
throughput rep, reps interleaved ABBA) and paired (both builds loaded at once, the load
switched between them in ABBA windows), each given about the same wall-clock budget, and
prints the half-width of each one's 95% interval of the throughput change, with the time
each took. Both run directories stay under --runs for a closer look.

  .venv/bin/python bench/precision.py                    # default size: ~2 x 6 min on 2 cores
  .venv/bin/python bench/precision.py --size small       # a few minutes, plumbing only
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.compare.engine import analyse  # noqa: E402
from analysis.compare.options import CompareOptions  # noqa: E402
from analysis.inputs.rundir import load_run  # noqa: E402
from collectors.runner import cli as run_cli  # noqa: E402
from collectors.runner.demo import BASE, cand_spec  # noqa: E402

# Reps per mode so both take about the same time at default size on a 2-core VM: an
# unpaired rep is one restart (~16 s) + 2 s warm-up + 20 s; a paired rep loads both
# servers side by side (~17 s), warms each for 2 s and runs 64 windows of 0.25 s (~21 s
# with the switches). Both intervals are over reps (docs/statistics.md, "The rep is the
# unit"): the paired one over 4 reps' ratios, the unpaired one over 6 + 6 reps.
PLAN = {"default": {"unpaired": 6, "paired": 4}, "small": {"unpaired": 4, "paired": 2}}


def one(mode: str, reps: int, size: str, runs: Path) -> tuple[float, dict]:
    argv = ["mset-50keys", "--variant", BASE, "--variant", cand_spec(REPO), "--size", size,
            "--reps", str(reps), "--profile", "off", "--out", str(runs), "--no-progress"]
    argv.append("--paired" if mode == "paired" else "--unpaired")
    before = set(runs.glob("*/manifest.json"))
    t0 = time.monotonic()
    rc = run_cli.main(argv)
    wall = time.monotonic() - t0
    new = sorted(set(runs.glob("*/manifest.json")) - before)
    if rc != 0 or not new:
        raise SystemExit(f"bench/precision: the {mode} run failed (exit {rc})")
    r = analyse(load_run(new[-1].parent), CompareOptions())
    row = (r.paired or r.throughput)[0]
    c = row.change
    return wall, {"run": str(new[-1].parent), "n": f"{row.base.n}+{row.cand.n}",
                  "change": c.rel, "lo": c.rel_ci_low, "hi": c.rel_ci_high, "method": c.method}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(PLAN), default="default")
    ap.add_argument("--runs", default="runs/bench-precision", help="where the two runs go")
    a = ap.parse_args(argv)
    runs = Path(a.runs)
    runs.mkdir(parents=True, exist_ok=True)
    print(f"== 4. precision of the throughput change, unpaired vs paired (size {a.size})")
    for mode, reps in PLAN[a.size].items():
        wall, res = one(mode, reps, a.size, runs)
        half = (res["hi"] - res["lo"]) / 2 * 100 if res["lo"] is not None else float("nan")
        print(f"   {mode:<9} {reps} reps, {wall / 60:5.1f} min: change {res['change'] * 100:+.1f}% "
              f"[{res['lo'] * 100:+.1f}, {res['hi'] * 100:+.1f}]%  half-width {half:.1f} pp "
              f"(n={res['n']}; {res['method']}) -> {res['run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
