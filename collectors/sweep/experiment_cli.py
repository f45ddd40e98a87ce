"""`stallscope experiment`: one seed experiment (cases/experiments/NAME.yaml) run with one
command: each part a sweep (collectors.sweep), all inside experiments/<id>/, reported
with the seed's numbers beside ours (docs/experiments.md)."""
from __future__ import annotations

import argparse
from dataclasses import replace
import sys
from datetime import datetime
from pathlib import Path
from typing import Sequence

from analysis.inputs.rundir import write_json
from analysis.sweep.experiment_report import load_experiment_json, report_experiment
from analysis.sweep.manifest import SweepError, load_sweep
from analysis.sweep.seeds import match
from collectors.host import procs
from collectors.command import run_command
from collectors.runner.manifest import now_iso
from collectors.runner.progress import duration
from collectors.runner.options import DEFAULT_BUDGET_S
from collectors.sweep.cli import (add_precision_arguments, build_all, create, host_summary,
                                  precision_options)
from collectors.sweep.experiment import Experiment, Part, experiment_files, load_experiment
from collectors.sweep.options import SweepOptions
from collectors.sweep.noise_plan import noise_lines
from collectors.sweep.plan import Plan, PlanError, check_fit, make_plan, plan_lines, total_s
from collectors.sweep.selection import Keep, select
from collectors.sweep.sweeper import Sweeper, options_of
from collectors.workload.casefile import CaseError
from collectors.workload.overrides import parse_sets

PREFIX = "stallscope experiment:"
EPILOG = """\
Examples:
  stallscope experiment list                          # the experiments and their run times
  stallscope experiment mset-15043 --plan             # points, time and memory; runs nothing
  stallscope experiment mset-15043                    # default size: the seed's table shape
  stallscope experiment mset-15043 --size small       # the few-minute CI version
  stallscope experiment zrange-2867 --set server.config.hz=100 --plan   # one field changed
  stallscope experiment rdb-load-2311 --only load:value=10,keys=10M --precision 3% --budget 20m
                                                      # one row again, until its interval is ±3%
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
    p.add_argument("--size", default="default", help="small (CI, minutes) | default (the README's run time)")
    p.add_argument("--plan", action="store_true", help="print every part's plan and exit")
    p.add_argument("--skip-unfit", action="store_true", help="run the points that fit this host's memory")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override one case field at every point of every part, after the part's "
                        "own settings, type-checked like a case file (repeat): server.config.hz=100")
    p.add_argument("--only", action="append", default=[], metavar="PART[:AXIS=VALUE,...]",
                   help="run only these rows (repeat; --plan shows the parts and their points): "
                        "`load` is a whole part, `load:value=10,keys=10M` one row; the report "
                        "holds the selected rows, each beside its seed row")
    add_precision_arguments(p)
    p.add_argument("--resume", metavar="EXP_DIR", help="run what an interrupted experiment left")
    p.add_argument("--report", metavar="EXP_DIR", help="only (re)render the report of EXP_DIR")
    p.add_argument("--out", default="experiments", help="where experiment directories go (default experiments/)")
    p.add_argument("--report-out", metavar="DIR", help="report directory (default reports/<id>/)")
    p.add_argument("--no-progress", action="store_true", help="no per-rep progress (point lines stay)")
    return p


def sweep_options(exp: Experiment, size: str, skip_unfit: bool,
                  precision: tuple[float | None, float | None] = (None, None)) -> SweepOptions:
    """The file's options at `size`, then the command line's (--skip-unfit, --precision and
    --budget win over the file's)."""
    known = set(SweepOptions.__dataclass_fields__)
    opts = {k: v for k, v in exp.options_at(size).items() if k in known}
    # the file may list the seed's sizes that a smaller host cannot hold (reported as not run)
    opts["skip_unfit"] = skip_unfit or bool(opts.get("skip_unfit"))
    if precision[0] is not None:
        opts["precision"], opts["budget_s"] = precision
    elif opts.get("precision") is not None and opts.get("budget_s") is None:
        opts["budget_s"] = DEFAULT_BUDGET_S
    return SweepOptions(**opts)


def part_plan(exp: Experiment, part: Part, size: str, opts: SweepOptions, host: dict,
              extra: Sequence[str] = (), keep: Keep | None = None) -> Plan:
    try:
        # The part's lookup function lands in its sweep.json options (the report reads it).
        opts = replace(opts, lookup=list(part.lookup)) if part.lookup else opts
        return make_plan(part.case, size, exp.variants, part.axes_at(size),
                         parse_sets(part.sets_at(size) + list(extra)), opts, host, keep)
    except (CaseError, PlanError) as e:
        raise type(e)(f"{exp.path}: part {part.id}: {e}") from None


def sweep_argv(exp: Experiment, part: Part, size: str, opts: SweepOptions,
               extra: Sequence[str] = ()) -> list[str]:
    """The `stallscope sweep` arguments that run the same part (its sweep.json's command)."""
    argv = [part.case, "--size", size, "--reps", str(opts.reps), "--profile", opts.profile,
            "--profile-reps", str(opts.profile_reps),
            "--pairing", opts.pairing, "--paired-window", f"{opts.paired_window_s:g}",
            "--paired-windows", str(opts.paired_windows)]
    if opts.precision is not None:
        argv += ["--precision", f"{opts.precision:g}", "--budget", f"{opts.budget_s:g}"]
    for a in part.axes_at(size):
        argv += ["--axis", a]
    for s in part.sets_at(size) + list(extra):
        argv += ["--set", s]
    for v in exp.variants:
        argv += ["--variant", v]
    if part.lookup:
        argv += ["--lookup", ",".join(part.lookup)]
    return argv


def list_experiments() -> int:
    for name, path in experiment_files().items():
        exp = load_experiment(str(path))
        print(f"{name:<24} {exp.seed:<22} {exp.title} (default size: {exp.default_run_time or 'see --plan'})")
    return 0


def _new(args: argparse.Namespace, argv: list[str], log) -> tuple[Path, Experiment] | None:
    exp = load_experiment(args.name)
    opts = sweep_options(exp, args.size, args.skip_unfit, precision_options(args))
    host = host_summary()
    plans = [part_plan(exp, part, args.size, opts, host, args.set) for part in exp.parts]
    kept = select([p.id for p in exp.parts], plans, args.only)
    parts_plans = [(exp.parts[i], plans[i] if keep is None else
                    part_plan(exp, exp.parts[i], args.size, opts, host, args.set, keep))
                   for i, keep in kept.items()]
    for part, plan in parts_plans:
        log(f"{PREFIX} part {part.id}: {part.heading}")
        for line in plan_lines(plan) + noise_lines(plan, _seed_of(part)):
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
    eid = f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{exp.name}"
    exp_dir = out / eid
    exp_dir.mkdir(parents=True, exist_ok=False)
    parts = []
    for part, plan in parts_plans:
        create(plan, sweep_argv(exp, part, args.size, opts, args.set), exp_dir, sweep_id=part.id,
               extra={"experiment": {"name": exp.name, "part": part.id}})
        parts.append({"id": part.id, "heading": part.heading, "case": part.case, "sweep": part.id,
                      "metric": part.metric, "seed_rows": [r.to_json() for r in part.seed_rows]})
    write_json(exp_dir / "experiment.json", {
        "schema": 1, "name": exp.name, "title": exp.title, "seed": exp.seed, "technique": exp.technique,
        "file": str(exp.path), "size": args.size, "variants": exp.variants, "created": now_iso(),
        "command": ["stallscope", "experiment", *argv], "notes": exp.notes, "parts": parts,
        "only": list(args.only), "status": "running"})
    return exp_dir, exp


def _seed_of(part: Part):
    """A planned point's seed change (a fraction), for the plan's reps per point."""
    def change(p) -> float | None:
        row = match(part.seed_rows, p.spec.labels)
        if row is None:
            return None
        return row.cand / row.base - 1 if row.base and row.cand else row.gain
    return change


def _left_s(exp_dir: Path, d: dict) -> float:
    """The plan's estimate of every point of every part not yet complete."""
    return sum(q.estimate.time_s for p in d["parts"] for q in load_sweep(exp_dir / p["sweep"]).points
               if q.status not in ("complete", "skipped"))


def run_parts(exp_dir: Path, progress: bool, log) -> int:
    d = load_experiment_json(exp_dir)
    rcs = []
    for i, p in enumerate(d["parts"]):
        sweep_dir = exp_dir / p["sweep"]
        m = load_sweep(sweep_dir)
        if m.status == "complete":
            continue
        log(f"{PREFIX} part {i + 1}/{len(d['parts'])}: {p['id']} ({p.get('heading', '')}); "
            f"the experiment about {duration(_left_s(exp_dir, d))} left (the plan's estimate)")
        rc = Sweeper(sweep_dir, m, options_of(m), progress=progress, log=log).run()
        if rc == 130:
            d["status"] = "interrupted"
            write_json(exp_dir / "experiment.json", d)
            log(f"{PREFIX} resume with: stallscope experiment --resume {exp_dir}")
            return 130
        rcs.append(rc)
    d["status"] = "complete" if not any(rcs) else "incomplete"
    write_json(exp_dir / "experiment.json", d)
    return 1 if any(rcs) else 0


def report(exp_dir: Path, out: Path | None) -> None:
    out = out or Path("reports") / exp_dir.name
    paths = report_experiment(exp_dir, out)
    print(f"{PREFIX} report in {paths['md']}, {paths['html']}, {paths['json']}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True))
    procs.install_signal_handlers()
    return run_command("stallscope experiment", lambda: _main(args, argv, log),
                       (PlanError, CaseError, SweepError, ValueError, procs.ToolNotFound),
                       "before the first point (builds so far are cached)")


def _main(args: argparse.Namespace, argv: list[str], log) -> int:
    report_out = Path(args.report_out) if args.report_out else None
    if args.name == "list":
        return list_experiments()
    if args.report:
        report(Path(args.report), report_out)
        return 0
    if args.resume:
        exp_dir = Path(args.resume)
        d = load_experiment_json(exp_dir)
        d.setdefault("resumes", []).append({"at": now_iso(), "command": ["stallscope", "experiment", *argv]})
        write_json(exp_dir / "experiment.json", d)
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
