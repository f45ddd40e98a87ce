"""`stallscope experiment`: one seed experiment (cases/experiments/NAME.yaml) run with one
command: each part a sweep (collectors.sweep), all inside experiments/<id>/, reported
with the seed's numbers beside ours (docs/experiments.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.inputs.manifest import Resume
from analysis.sweep.experiment.manifest import load_experiment_dir, save_experiment_dir
from analysis.sweep.experiment.report import report_experiment
from collectors.host import procs
from collectors.command import run_command
from analysis.clock import now_iso
from collectors.runner.new_manifest import new_run_id
from collectors.runner.progress import duration
from analysis.inputs.option_specs import BUDGET, LLC, PRECISION, SIZE
from collectors.sweep.directory import build_all, create, host_summary
from commands.sweep import precision_options
from collectors.sweep.experiment.file import Experiment, experiment_files, load_experiment
from collectors.sweep.experiment.parts import (PREFIX, experiment_doc, part_entry, part_plan, run_parts,
                                               seed_of, sweep_argv, sweep_options)
from collectors.sweep.noise_plan import noise_lines
from collectors.sweep.plan import PlanError, check_fit, plan_lines, total_s
from collectors.sweep.selection import select
from commands.options import add_option, add_fanout_arguments

EPILOG = """\
Examples:
  stallscope experiment list                          # the experiments and their run times
  stallscope experiment mset-15043 --plan             # points, time and memory; runs nothing
  stallscope experiment mset-15043                    # default size: the seed's table shape
  stallscope experiment mset-15043 --size tiny        # the few-minute CI version
  stallscope experiment zrange-2867 --set server.config.hz=100 --plan   # one field changed
  stallscope experiment rdb-load-2311 --only load:value=10,keys=10M --precision 3% --budget 20m
                                                      # one row again, until its interval is ±3%
  # over many runners: the points as a matrix, one point per runner, the merge; or the
  # GitHub Actions workflow that does all three (docs/experiments.md, "Over many runners")
  stallscope experiment mset-15043 --emit-matrix
  stallscope experiment mset-15043 --point mset10.p04-value-100-keys-10M --out points/
  stallscope experiment --merge points/
  stallscope experiment github mset-15043 --runner-group bench-trusted \\
      --runner-labels self-hosted,bare-metal --max-parallel 4
  stallscope experiment --resume experiments/20261123-010203-mset-15043
  stallscope experiment --report experiments/20261123-010203-mset-15043

Output: experiments/<id>/experiment.json and one sweep directory per part (each point an
ordinary run directory); reports/<id>/ with report.md, report.html (a table and a
crossover plot per part, the seed's numbers beside ours), results.json and every point's
own report. Exit status: 0 complete, 1 some point failed, 2 bad input, 130 interrupted.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope experiment", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run one seed experiment: the seed's table shape as sweeps of a case for two "
                    "variants on this machine, with the seed's own numbers in a column beside ours "
                    "and whether the direction agrees.", epilog=EPILOG)
    p.add_argument("name", nargs="?", help="an experiment (cases/experiments/NAME.yaml), a file, or `list`")
    add_option(SIZE, p, "experiment")
    add_option(LLC, p, "experiment")
    p.add_argument("--plan", action="store_true", help="print every part's plan and exit")
    p.add_argument("--skip-unfit", action="store_true", help="run the points that fit this host's memory")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one case field at every point of every part, after the part's "
                        "own settings, type-checked like a case file (repeat): server.config.hz=100")
    p.add_argument("--only", action="append", default=[], metavar="PART[:AXIS=VALUE,...]",
                   help="run only these rows (repeat; --plan shows the parts and their points): "
                        "`load` is a whole part, `load:value=10,keys=10M` one row; the report "
                        "holds the selected rows, each beside its seed row")
    add_option(PRECISION, p, "experiment")
    add_option(BUDGET, p, "experiment")
    add_fanout_arguments(p, "experiment", "PART.ID",
                         '{"point": PART.ID, "part": ..., "labels": ..., "estimate_s": ...}')
    p.add_argument("--resume", metavar="EXP_DIR", help="run what an interrupted experiment left")
    p.add_argument("--report", metavar="EXP_DIR", help="only (re)render the report of EXP_DIR")
    p.add_argument("--out", default="experiments", help="where experiment directories go (default experiments/)")
    p.add_argument("--report-out", metavar="DIR", help="report directory (default reports/<id>/)")
    p.add_argument("--no-progress", action="store_true", help="no per-rep progress (point lines stay)")
    return p


def list_experiments() -> int:
    for name, path in experiment_files().items():
        exp = load_experiment(str(path))
        print(f"{name:<24} {exp.seed:<22} {exp.title} (default size: {exp.default_run_time or 'see --plan'})")
    return 0


def _new(args: argparse.Namespace, argv: list[str], log) -> tuple[Path, Experiment] | None:
    exp = load_experiment(args.name)
    opts = sweep_options(exp, args.size, args.skip_unfit, precision_options(args), args.llc_bytes)
    host = host_summary()
    plans = [part_plan(exp, part, args.size, opts, host, args.set) for part in exp.parts]
    kept = select([p.id for p in exp.parts], plans, args.only)
    parts_plans = [(exp.parts[i], plans[i] if keep is None else
                    part_plan(exp, exp.parts[i], args.size, opts, host, args.set, keep))
                   for i, keep in kept.items()]
    for part, plan in parts_plans:
        log(f"{PREFIX} part {part.id}: {part.heading}")
        for line in plan_lines(plan) + noise_lines(plan, seed_of(part)):
            log(f"{PREFIX} {line}")
    log(f"{PREFIX} {exp.name} at size {args.size}: about "
        f"{duration(sum(total_s(p) for _, p in parts_plans))} of measurement, plus builds not yet cached"
        + (f" (only {', '.join(args.only)})" if args.only else ""))
    for _, plan in parts_plans:
        check_fit(plan)
    if args.plan:
        return None
    build_all(exp.variants, log)
    out = Path(args.out)
    eid = new_run_id(exp.name, out)     # -2, -3 ... when a second one starts in the same second
    exp_dir = out / eid
    exp_dir.mkdir(parents=True, exist_ok=False)
    parts = []
    for part, plan in parts_plans:
        create(plan, sweep_argv(exp, part, args.size, opts, args.set), exp_dir, sweep_id=part.id,
               extra={"experiment": {"name": exp.name, "part": part.id}})
        parts.append(part_entry(part))
    save_experiment_dir(exp_dir, experiment_doc(exp, args.size, argv, parts, args.only))
    return exp_dir, exp


def report(exp_dir: Path, out: Path | None) -> None:
    out = out or Path("reports") / exp_dir.name
    paths = report_experiment(exp_dir, out)
    print(f"{PREFIX} report in {paths['md']}, {paths['html']}, {paths['json']}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["github"]:
        from commands import experiment_github
        return experiment_github.main(argv[1:])
    args = parser().parse_args(argv)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True))
    procs.install_signal_handlers()
    return run_command("stallscope experiment", lambda: _main(args, argv, log),
                       "before the first point (builds so far are cached)")


def _fanout(args: argparse.Namespace, argv: list[str], log, report_out: Path | None) -> int:
    """--merge, --emit-matrix and --point (commands.experiment_fanout)."""
    from commands import experiment_fanout as fan
    if args.merge:
        exp_dir, status = fan.merge(args, log)
        print(str(exp_dir))
        report(exp_dir, report_out)
        return 0 if status == "complete" else 1
    if not args.name:
        raise PlanError("name the experiment whose points to list or run")
    exp = load_experiment(args.name)
    if args.emit_matrix:
        return fan.emit(exp, args, log)
    exp_dir, rc = fan.run_point(exp, args, argv, log)
    print(str(exp_dir))
    return rc


def _main(args: argparse.Namespace, argv: list[str], log) -> int:
    report_out = Path(args.report_out) if args.report_out else None
    if args.name == "list":
        return list_experiments()
    if args.merge or args.emit_matrix or args.point:
        return _fanout(args, argv, log, report_out)
    if args.report:
        report(Path(args.report), report_out)
        return 0
    if args.resume:
        exp_dir = Path(args.resume)
        d = load_experiment_dir(exp_dir)
        d.resumes = (d.resumes or []) + [Resume(now_iso(), ["stallscope", "experiment", *argv])]
        save_experiment_dir(exp_dir, d)
        log(f"{PREFIX} resuming {exp_dir}")
    elif not args.name:
        raise PlanError("name an experiment (`stallscope experiment list`), or give --resume/--report EXP_DIR")
    else:
        made = _new(args, argv, log)
        if made is None:
            return 0
        exp_dir = made[0]
        log(f"{PREFIX} {exp_dir}")
    rc = run_parts(exp_dir, not args.no_progress, log)
    print(str(exp_dir))
    if rc in (0, 1):
        report(exp_dir, report_out)
    return rc
