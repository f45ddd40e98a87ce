"""This host's measured noise: the spread of every finished paired run (and A/A run), kept so
that plans can say how many reps a change of a given size needs here (`stallscope sweep|
experiment --plan`, docs/statistics.md).

One JSON file in the build cache, `noise.json`: per host (CPU model, CPUs, memory), per case
and size, the runs measured, newest last:

    {"schema": 1, "hosts": {"<host key>": {"<case>@<size>": [
        {"run": RUN_ID, "at": ISO time, "mode": "servers"|"config"|"off", "aa": bool,
         "units": n, "sd": sd of the units' log ratios, "unit_s": median seconds a unit,
         "change": mean log ratio, "fixed_s": median seconds of a paired rep outside its
         windows, "window_wall_s": median wall seconds of one window}, ...]}}}

(the last two: paired reps that booked their phases, so that a plan knows what a window
and the rest of a rep cost here: collectors/runner/rep_plan.py)

A unit is what an interval is over: a paired rep, or an A/B block of separate reps. Runs
with fewer than 3 units say nothing about spread and are not kept; a host keeps its newest
MAX_KEPT runs per case and size. A run's spread includes what its change itself varied by
(a prefetch's gain moves with the host's memory contention), which is what a plan for a real
change needs; an A/A run's spread is the host alone.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis import run_spread
from analysis.clock import now_iso
from analysis.inputs.host import HostSummary
from analysis.inputs.run_spread import RunSpread
from analysis.inputs.rundir import write_json
from collectors.variants.builder import records_dir

SCHEMA = 1
MAX_KEPT = 20


def store_path() -> Path:
    """noise.json among the host's records (collectors.variants.builder.records_dir)."""
    return records_dir() / "noise.json"


def host_key(host: HostSummary) -> str:
    """Runs compare only on the same kind of machine."""
    return host.key()


@dataclass(frozen=True)
class Noise:
    """What a plan needs: the spread of one unit and what a unit costs."""
    sd: float                 # of a unit's log ratio
    unit_s: float             # median wall seconds of one unit
    runs: int                 # runs it comes from
    source: str               # "this case" | "other cases on this host"
    latest: str               # when the newest of them ran
    # a paired rep's seconds outside its windows (start, load, settle, warm-up, fold) and one
    # window's wall seconds (the window and its switching): None before a run booked them
    fixed_s: float | None = None
    window_wall_s: float | None = None
    # the spread between runs this case's A/A runs showed here beyond their own intervals
    # (analysis/run_spread.py): no number of reps narrows a run's interval below it. With
    # fewer than 3 of them, the one recorded on another host (run_spread.default, `borrowed`
    # set); None for unpaired runs
    between: RunSpread | None = None


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {"schema": SCHEMA, "hosts": {}}
    return doc if isinstance(doc, dict) and doc.get("schema") == SCHEMA else {"schema": SCHEMA, "hosts": {}}


def record(host: HostSummary, case: str, size: str, entry: dict[str, Any],
           path: Path | None = None) -> bool:
    """Keep one finished run's spread (False when it has too few units to say anything)."""
    if entry.get("units", 0) < 3 or entry.get("sd") is None:
        return False
    path = path or store_path()
    doc = _load(path)
    runs = doc["hosts"].setdefault(host_key(host), {}).setdefault(f"{case}@{size}", [])
    runs[:] = [r for r in runs if r.get("run") != entry.get("run")] + [entry]
    del runs[:-MAX_KEPT]
    write_json(path, doc)         # atomic: a reader sees the old file or the new one
    return True


def entry(run_id: str, mode: str, aa: bool, log_ratios: list[float], unit_seconds: list[float],
          at: str | None = None, fixed_seconds: list[float] | None = None,
          window_seconds: list[float] | None = None) -> dict[str, Any]:
    """One run's line of the store; `at`: when it ran (the manifest's created time);
    `fixed_seconds`, `window_seconds`: each paired rep's seconds outside its windows and
    per window (where its phases were booked)."""
    med = (lambda xs, nd: round(statistics.median(xs), nd) if xs else None)
    return {"run": run_id, "at": at or now_iso(),
            "mode": mode, "aa": aa, "units": len(log_ratios),
            "sd": round(statistics.stdev(log_ratios), 6) if len(log_ratios) > 1 else None,
            "unit_s": med(unit_seconds, 1),
            "change": round(statistics.fmean(log_ratios), 6) if log_ratios else None,
            "fixed_s": med(fixed_seconds, 1), "window_wall_s": med(window_seconds, 4)}


def lookup(host: HostSummary, case: str, size: str, paired: bool = True,
           path: Path | None = None) -> Noise | None:
    """The spread to plan with: this case's runs on this host when there are any, else
    every case's on this host (pooled variances); None when this host measured nothing."""
    cases = _load(path or store_path())["hosts"].get(host_key(host), {})
    want = [r for r in cases.get(f"{case}@{size}", []) if (r.get("mode") != "off") == paired]
    source = "this case"
    if not want:
        want = [r for rs in cases.values() for r in rs if (r.get("mode") != "off") == paired]
        source = "other cases on this host"
    want = [r for r in want if r.get("sd") is not None and r.get("units", 0) >= 3]
    if not want:
        return None
    # pooled: each run's variance weighted by its degrees of freedom
    dof = sum(r["units"] - 1 for r in want)
    sd = math.sqrt(sum((r["units"] - 1) * r["sd"] ** 2 for r in want) / dof)
    secs = [r["unit_s"] for r in want if r.get("unit_s")]
    # what a rep costs: only this case's runs (another case loads another dataset)
    mine = cases.get(f"{case}@{size}", []) if source == "this case" else []
    fixed = [r["fixed_s"] for r in mine if r.get("fixed_s") and r.get("window_wall_s")]
    wall = [r["window_wall_s"] for r in mine if r.get("fixed_s") and r.get("window_wall_s")]
    return Noise(sd=sd, unit_s=statistics.median(secs) if secs else 0.0, runs=len(want),
                 source=source, latest=max(r.get("at", "") for r in want),
                 fixed_s=statistics.median(fixed) if fixed else None,
                 window_wall_s=statistics.median(wall) if wall else None,
                 between=(between(mine) or run_spread.default()) if paired else None)


def between(runs: list[dict[str, Any]]) -> RunSpread | None:
    """The spread between runs of this case's A/A runs here (None with too few of them)."""
    aa = [r for r in runs if r.get("aa") and r.get("change") is not None and r.get("sd") is not None
          and r.get("mode") != "off"]
    return run_spread.estimate(((r["change"], r["sd"], r["units"]) for r in aa),
                               latest=max((r.get("at", "") for r in aa), default=""))
