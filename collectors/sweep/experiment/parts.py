"""An experiment's parts as sweeps: the sweep options at a size, each part's plan and the
`stallscope sweep` arguments that run it, the experiment.json that lists them, and the
loop that runs every part's sweep (commands.experiment and
commands.experiment_fanout both use these)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence

from analysis.sweep.experiment.manifest import (ExperimentManifest, ExperimentPart, load_experiment_dir,
                                                save_experiment_dir)
from analysis.inputs.host import HostSummary
from analysis.sweep.sweep_manifest import load_sweep
from analysis.sweep.seeds import match
from analysis.clock import now_iso
from analysis.sweep.sweep_options import SweepOptions
from analysis.inputs.option_specs import (OptionError, argv_for, budget_for, check_precision, first_stage,
                                          taken_by)
from collectors.runner.progress import duration
from collectors.sweep.experiment.file import Experiment, Part
from collectors.sweep.plan import Plan, PlanError, make_plan
from collectors.sweep.selection import Keep
from collectors.sweep.sweeper import Sweeper, options_of
from collectors.workload.casefile import CaseError
from collectors.workload.overrides import parse_sets

PREFIX = "stallscope experiment:"


def sweep_options(exp: Experiment, size: str, skip_unfit: bool,
                  precision: tuple[float | None, float | None] = (None, None),
                  llc_bytes: int | None = None) -> SweepOptions:
    """The file's options at `size`, then the command line's (--skip-unfit, --precision,
    --budget and --llc win over the file's)."""
    known = set(SweepOptions.__dataclass_fields__)
    opts = {k: v for k, v in exp.options_at(size).items() if k in known}
    # the file may list the seed's sizes that a smaller host cannot hold (reported as not run)
    opts["skip_unfit"] = skip_unfit or bool(opts.get("skip_unfit"))
    if llc_bytes is not None:
        opts["llc_bytes"] = llc_bytes
    if precision[0] is not None:
        opts["precision"], opts["budget_s"] = precision
    opts["budget_s"] = budget_for(opts.get("precision"), opts.get("budget_s"))
    opts["reps"] = first_stage(opts.get("reps"), opts.get("precision"))
    out = SweepOptions(**opts)
    try:
        check_precision(out.precision, out.budget_s, out.reps)
    except OptionError as e:
        raise PlanError(f"{exp.path}: {e}") from None
    return out


def part_plan(exp: Experiment, part: Part, size: str, opts: SweepOptions, host: HostSummary,
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
    values = {o.name: getattr(opts, o.name, None) for o in taken_by("sweep")}
    argv = [part.case, *argv_for("sweep", {**values, "size": size})]
    for a in part.axes_at(size):
        argv += ["--axis", a]
    for s in part.sets_at(size) + list(extra):
        argv += ["--set", s]
    for v in exp.variants:
        argv += ["--variant", v]
    if part.lookup:
        argv += ["--lookup", ",".join(part.lookup)]
    return argv


def part_entry(part: Part) -> ExperimentPart:
    """A part as experiment.json lists it (its sweep directory is named by its id)."""
    return ExperimentPart(part.id, part.heading, part.case, part.id, part.metric,
                          list(part.seed_rows))


def experiment_doc(exp: Experiment, size: str, argv: Sequence[str], parts: list[ExperimentPart],
                   only: Sequence[str] = ()) -> ExperimentManifest:
    """experiment.json of a new experiment directory."""
    return ExperimentManifest(
        name=exp.name, title=exp.title, seed=exp.seed, technique=exp.technique,
        file=str(exp.path), size=size, variants=list(exp.variants), created=now_iso(),
        command=["stallscope", "experiment", *argv], notes=list(exp.notes), parts=parts,
        only=list(only), status="running")


def seed_of(part: Part):
    """A planned point's seed change (a fraction), for the plan's reps per point."""
    def change(p) -> float | None:
        row = match(part.seed_rows, p.spec.labels)
        if row is None:
            return None
        return row.cand / row.base - 1 if row.base and row.cand else row.gain
    return change


def _left_s(exp_dir: Path, d: ExperimentManifest) -> float:
    """The plan's estimate of every point of every part not yet complete."""
    return sum(q.estimate.time_s for p in d.parts for q in load_sweep(exp_dir / p.sweep).points
               if q.status not in ("complete", "skipped"))


def run_parts(exp_dir: Path, progress: bool, log) -> int:
    d = load_experiment_dir(exp_dir)
    rcs = []
    for i, p in enumerate(d.parts):
        sweep_dir = exp_dir / p.sweep
        m = load_sweep(sweep_dir)
        if m.status == "complete":
            continue
        log(f"{PREFIX} part {i + 1}/{len(d.parts)}: {p.id} ({p.heading}); "
            f"the experiment about {duration(_left_s(exp_dir, d))} left (the plan's estimate)")
        rc = Sweeper(sweep_dir, m, options_of(m), progress=progress, log=log).run()
        if rc == 130:
            d.status = "interrupted"
            save_experiment_dir(exp_dir, d)
            log(f"{PREFIX} resume with: stallscope experiment --resume {exp_dir}")
            return 130
        rcs.append(rc)
    d.status = "complete" if not any(rcs) else "incomplete"
    save_experiment_dir(exp_dir, d)
    return 1 if any(rcs) else 0

