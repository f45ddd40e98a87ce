"""`--merge DIR...`: a sweep's (or an experiment's) directory assembled from point runs made
anywhere (`--point ID`; docs/sweeps.md, "Over many runners").

Each point's run directory is copied in as it is, so every row of the merged report is
computed from the run directory its point run wrote, as in a sweep run whole. Refused:
points of another plan (the message names what differs) and a point given twice. Merged
and flagged in the report (analysis.sweep.hosts): points run on different host models.
Points no directory was given for are listed as not run."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from analysis.inputs.host import RunnerHost
from analysis.inputs.layout import EXPERIMENT_JSON, SWEEP_JSON
from analysis.sweep.experiment.manifest import (ExperimentFanout, ExperimentWhole, load_experiment_dir,
                                                save_experiment_dir)
from analysis.sweep.fanout_entry import FanoutEntry, MergedPoint
from analysis.sweep.hosts import model
from analysis.sweep.sweep_manifest import SweepError, SweepFanout, SweepManifest, load_sweep, save_sweep
from analysis.clock import now_iso
from collectors.runner.new_manifest import unique_id
from collectors.sweep.fanout import differences

Log = Callable[[str], None]
F = TypeVar("F", SweepFanout, ExperimentFanout)
NOT_RUN = "not run: no point directory for it among those merged"


@dataclass
class PointRun:
    """One point run's directory and the "fanout" of its sweep.json (a SweepFanout) or
    experiment.json (an ExperimentFanout): plan, identity, point, host, whole."""
    path: Path
    fan: FanoutEntry

    @property
    def point(self) -> str:
        return self.fan.point or ""

    @property
    def host(self) -> RunnerHost | None:
        return self.fan.host


def point_dirs(dirs: list[Path], name: str) -> list[Path]:
    """Each DIR that holds `name`, else its subdirectories that do (a download of many
    point artifacts into one directory)."""
    found = []
    for d in dirs:
        if (d / name).is_file():
            found.append(d)
            continue
        subs = sorted(p.parent for p in d.glob(f"*/{name}"))
        if not subs:
            raise SweepError(f"{d}: no {name} in it or in its subdirectories; give the point "
                             "directories `--point` wrote (or the directory that holds them)")
        found += subs
    return found


def read_runs(dirs: list[Path], name: str, read: Callable[[Path], FanoutEntry | None]) -> list[PointRun]:
    """The point runs (`read`: a directory's fanout entry), checked: one plan, each point once."""
    runs = []
    for d in point_dirs(dirs, name):
        fan = read(d)
        if fan is None or not fan.is_point_run:
            raise SweepError(f"{d / name}: not a point run (no fanout point); `--merge` takes the "
                             "directories that `--point ID` wrote")
        runs.append(PointRun(d, fan))
    first = runs[0]
    seen: dict[str, Path] = {}
    for r in runs:
        if r.fan.plan != first.fan.plan:
            diff = differences(first.fan.identity, r.fan.identity)
            raise SweepError(f"{r.path} is a point of another plan than {first.path} (plan "
                             f"{r.fan.plan} vs {first.fan.plan}): {'; '.join(diff) or 'identities differ'}. "
                             "Merge only points run with one command line (the one --emit-matrix was given)")
        if r.point in seen:
            raise SweepError(f"point {r.point} given twice: {seen[r.point]} and {r.path}; keep one")
        seen[r.point] = r.path
    return runs


def merge_points(m: SweepManifest, runs: dict[str, tuple[Path, SweepManifest, RunnerHost | None]],
                 dest: Path) -> SweepManifest:
    """The whole sweep's sweep.json (`m`, filled in) with each point from its run (point id ->
    (its sweep directory, its sweep.json, its host)), the run directories copied to dest."""
    dest.mkdir(parents=True, exist_ok=False)
    for p in m.points:
        if p.id not in runs:
            p.status, p.reason, p.run_dir = "skipped", NOT_RUN, None
            continue
        where, pm, host = runs[p.id]
        src = pm.point(p.id)
        if src.run_dir:
            shutil.copytree(where / src.run_dir, dest / src.run_dir, symlinks=True)
        for k in ("status", "reason", "run_dir", "started", "finished", "took_s", "estimate"):
            setattr(p, k, getattr(src, k))
        p.host = src.host or host
    bad = [p.id for p in m.points if p.status != "complete"]
    m.status = "complete" if not bad else "incomplete"
    m.reason = f"{len(bad)} point(s) not complete: {', '.join(bad)}" if bad else None
    first = next((runs[p.id][1] for p in m.points if p.id in runs), None)
    if first is not None:
        m.host = first.host            # the L3 the plot marks: the first merged point's host
    save_sweep(dest, m)
    return m


def _merged(kind: type[F], runs: list[PointRun], mine: list[PointRun]) -> F:
    """The "fanout" of a merged sweep.json (SweepFanout) or experiment.json
    (ExperimentFanout): the plan and where each point came from."""
    return kind(plan=runs[0].fan.plan, identity=runs[0].fan.identity, at=now_iso(),
                merged=[MergedPoint.of(r.point, str(r.path), r.host) for r in mine])


def say(runs: list[PointRun], total: int, log: Log) -> None:
    by: dict[str, list[str]] = {}
    for r in runs:
        by.setdefault(model(r.host), []).append(r.point)
    log(f"merged {len(runs)} of {total} point(s) of plan {runs[0].fan.plan}")
    if len(by) > 1:
        log(f"points ran on {len(by)} host models (flagged in the report): "
            + "; ".join(f"{', '.join(ids)} on {m}" for m, ids in by.items()))


def _whole(run: PointRun, what: str) -> Any:
    """A point run's whole plan (a SweepManifest or an ExperimentWhole)."""
    if run.fan.whole is None:
        raise SweepError(f"{run.path}: its fanout has no whole {what} (\"whole\"); run the point "
                         "again with `--point ID`")
    return run.fan.whole


def merge_sweep(dirs: list[Path], out: Path, log: Log) -> tuple[Path, SweepManifest]:
    runs = read_runs(dirs, SWEEP_JSON, lambda d: load_sweep(d).fanout)
    whole: SweepManifest = _whole(runs[0], "sweep")
    dest = out / unique_id(whole.sweep_id, out)
    got = {r.point: (r.path, load_sweep(r.path), r.host) for r in runs}
    whole.sweep_id, whole.fanout = dest.name, _merged(SweepFanout, runs, runs)
    m = merge_points(whole, got, dest)
    say(runs, len(m.points), log)
    return dest, m


def merge_experiment(dirs: list[Path], out: Path, log: Log) -> tuple[Path, str]:
    """The experiment directory: experiment.json and one merged sweep per part."""
    runs = read_runs(dirs, EXPERIMENT_JSON, lambda d: load_experiment_dir(d).fanout)
    whole: ExperimentWhole = _whole(runs[0], "experiment")
    doc = whole.experiment
    dest = out / unique_id(whole.id, out)
    dest.mkdir(parents=True)
    states, total = [], 0
    for part in doc.parts:
        mine = [r for r in runs if r.point.split(".", 1)[0] == part.id]
        got = {r.point.split(".", 1)[1]: (r.path / part.sweep, load_sweep(r.path / part.sweep), r.host)
               for r in mine}
        m = whole.parts[part.id]
        m.fanout = _merged(SweepFanout, runs, mine)
        m = merge_points(m, got, dest / part.sweep)
        states.append(m.status)
        total += len(m.points)
    doc.status = "complete" if all(s == "complete" for s in states) else "incomplete"
    doc.fanout = _merged(ExperimentFanout, runs, runs)
    save_experiment_dir(dest, doc)
    say(runs, total, log)
    return dest, doc.status
