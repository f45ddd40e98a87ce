"""`stallscope sweep`: run one case over the cartesian product of axes for two or more
variants, one run directory per point, and report the table and the crossover plot
(docs/sweeps.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.compare.options import CompareOptions
from analysis.inputs.manifest import Resume
from analysis.inputs.option_specs import OptionError, budget_for, check_precision, first_stage, taken_by
from analysis.sweep.sweep_manifest import load_sweep
from analysis.sweep.sweep_options import SweepOptions
from analysis.sweep.writer import report_sweep
from collectors.variants.spec import GRAMMAR
from collectors.host import procs
from collectors.command import run_command
from analysis.clock import now_iso
from collectors.sweep.directory import build_all, create, create_point, host_summary
from collectors.sweep.fanout import digest, find_point, identity, matrix_entry, matrix_json
from collectors.sweep.merge import merge_sweep
from collectors.sweep.noise_plan import noise_lines
from collectors.sweep.plan import PlanError, check_fit, make_plan, plan_lines
from collectors.sweep.sweeper import PREFIX, Sweeper, options_of
from collectors.workload.overrides import parse_sets
from commands.options import add_option, add_fanout_arguments

SWEEPS_DIR = "sweeps"

EPILOG = """\
Axes (repeat --axis; points are their cartesian product, the first axis varying slowest):
  --axis keys                 a matrix axis of the case, all its values
  --axis keys=1M,10M          a matrix axis, some values
  --axis dataset.keys=100K,1M any case field, values typed like --set (K/M/G = 10^3/6/9)
  --axis server.config.prefetch-batch-max-size=0,16   one server setting
  no --axis: every matrix axis of the case (those not fixed by CASE@axis=value)

Examples:
  # MSET prefetch across key counts and value sizes, small size (CI):
  stallscope sweep mset-50keys --size small --axis dataset.keys=50K,100K --axis value=10,100 \\
      --variant base=debsrc:redis \\
      --variant prefetch=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch

  # the plan only (points, reps, time and memory per point), nothing built or run:
  stallscope sweep zrange-129members --plan --variant a=debsrc:valkey --variant b=...

  # config-only variants are paired in one server process at every point:
  stallscope sweep get-iothreads --axis pipeline --set server.io_threads=2 \\
      --variant pf0=debsrc:valkey+config=prefetch-batch-max-size=0 \\
      --variant pf16=debsrc:valkey+config=prefetch-batch-max-size=16
  # three variants: interleaved reps; pf8's report against pf0 in reports/<id>/vs-pf8/
  stallscope sweep get-iothreads --axis dataset.keys=1M,5M --variant pf0=... \\
      --variant pf16=... --variant pf8=debsrc:valkey+config=prefetch-batch-max-size=8

  # over many runners: the points as a matrix, one point per runner, then the merge
  stallscope sweep mset-50keys --axis value=10,100 --variant ... --variant ... --emit-matrix
  stallscope sweep mset-50keys --axis value=10,100 --variant ... --variant ... \\
      --point p02-value-100 --out points/        # on each runner, one point ID each
  stallscope sweep --merge points/                # one directory holding them all

  stallscope sweep --resume sweeps/20261123-010203-mset-50keys    # finish an interrupted sweep
  stallscope sweep --report sweeps/20261123-010203-mset-50keys    # re-render its reports

Output: sweeps/<sweep-id>/sweep.json and one run directory per point (<point-id>/<run-id>/,
an ordinary run directory); reports/<sweep-id>/ with report.md, report.html (table and
crossover plot), results.json, crossover.svg and every point's own report in <point-id>/.
Exit status: 0 every point complete, 1 some point failed, 2 bad input or refused plan,
130 interrupted (resume with --resume).
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope sweep", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run one case over the cartesian product of axes for two or more variants (one run "
                    "directory per point) and report the change at every point: the table, the "
                    "crossover plot and results.json. Prints the plan (points, reps, estimated "
                    "time and peak memory per point) first and refuses points that do not fit "
                    "this host's memory.",
        epilog=EPILOG + "\n" + GRAMMAR)
    p.add_argument("case", nargs="?", help="case name (cases/*.yaml), name@axis=value, or a case file")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC",
                   help="give two or more: the baseline first, then the candidate(s) (grammar below)")
    p.add_argument("--axis", action="append", default=None, metavar="AXIS[=V1,V2,...]",
                   help="an axis to sweep (repeat); see Axes below")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a case field at every point, after the size (repeat)")
    shared = {o.name: o for o in taken_by("sweep")}
    for name in ("size", "llc_bytes", "reps", "profile", "profile_reps", "frequency_hz", "pairing"):
        add_option(shared[name], p, "sweep")
    for name in ("paired_window_s", "paired_windows", "precision", "budget_s"):
        add_option(shared[name], p, "sweep")
    p.add_argument("--lookup", metavar="F1,F2", type=lambda s: [x for x in s.split(",") if x],
                   help="the function of the lookup column (first found); default: the focus "
                        "function with the highest baseline CPU time per operation")
    p.add_argument("--skip-unfit", action="store_true",
                   help="run the points that fit this host's memory and list the others as not run")
    p.add_argument("--plan", action="store_true", help="print the plan and exit (nothing built or run)")
    add_fanout_arguments(p, "sweep", "ID",
                         '{"point": ID, "labels": ..., "estimate_s": ...}')
    p.add_argument("--resume", metavar="SWEEP_DIR", help="run the points of SWEEP_DIR that are not complete")
    p.add_argument("--report", metavar="SWEEP_DIR", help="only (re)render the reports of SWEEP_DIR")
    p.add_argument("--out", default=SWEEPS_DIR, help="where sweep directories go (default sweeps/)")
    p.add_argument("--report-out", metavar="DIR", help="report directory (default reports/<sweep-id>/)")
    p.add_argument("--no-report", action="store_true", help="do not render the reports at the end")
    p.add_argument("--no-progress", action="store_true", help="no per-rep progress (point lines stay)")
    return p


def precision_options(args: argparse.Namespace, reps: int | None = None) -> tuple[float | None, float | None]:
    """--precision and its budget (the default one with a precision), checked with the first
    stage `reps` (sweep and experiment: PlanError for a broken rule)."""
    try:
        check_precision(args.precision, args.budget_s, reps)
    except OptionError as e:
        raise PlanError(str(e)) from None
    return args.precision, budget_for(args.precision, args.budget_s)


def _options(args: argparse.Namespace) -> SweepOptions:
    reps = first_stage(args.reps, args.precision)
    if reps < 1 or (args.profile_reps is not None and args.profile_reps < 0):
        raise PlanError("--reps must be at least 1 and --profile-reps at least 0")
    precision, budget = precision_options(args, reps)
    return SweepOptions(reps=reps, profile=args.profile, profile_reps=args.profile_reps,
                        frequency_hz=args.frequency_hz, pairing=args.pairing,
                        paired_window_s=args.paired_window_s, paired_windows=args.paired_windows,
                        lookup=list(args.lookup or []), skip_unfit=args.skip_unfit,
                        precision=precision, budget_s=budget)


def report(sweep_dir: Path, out: Path | None, lookup: list[str] | None = None) -> int:
    m = load_sweep(sweep_dir)
    out = out or Path("reports") / m.sweep_id
    res, paths = report_sweep(sweep_dir, out, CompareOptions(), lookup or None)
    print(f"{PREFIX} report in {paths['md']}, {paths['html']}, {paths['json']}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True))
    procs.install_signal_handlers()
    return run_command("stallscope sweep", lambda: _main(args, argv, log),
                       "before the first point (builds finished so far are cached)")


def _main(args: argparse.Namespace, argv: list[str], log) -> int:
    if args.merge:
        return _merge(args, log)
    if args.report:
        return report(Path(args.report), Path(args.report_out) if args.report_out else None, args.lookup)
    if args.resume:
        sweep_dir = Path(args.resume)
        m = load_sweep(sweep_dir)
        m.resumes.append(Resume(now_iso(), ["stallscope", "sweep", *argv]))
        left = [p.id for p in m.points if p.status not in ("complete", "skipped")]
        log(f"{PREFIX} resuming {sweep_dir}: {len(left)} of {len(m.points)} points to run "
            f"({', '.join(left) or 'none'})")
        sweeper = Sweeper(sweep_dir, m, options_of(m), progress=not args.no_progress, log=log)
    else:
        sweeper = _new(args, argv, log)
        if sweeper is None:
            return 0
    rc = sweeper.run()
    print(str(sweeper.dir))
    if rc in (0, 1) and not args.no_report and not args.point:
        report(sweeper.dir, Path(args.report_out) if args.report_out else None, args.lookup)
    return rc


def _merge(args: argparse.Namespace, log) -> int:
    dest, m = merge_sweep([Path(d) for d in args.merge], Path(args.out),
                          lambda msg: log(f"{PREFIX} {msg}"))
    print(str(dest))
    if not args.no_report:
        report(dest, Path(args.report_out) if args.report_out else None, args.lookup)
    return 0 if m.status == "complete" else 1


def _new(args: argparse.Namespace, argv: list[str], log) -> Sweeper | None:
    if not args.case:
        raise PlanError("name a case (e.g. mset-50keys), or give --resume, --report or --merge")
    opts = _options(args)
    plan = whole = make_plan(args.case, args.size, args.variant, args.axis, parse_sets(args.set), opts,
                             host_summary())
    if args.emit_matrix:
        print(matrix_json([matrix_entry(p.spec.id, p) for p in plan.points]))
        log(f"{PREFIX} {len(plan.points)} point(s) of plan {digest(identity(plan))}; run each with "
            "the same arguments and --point ID instead of --emit-matrix, then --merge their directories")
        return None
    if args.point:
        target = find_point([p.spec.id for p in whole.points], args.point, "sweep")
        labels = next(p.spec.labels for p in whole.points if p.spec.id == target)
        plan = make_plan(args.case, args.size, args.variant, args.axis, parse_sets(args.set), opts,
                         whole.host, keep=lambda got: got == labels)
    for line in plan_lines(plan) + noise_lines(plan):
        log(f"{PREFIX} {line}")
    check_fit(plan)
    if args.plan:
        return None
    build_all(plan.variants, log)
    sweep_dir = (create_point(whole, plan, argv, Path(args.out), args.point) if args.point
                 else create(plan, argv, Path(args.out)))
    log(f"{PREFIX} {sweep_dir}")
    return Sweeper(sweep_dir, load_sweep(sweep_dir), opts, progress=not args.no_progress, log=log)
