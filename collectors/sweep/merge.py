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
from typing import Any, Callable

from analysis.inputs.layout import EXPERIMENT_JSON, SWEEP_JSON
from analysis.sweep.experiment_manifest import ExperimentManifest, load_experiment_dir, save_experiment_dir
from analysis.sweep.hosts import model
from analysis.sweep.sweep_manifest import SweepError, SweepManifest, load_sweep, save_sweep
from analysis.clock import now_iso
from collectors.runner.new_manifest import unique_id
from collectors.sweep.fanout import differences

Log = Callable[[str], None]
NOT_RUN = "not run: no point directory for it among those merged"


@dataclass
class PointRun:
    """One point run's directory: its sweep.json (sweep) or experiment.json (experiment)."""
    path: Path
    fan: dict[str, Any]              # its "fanout" entry: plan, identity, point, host, whole
    doc: dict[str, Any]

    @property
    def point(self) -> str:
        return self.fan["point"]


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


def read_runs(dirs: list[Path], name: str, read: Callable[[Path], dict[str, Any]]) -> list[PointRun]:
    """The point runs, checked: one plan, each point once."""
    runs = []
    for d in point_dirs(dirs, name):
        doc = read(d)
        fan = doc.get("fanout") or {}
        if "point" not in fan or "plan" not in fan:
            raise SweepError(f"{d / name}: not a point run (no fanout point); `--merge` takes the "
                             "directories that `--point ID` wrote")
        runs.append(PointRun(d, fan, doc))
    first = runs[0]
    seen: dict[str, Path] = {}
    for r in runs:
        if r.fan["plan"] != first.fan["plan"]:
            diff = differences(first.fan.get("identity"), r.fan.get("identity"))
            raise SweepError(f"{r.path} is a point of another plan than {first.path} (plan "
                             f"{r.fan['plan']} vs {first.fan['plan']}): {'; '.join(diff) or 'identities differ'}. "
                             "Merge only points run with one command line (the one --emit-matrix was given)")
        if r.point in seen:
            raise SweepError(f"point {r.point} given twice: {seen[r.point]} and {r.path}; keep one")
        seen[r.point] = r.path
    return runs


def merge_points(whole: dict[str, Any], runs: dict[str, tuple[Path, SweepManifest, dict]],
                 dest: Path) -> SweepManifest:
    """The whole sweep's sweep.json with each point filled in from its run (point id ->
    (its sweep directory, its sweep.json, its host)), the run directories copied to dest."""
    m = SweepManifest.from_json(whole)
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
        p.host = dict(src.host or host)
    bad = [p.id for p in m.points if p.status != "complete"]
    m.status = "complete" if not bad else "incomplete"
    m.reason = f"{len(bad)} point(s) not complete: {', '.join(bad)}" if bad else None
    first = next((runs[p.id][1] for p in m.points if p.id in runs), None)
    if first is not None:
        m.host = dict(first.host)      # the L3 the plot marks: the first merged point's host
    save_sweep(dest, m)
    return m


def _merged(runs: list[PointRun], mine: list[PointRun]) -> dict[str, Any]:
    """sweep.json's "fanout" of a merged sweep: the plan and where each point came from."""
    return {"plan": runs[0].fan["plan"], "identity": runs[0].fan.get("identity"), "at": now_iso(),
            "merged": [{"point": r.point, "from": str(r.path), "host": r.fan.get("host", {})} for r in mine]}


def say(runs: list[PointRun], total: int, log: Log) -> None:
    by: dict[str, list[str]] = {}
    for r in runs:
        by.setdefault(model(r.fan.get("host", {})), []).append(r.point)
    log(f"merged {len(runs)} of {total} point(s) of plan {runs[0].fan['plan']}")
    if len(by) > 1:
        log(f"points ran on {len(by)} host models (flagged in the report): "
            + "; ".join(f"{', '.join(ids)} on {m}" for m, ids in by.items()))


def merge_sweep(dirs: list[Path], out: Path, log: Log) -> tuple[Path, SweepManifest]:
    runs = read_runs(dirs, SWEEP_JSON, lambda d: load_sweep(d).to_json())
    whole = runs[0].fan["whole"]
    dest = out / unique_id(whole["sweep_id"], out)
    got = {r.point: (r.path, load_sweep(r.path), r.fan.get("host", {})) for r in runs}
    m = merge_points({**whole, "sweep_id": dest.name, "fanout": _merged(runs, runs)}, got, dest)
    say(runs, len(m.points), log)
    return dest, m


def merge_experiment(dirs: list[Path], out: Path, log: Log) -> tuple[Path, str]:
    """The experiment directory: experiment.json and one merged sweep per part."""
    runs = read_runs(dirs, EXPERIMENT_JSON, lambda d: load_experiment_dir(d).to_json())
    whole = runs[0].fan["whole"]
    doc = ExperimentManifest.from_json(whole["experiment"])
    dest = out / unique_id(whole["id"], out)
    dest.mkdir(parents=True)
    states, total = [], 0
    for part in doc.parts:
        mine = [r for r in runs if r.point.split(".", 1)[0] == part.id]
        got = {r.point.split(".", 1)[1]: (r.path / part.sweep, load_sweep(r.path / part.sweep),
                                          r.fan.get("host", {})) for r in mine}
        m = merge_points({**whole["parts"][part.id], "fanout": _merged(runs, mine)}, got,
                         dest / part.sweep)
        states.append(m.status)
        total += len(m.points)
    doc.status = "complete" if all(s == "complete" for s in states) else "incomplete"
    doc.fanout = _merged(runs, runs)
    save_experiment_dir(dest, doc)
    say(runs, total, log)
    return dest, doc.status
