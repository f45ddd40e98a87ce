"""The in-cache control's plan (collectors/runner/stall_control.py): which runs get one, its
dataset against recorded machines' caches (never this host's: an AMD Zen guest's 32 MiB, the
Intel guests' 260 and 480 MiB, and the 16 MiB a 480 MiB guest's latency probe found served),
why a case has none, and the control's own options."""
from __future__ import annotations

import dataclasses

import pytest

from analysis.inputs.run_options import RunOptions
from collectors.runner import stall_control
from collectors.workload.cases import load_case
from collectors.workload.working_set import Llc, bytes_per_key, keys_within

MiB = 2**20
DECIDES = RunOptions(targets=True, reps=13, paired_windows=96)
VARIANTS = ["base=debsrc:redis@8.0", "cand=debsrc:redis@8.0+patch=x.patch"]


def _plan(case, opts=DECIDES, served=None):
    return stall_control.plan(case, case.name, [], VARIANTS, opts, served)


@pytest.mark.parametrize("llc, served, most_bytes", [
    (32 * MiB, None, 8 * MiB),          # AMD EPYC guest: a quarter of its L3
    (260 * MiB, None, 65 * MiB),        # Intel guest, 260 MiB
    (480 * MiB, 16 * MiB, 16 * MiB),    # Intel guest, 480 MiB reported, 16 MiB served (probe)
    (480 * MiB, 256 * MiB, 120 * MiB),  # served more than a quarter: the quarter holds
])
def test_the_control_takes_at_most_a_quarter_of_the_cache_and_what_the_l3_serves(llc, served, most_bytes):
    case = load_case("mset-50keys", "default", llc=Llc(llc))
    sp = _plan(case, served=served)
    assert sp.planned, sp.reason
    per_key = bytes_per_key(case.dataset)
    assert sp.keys * per_key <= most_bytes
    assert (sp.keys * 1.1) * per_key > most_bytes * 0.9     # not far below it: 2 digits rounded down
    assert sp.keys < case.dataset.keys and sp.dir == "incache" and sp.case == case.name
    assert sp.variants == VARIANTS


def test_keys_within_rounds_down_to_two_digits():
    case = load_case("mset-50keys", "default", llc=Llc(32 * MiB))
    n = keys_within(case.dataset, 0.25, 32 * MiB)
    assert len(str(n).rstrip("0")) <= 2 and n * bytes_per_key(case.dataset) <= 8 * MiB


def test_cases_without_a_stall_section_say_why():
    rdb = load_case("rdb-load", "default", llc=Llc(32 * MiB))
    assert "rdb-load case times a load" in _plan(rdb).reason and not _plan(rdb).planned
    tiny = load_case("mset-50keys", "tiny", llc=Llc(480 * MiB))
    sp = _plan(tiny, served=32 * MiB)
    assert not sp.planned and "its own in-cache control" in sp.reason
    assert "its own in-cache control" in _plan(tiny).reason    # no probe: a quarter of the reported L3
    unknown = load_case("mset-50keys", "default", llc=Llc(None))
    assert "not known" in _plan(unknown).reason


def test_who_gets_a_control():
    case = load_case("mset-50keys", "default", llc=Llc(32 * MiB))
    assert _plan(case).planned                                    # a run that decides
    assert "--no-stalls" in _plan(case, dataclasses.replace(DECIDES, stalls=False)).reason
    quick = RunOptions(quick=True, reps=5)
    assert "--quick" in _plan(case, quick).reason
    fixed = RunOptions(reps=5)
    assert not _plan(case, fixed).planned
    assert _plan(case, dataclasses.replace(fixed, stalls=True)).planned   # --stalls, the demo


def test_the_control_runs_the_runs_rate_with_its_own_reps():
    main = dataclasses.replace(DECIDES, frequency_hz=1499, budget_s=900.0, extra={"tma": "off"})
    ctl = stall_control.control_options(main)
    assert (ctl.reps, ctl.paired_windows) == (stall_control.REPS_DECIDES, stall_control.WINDOWS_DECIDES)
    assert ctl.frequency_hz == 1499 and ctl.extra == {"tma": "off"}
    assert not ctl.targets and ctl.budget_s is None and ctl.stalls is False and ctl.precision is None
    small = stall_control.control_options(RunOptions(reps=3, paired_windows=64, stalls=True))
    assert small.reps == stall_control.REPS_SMALL
    assert stall_control.control_options(RunOptions(reps=20, stalls=True)).reps == stall_control.REPS_DECIDES


def test_the_budget_keeps_what_a_recorded_control_took_here():
    """A run that decides keeps 3 min for its control until the host has made one of the case;
    then its 8 reps at the recorded seconds a control's rep took, with 15% room: the recorded
    control of tests/data/runs/aa-default-13reps-xeon480 (8 reps, 2 min 10 s from its first
    rep's start to its last's end) gets 2 min 27 s, which holds it; another case's controls
    do not count."""
    import statistics
    from analysis.inputs.rundir import load_run
    from collectors.host.noise import Noise
    from collectors.runner.new_manifest import parse_iso, rep_seconds
    from tests.conftest import REPO
    m = load_run(REPO / "tests" / "data" / "runs" / "aa-default-13reps-xeon480" / "incache").manifest
    reps = [r for r in m.schedule if r.kind == "paired" and r.status == "ok"]
    assert len(reps) == stall_control.REPS_DECIDES
    span = (parse_iso(reps[-1].finished) - parse_iso(reps[0].started)).total_seconds()
    unit = statistics.median(rep_seconds(r) for r in reps)
    mine = Noise(sd=0.01, unit_s=unit, runs=1, source="this case", latest="")
    kept = stall_control.budget_s(mine)
    assert kept == pytest.approx(8 * unit * 1.15, abs=0.1) and span <= kept < stall_control.CONTROL_S
    assert stall_control.budget_s(None) == stall_control.CONTROL_S == 180
    other = dataclasses.replace(mine, source="other cases on this host")
    assert stall_control.budget_s(other) == stall_control.CONTROL_S
