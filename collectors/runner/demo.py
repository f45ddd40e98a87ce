"""`make demo`: the main job on an embedded default.

Baseline: Redis built from its Debian source package. Candidate: the same source plus
cases/patches/mset-bucket-prefetch.patch (batched dict-bucket prefetch in MSET, the
technique of redis/redis#15043). Case: MSET with 50 keys per command over a keyspace
many times larger than L3. Throughput is measured paired: both builds loaded at once and
the load switched between them in short ABBA windows (--paired), which gives a far
narrower interval on a noisy host than a server restart per rep (--unpaired, the old
way). perf samples both servers in those same windows (every other ABBA block), so each
function's CPU time per MSET is a paired ratio too, and the blocks without perf measure
the profiler's own cost. Then the reports in reports/demo/ (report.md, report.html,
results.json, flame graphs, pprof).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.inputs.option_specs import PROFILE_REPS, REPS, SEPARATE_PROFILE_REPS, SIZE
from analysis.report.summary_text import text_lines
from analysis.report.writer import report_run
from collectors.command import run_command
from collectors.host import procs
from collectors.runner.api import RunOutcome, RunRequest, execute, plan_run
from collectors.runner.options import RunOptions

REPO = Path(__file__).resolve().parents[2]
PATCH = "cases/patches/mset-bucket-prefetch.patch"   # relative to REPO
# Pinned to the version the patch was written for (Debian testing will move past 8.0).
BASE = "base=debsrc:redis@8.0"
CAND = f"prefetch=debsrc:redis@8.0+patch={PATCH}"


def cand_spec(cwd: Path | None = None) -> str:
    """CAND as typed from the repository root (so the manifest and the report's reproduce
    command stay short); from any other directory the patch path is made absolute, or
    the build would look for cases/patches/ under that directory."""
    cwd = Path.cwd() if cwd is None else cwd
    if (cwd / PATCH).resolve() == (REPO / PATCH).resolve():
        return CAND
    return f"prefetch=debsrc:redis@8.0+patch={REPO / PATCH}"

# Per size: (case, paired reps, windows per paired rep). Each window is 0.25 s and perf
# samples every other ABBA block of them, so the profiles are paired too. Unpaired
# (--unpaired), the reps are throughput reps per variant and 3 separate profile reps per
# variant follow. The paired interval is over reps (docs/statistics.md, "The rep is the
# unit"). Throughput needs few windows (10 reps of 64 gave +-1.3 points on 2026-11-27); a
# function's cost per MSET needs samples: at the rate a 1% profiler budget allows here
# (199 Hz), lookupKey's flat cost (11% of samples) is ~90 samples a rep a side at 64
# windows, a per-rep spread of ~15% from counting alone: +-12 points over 10 reps. A rep's
# fixed part (two 10M-key loads, rehash, warm-up) is ~27 s and a window ~0.33 s, so 128
# windows double the samples for ~3 more minutes: +-9.4 points, the demo 12 min 47 s from
# a fresh clone (README).
SIZES = {
    "default": ("mset-50keys", 10, 128),
    # 3: the fewest paired reps whose interval is over reps and decides (window pairs of
    # fewer reps are shown but decide nothing: docs/statistics.md)
    "small": ("mset-50keys", 3, 64),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog=(
            "examples:\n"
            "  make demo                                   # full size, ~13 min on 2 cores (builds and dataset included)\n"
            "  stallscope demo --size small      # CI size, a few minutes\n"
            "  stallscope demo --reps 16 --out reports/demo16   # a narrower interval\n\n"
            "The same comparison for any case and variants: make compare CASE=... BASE=... CAND=..."
        ),
    )
    SIZE.add(p, "demo", choices=sorted(SIZES))
    REPS.add(p, "demo")
    PROFILE_REPS.add(p, "demo", metavar=None)
    p.add_argument("--unpaired", action="store_true",
                   help="restart the server for every throughput rep instead of pairing windows "
                        "(needs no room for two datasets; wider intervals)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one field of the case, type-checked like a case file (repeat): "
                        "workload.pipeline=16, dataset.keys=1M")
    p.add_argument("--out", default="reports/demo", help="report directory (default reports/demo)")
    p.add_argument("--runs", default="runs", help="where the run directory goes (default runs/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def request(args: argparse.Namespace) -> RunRequest:
    """The demo's run, typed (what `make demo` measures)."""
    case, reps, windows = SIZES[args.size]
    opts = RunOptions(reps=args.reps or reps, profile_reps=args.profile_reps, paired_windows=windows,
                      size=args.size, pairing="unpaired" if args.unpaired else "auto")
    return RunRequest(case, [BASE, cand_spec()], opts, sets=list(args.set), out=Path(args.runs),
                      progress=not args.no_progress)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    req = request(args)
    how = ("throughput reps per variant, interleaved" if args.unpaired
           else "paired reps (both servers loaded, ABBA windows)")
    prof = ("perf in the paired windows" if req.options.profile_reps is None and not args.unpaired
             else f"{req.options.profile_reps or SEPARATE_PROFILE_REPS} profile reps per variant")
    print(f"stallscope demo: {BASE}  vs  {req.variants[1]}\n"
          f"  case {req.case} (size {args.size}), {req.options.reps} {how} + {prof}"
          + (f"; set: {', '.join(args.set)}" if args.set else ""), file=sys.stderr)
    log = (lambda msg: print(msg, file=sys.stderr))
    procs.install_signal_handlers()
    outcome: list[RunOutcome] = []
    rc = run_command("stallscope demo", lambda: _run(req, args.out, log, outcome),
                     "(finished reps are kept: stallscope run --resume RUN_DIR)")
    if rc == 0 and outcome:
        print(f"stallscope demo: report in {args.out}/report.md, {args.out}/report.html, "
              f"{args.out}/results.json (run directory {outcome[0].run_dir})", file=sys.stderr)
    return rc


def _run(req: RunRequest, out: str, log, outcome: list[RunOutcome]) -> int:
    done = execute(plan_run(req, log))
    outcome.append(done)
    if done.status not in (0, 1):
        log(f"stallscope demo: the run stopped (exit {done.status}); finished reps are kept, "
            f"finish it with: stallscope run --resume {done.run_dir}")
        return done.status
    r, _ = report_run(done.run_dir, out)
    print("\n".join(text_lines(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
