"""A new sweep directory: what a sweep plan records of this host, the sweep.json of a new
sweep, the directory made with it (a whole sweep's, or one point's for --merge), and the
variants built before the first point. `stallscope sweep` and `stallscope experiment`
(commands/) make theirs with it."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from analysis.clock import now_iso
from analysis.inputs.host import HostSummary
from analysis.sweep.sweep_manifest import SweepFanout, SweepManifest, save_sweep
from collectors.host import machine
from collectors.runner.new_manifest import new_run_id, unique_id
from collectors.sweep.fanout import digest, identity, point_host, whole_argv
from collectors.sweep.plan import Plan, parse_variants
from collectors.variants.builder import build_variant


def host_summary() -> HostSummary:
    """What a sweep plan records of this host (sweep.json `host`)."""
    return machine.host_facts().summary()


def new_sweep_id(case: str, out: Path) -> str:
    return new_run_id(case, out)


def case_name(plan: Plan) -> str:
    return Path(plan.case.partition("@")[0]).stem


def manifest_of(plan: Plan, argv: list[str], sweep_id: str, extra: dict | None = None) -> SweepManifest:
    """The sweep.json of a new sweep of `plan` (every point pending or skipped)."""
    m = SweepManifest(sweep_id=sweep_id, created=now_iso(), command=["stallscope", "sweep", *argv],
                      case=plan.case, size=plan.size, variants=list(plan.variants),
                      axes=plan.sweep_axes(), points=plan.sweep_points(), sets=dict(plan.sets),
                      options=dataclasses.replace(plan.opts), host=plan.host)
    m.extra.update(extra or {})
    return m


def create(plan: Plan, argv: list[str], out: Path, sweep_id: str | None = None,
           extra: dict | None = None, fanout: SweepFanout | None = None) -> Path:
    """Make the sweep directory and its sweep.json (every point pending or skipped)."""
    sid = sweep_id or new_sweep_id(case_name(plan), out)
    m = manifest_of(plan, argv, sid, extra)
    m.fanout = fanout
    d = out / sid
    d.mkdir(parents=True, exist_ok=False)
    save_sweep(d, m)
    return d


def build_all(variants: list[str], log) -> None:
    """Every variant built (or found in the cache) before the first point."""
    for s in parse_variants(variants):
        build_variant(s, log=log)


def create_point(whole: Plan, plan: Plan, argv: list[str], out: Path, point: str) -> Path:
    """The sweep directory of one point run (`--point`): the point alone, as a sweep of one
    point, with what --merge needs in sweep.json "fanout": the plan's identity, the host,
    and the whole sweep's sweep.json."""
    ident = identity(whole)
    h = digest(ident)
    wid = f"{case_name(whole)}-{h[:10]}"
    fan = SweepFanout(plan=h, identity=ident, point=point, host=point_host(),
                      whole=manifest_of(whole, whole_argv(argv), wid))
    return create(plan, argv, out, sweep_id=unique_id(f"{wid}-{point}", out), fanout=fan)
