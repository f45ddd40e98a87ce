"""The in-cache control of a run (docs/statistics.md, "Memory stalls without a PMU"): the same
case and builds again, paired, over a dataset of at most a quarter of the last-level cache and
no more than the cache the latency probe finds serving this host, in `<run>/incache/` (a run
directory of its own). Its cost per operation is each function's
execution with (almost) no DRAM stall; the run's minus it is the out-of-cache cost
(analysis/compare/stalls.py).

`plan` decides at plan time whether a run gets one, its dataset from the host's memory latency
probe (`measure_latency`, collectors/host/latency.py: how much of the cache really serves
here), and why not (a case whose cost does not grow with a dataset says so); `next_step`
tells the run API what is left after the run's reps: a control to make, or one a Ctrl-C cut
short to finish.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from analysis.errors import StallscopeError
from analysis.inputs.case import Case
from analysis.inputs.host import HostFacts
from analysis.inputs.latency import MemoryLatency
from analysis.inputs.layout import INCACHE_DIR, MANIFEST
from analysis.inputs.rundir import load_run
from analysis.inputs.stall_plan import StallPlan
from collectors.host.noise import Noise
from collectors.runner.options import RunOptions
from collectors.workload.working_set import keys_within

Log = Callable[[str], None]

FRACTION = 0.25          # of the last-level cache the control's dataset may take
MIN_KEYS = 10_000        # fewer: the cache is too small for a control of this dataset
# (paired reps, windows a rep) of the control: it preloads in seconds and its throughput is
# quiet, so short reps; more of them than windows, since its interval is over reps
REPS_DECIDES, WINDOWS_DECIDES = 8, 32
REPS_SMALL, WINDOWS_SMALL = 3, 32
# What a run that decides keeps of its budget for the control before this host has made
# one of the case: 8 reps took 2 min 10 s on a 480 MiB-L3 Xeon guest
# (tests/data/runs/mset-demo-looks-xeon480/incache), with room for a slower host. Once the
# host has recorded a control's seconds a rep (noise.json, size "incache"), its reps at those
# seconds with ROOM: on that host 2 min 27 s, and the 33 s the fixed figure kept too many
# decided whether the main run's ninth rep fitted (docs/statistics.md, "Nine reps of 48 windows").
CONTROL_S, ROOM = 180.0, 1.15


def wanted(opts: RunOptions) -> bool:
    """A run that decides makes a control unless --no-stalls; --quick and runs with a fixed
    --reps do not unless asked (the demo asks)."""
    if opts.stalls is not None:
        return opts.stalls and not opts.quick
    return opts.targets and not opts.quick


def budget_s(recorded: Noise | None) -> float:
    """The seconds a run that decides keeps of its budget for its control: `recorded`, this
    case's controls on this host (noise.lookup at size "incache"; another case's do not
    count), else CONTROL_S."""
    if recorded is None or recorded.source != "this case" or not recorded.unit_s:
        return CONTROL_S
    return round(REPS_DECIDES * recorded.unit_s * ROOM, 1)


def plan(case: Case, case_arg: str, sets: list[str], variants: list[str], opts: RunOptions,
         served_bytes: int | None = None) -> StallPlan:
    """Whether this run gets an in-cache control, its dataset, or why it has none. The
    control's dataset takes at most FRACTION of the last-level cache, and no more than the
    largest buffer the latency probe found the L3 to serve here (`served_bytes`: a guest
    that reports a 480 MiB L3 may be served 8-16 MiB of it)."""
    if not wanted(opts):
        why = "--no-stalls" if opts.stalls is False else "--quick" if opts.quick else \
            "only a run that decides (or --stalls) makes the in-cache control"
        return StallPlan(reason=f"not asked: {why}")
    ws, ds = case.working_set, case.dataset
    if case.workload.tool == "rdb-load":
        return StallPlan(reason="an rdb-load case times a load, not operations: its stall shows as "
                                "load time against the dataset's size (stallscope sweep over dataset.keys)")
    if ds.kind == "none" or not ds.keys:
        return StallPlan(reason="the case has no dataset whose size could move a cost out of cache")
    if ws is None or not ws.llc_bytes:
        return StallPlan(reason="the last-level cache is not known (give --llc SIZE)")
    room = FRACTION * ws.llc_bytes if not served_bytes else min(FRACTION * ws.llc_bytes, served_bytes)
    keys = keys_within(ds, 1.0, int(room))
    if keys >= ds.keys:
        return StallPlan(reason=f"the run's own dataset fits in the cache the control would take "
                                f"({room / 2**20:.0f} MiB): it is its own in-cache control")
    if keys < MIN_KEYS:
        return StallPlan(reason=f"the cache the control may take ({room / 2**20:.0f} MiB) holds only "
                                f"{keys} keys of this dataset")
    if ws.ratio is not None and ws.ratio < 1 and not served_bytes:   # the probe says what serves
        return StallPlan(reason=f"the run's dataset ({ws.describe(ds.keys)}) fits in {ws.llc_name}: "
                                "there is no out-of-cache cost to separate")
    return StallPlan(planned=True, keys=keys, fraction=FRACTION, dir=INCACHE_DIR, case=case_arg,
                     sets=list(sets), variants=list(variants))


def control_options(main: RunOptions) -> RunOptions:
    """The control's options: the run's (rate, profiler, load generator, size) with the
    control's own reps, no targets, no budget, no control of its own."""
    # a run that decides: REPS_DECIDES; a run of N reps (the demo's small size, --stalls):
    # as many, within REPS_SMALL..REPS_DECIDES
    reps = REPS_DECIDES if main.targets else max(REPS_SMALL, min(REPS_DECIDES, main.reps))
    windows = WINDOWS_DECIDES if main.targets else WINDOWS_SMALL
    return dataclasses.replace(main, reps=reps, paired_windows=windows, targets=False, quick=False,
                               precision=None, precision_on=None, budget_s=None, stalls=False,
                               report=False, layouts=1, extra=dict(main.extra))


@dataclasses.dataclass
class ControlStep:
    """What is left of a run's control: nothing, a control to finish, or one to make (the
    run API turns it into a request: collectors/runner/api.py)."""
    dir: Path
    resume: bool = False
    case: str = ""
    variants: list[str] = dataclasses.field(default_factory=list)
    sets: list[str] = dataclasses.field(default_factory=list)
    options: RunOptions | None = None


def next_step(run_dir: Path, log: Log) -> ControlStep | None:
    """The control still to run after the run's reps: None when it is done or not planned.
    A new one has the host's memory latency measured first, into the run's host facts."""
    main = load_run(run_dir)
    sp = main.manifest.stalls
    if sp is None or not sp.planned:
        return None
    d = Path(run_dir) / sp.dir
    if (d / MANIFEST).is_file():
        ctl = load_run(d).manifest
        if ctl.status.state == "complete" and all(r.status == "ok" for r in ctl.schedule):
            return None
        log(f"stallscope run: finishing the in-cache control in {d}")
        return ControlStep(d, resume=True)
    log(f"stallscope run: in-cache control: {sp.keys:,} keys (at most {sp.fraction:g}× the "
        f"last-level cache), the same builds, paired, in {d}")
    return ControlStep(d, case=sp.case, variants=list(sp.variants),
                       sets=[*sp.sets, f"dataset.keys={sp.keys}", f"workload.keyspace={sp.keys}"],
                       options=control_options(main.manifest.options))


def measure_latency(host: HostFacts, variants: dict, log: Log) -> MemoryLatency | None:
    """The host's DRAM and L3 latency at the page size the server uses (Redis and Valkey turn
    THP off for themselves), before any server starts; None, said, when it cannot be measured
    (the stall table then goes without it, and the control takes LLC/4)."""
    from collectors.host import latency

    page = "thp" if (host.thp == "always" and _server_takes_thp(variants)) else "4k"
    try:
        lat = latency.measure(host.l3_bytes, page=page, log=log)
    except StallscopeError as e:
        log(f"stallscope run: memory latency not measured: {e}")
        return None
    log(f"stallscope run: memory latency: DRAM {lat.dram_ns:.0f} ns, L3 {lat.llc_ns:.0f} ns "
        f"({page} pages); the L3 serves up to {(lat.served_bytes or 0) / 2**20:.0f} MiB here")
    return lat


def _server_takes_thp(variants: dict) -> bool:
    """Redis and Valkey turn THP off for themselves (disable-thp yes) unless configured not to."""
    return any(str(v.config.get("disable-thp", "yes")).lower() == "no" for v in variants.values())
