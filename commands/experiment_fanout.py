"""`stallscope experiment NAME --emit-matrix | --point ID`, and `--merge DIR...`: an
experiment's points over many runners (docs/experiments.md, "Over many runners").

A point's ID is its part's id and its id in that part's sweep joined by a dot
(`load.p03-value-100-keys-1M`): letters, digits, '.', '_' and '-' only, so it is safe on
a command line, in a directory name and in an artifact name. A point run is an ordinary
experiment directory holding that one point (both variants, on this machine), with what
--merge needs in experiment.json "fanout": the plan's identity, the host, and the whole
experiment's experiment.json and sweep.json of every part."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from analysis.inputs.host import HostSummary
from analysis.sweep.experiment.manifest import ExperimentFanout, ExperimentWhole, save_experiment_dir
from analysis.sweep.fanout_entry import ExperimentIdentity, PartIdentity
from analysis.sweep.sweep_options import SweepOptions
from collectors.sweep.directory import build_all, create, host_summary, manifest_of
from commands.sweep import precision_options
from collectors.sweep.experiment.file import Experiment, Part
from collectors.sweep.experiment.parts import (PREFIX, experiment_doc, part_entry, part_plan, run_parts,
                                               sweep_argv, sweep_options)
from collectors.runner.new_manifest import unique_id
from collectors.sweep.fanout import (digest, find_point, identity, matrix_entry, matrix_json, point_host,
                                     whole_argv)
from collectors.sweep.merge import merge_experiment
from collectors.sweep.noise_plan import noise_lines
from collectors.sweep.plan import Plan, PlannedPoint, PlanError, check_fit, plan_lines
from collectors.sweep.selection import select

SAFE_PART = re.compile(r"[A-Za-z0-9_-]+")


def point_id(exp: Experiment, part: Part, p: PlannedPoint) -> str:
    if not SAFE_PART.fullmatch(part.id):
        raise PlanError(f"{exp.path}: part id {part.id!r} cannot name a point on a command line or "
                        "in a directory name; use letters, digits, '-' and '_'")
    return f"{part.id}.{p.spec.id}"


def planned(exp: Experiment, args: argparse.Namespace, host: HostSummary) -> tuple[list[tuple[Part, Plan]], SweepOptions]:
    """The parts (those --only keeps) with their plans, and the sweep options."""
    opts = sweep_options(exp, args.size, args.skip_unfit, precision_options(args), args.llc_bytes)
    plans = [part_plan(exp, part, args.size, opts, host, args.set) for part in exp.parts]
    kept = select([p.id for p in exp.parts], plans, args.only)
    return [(exp.parts[i], plans[i] if keep is None else
             part_plan(exp, exp.parts[i], args.size, opts, host, args.set, keep))
            for i, keep in kept.items()], opts


def identity_of(exp: Experiment, args: argparse.Namespace, pps: list[tuple[Part, Plan]]) -> ExperimentIdentity:
    return ExperimentIdentity(experiment=exp.name, size=args.size, variants=list(exp.variants),
                              sets=list(args.set), only=list(args.only),
                              parts=[PartIdentity(part.id, identity(plan)) for part, plan in pps])


def emit(exp: Experiment, args: argparse.Namespace, log) -> int:
    pps, _ = planned(exp, args, host_summary())
    print(matrix_json([matrix_entry(point_id(exp, part, p), p, part.id) for part, plan in pps
                       for p in plan.points]))
    log(f"{PREFIX} {sum(len(pl.points) for _, pl in pps)} point(s) of plan "
        f"{digest(identity_of(exp, args, pps))}; run each with the same arguments and --point ID "
        "instead of --emit-matrix, then --merge their directories")
    return 0


def _whole(exp: Experiment, args: argparse.Namespace, argv: list[str], pps: list[tuple[Part, Plan]],
           opts: SweepOptions, wid: str) -> ExperimentWhole:
    """What the experiment run whole would have written first: experiment.json and every
    part's sweep.json (every point pending)."""
    parts = {part.id: manifest_of(plan, sweep_argv(exp, part, args.size, opts, args.set), part.id,
                                  extra={"experiment": {"name": exp.name, "part": part.id}})
             for part, plan in pps}
    doc = experiment_doc(exp, args.size, whole_argv(argv), [part_entry(p) for p, _ in pps], args.only)
    return ExperimentWhole(id=wid, experiment=doc, parts=parts)


def run_point(exp: Experiment, args: argparse.Namespace, argv: list[str], log) -> tuple[Path, int]:
    host = host_summary()
    pps, opts = planned(exp, args, host)
    ids = {point_id(exp, part, p): (part, p) for part, plan in pps for p in plan.points}
    pid = find_point(list(ids), args.point, "experiment")
    part, target = ids[pid]
    plan = part_plan(exp, part, args.size, opts, host, args.set,
                     keep=lambda got: got == target.spec.labels)
    log(f"{PREFIX} point {pid} of part {part.id}: {part.heading}")
    for line in plan_lines(plan) + noise_lines(plan):
        log(f"{PREFIX} {line}")
    check_fit(plan)
    build_all(exp.variants, log)
    ident = identity_of(exp, args, pps)
    h = digest(ident)
    wid = f"{exp.name}-{h[:10]}"
    out = Path(args.out)
    exp_dir = out / unique_id(f"{wid}-{pid}", out)
    exp_dir.mkdir(parents=True)
    create(plan, sweep_argv(exp, part, args.size, opts, args.set), exp_dir, sweep_id=part.id,
           extra={"experiment": {"name": exp.name, "part": part.id}})
    doc = experiment_doc(exp, args.size, argv, [part_entry(part)], args.only)
    doc.fanout = ExperimentFanout(plan=h, identity=ident, point=pid, host=point_host(),
                                  whole=_whole(exp, args, argv, pps, opts, wid))
    save_experiment_dir(exp_dir, doc)
    log(f"{PREFIX} {exp_dir}")
    return exp_dir, run_parts(exp_dir, not args.no_progress, log)


def merge(args: argparse.Namespace, log) -> tuple[Path, str]:
    return merge_experiment([Path(d) for d in args.merge], Path(args.out),
                            lambda msg: log(f"{PREFIX} {msg}"))
