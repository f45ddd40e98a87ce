"""`stallscope demo`: the demo's run (collectors/runner/demo.py names its variants and
sizes) through the run API, then its report; --help prints that module's description."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.inputs.option_specs import LLC, PAIRING, PROFILE_REPS, REPS, SEPARATE_PROFILE_REPS, SIZE, TARGET_UNITS
from analysis.report.summary_text import text_lines
from analysis.report.writer import report_run
from collectors.command import run_command
from collectors.host import procs
from collectors.runner import demo
from collectors.runner.api import RunOutcome, RunRequest, execute, plan_run
from collectors.runner.options import RunOptions
from commands.options import add_option


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope demo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=demo.__doc__,
        epilog=(
            "examples:\n"
            "  make demo                                   # full size, ~13 min on 2 cores (builds and dataset included)\n"
            "  stallscope demo --size small      # CI size, a few minutes\n"
            "  stallscope demo --reps 16 --out reports/demo16   # a narrower interval\n\n"
            "The same comparison for any case and variants: make compare CASE=... BASE=... CAND=..."
        ),
    )
    add_option(SIZE, p, "demo", choices=sorted(demo.SIZES))
    add_option(LLC, p, "demo")
    add_option(REPS, p, "demo")
    add_option(PROFILE_REPS, p, "demo", metavar=None)
    p.add_argument("--unpaired", action="store_true",
                   help="restart the server for every throughput rep instead of pairing windows "
                        "(needs no room for two datasets; wider intervals)")
    p.add_argument("--no-stalls", action="store_true",
                   help="skip the in-cache control (the case again over a dataset of at most 1/4 of "
                        "the last-level cache, a few minutes): without it the report has no memory-"
                        "stall table, only CPU time")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one field of the case, type-checked like a case file (repeat): "
                        "workload.pipeline=16, dataset.keys=1M")
    p.add_argument("--out", default="reports/demo", help="report directory (default reports/demo)")
    p.add_argument("--runs", default="runs", help="where the run directory goes (default runs/)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def request(args: argparse.Namespace) -> RunRequest:
    """The demo's run, typed (what `make demo` measures)."""
    case, reps, windows, sets = demo.SIZES[args.size]
    decides = reps is None and args.reps is None and not args.unpaired
    opts = RunOptions(reps=args.reps or reps or TARGET_UNITS, profile_reps=args.profile_reps,
                      paired_windows=windows, size=args.size, llc_bytes=args.llc_bytes,
                      pairing="unpaired" if args.unpaired else PAIRING.default,
                      targets=decides, budget_s=demo.BUDGET_S if decides else None,
                      stalls=not args.no_stalls and not args.unpaired)
    return RunRequest(case, [demo.BASE, demo.cand_spec()], opts, sets=[*sets, *args.set], out=Path(args.runs),
                      progress=not args.no_progress)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    req = request(args)
    how = ("throughput reps per variant, interleaved" if args.unpaired
           else "paired reps (both servers loaded, ABBA windows)")
    prof = ("perf in the paired windows" if req.options.profile_reps is None and not args.unpaired
             else f"{req.options.profile_reps or SEPARATE_PROFILE_REPS} profile reps per variant")
    reps = ("paired reps planned for the targets" if req.options.targets else str(req.options.reps))
    print(f"stallscope demo: {demo.BASE}  vs  {req.variants[1]}\n"
          f"  case {req.case} (size {args.size}), {reps} {how} + {prof}"
          + (f"; set: {', '.join(req.sets)}" if req.sets else ""), file=sys.stderr)
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
