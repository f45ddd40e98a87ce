"""Profiles in the paired windows, proved with known effects (issues 27 and 38): real Redis
8.0 builds, real paired runs at CI size with perf sampling the paired windows.

- cases/patches/known-cost-mset.patch adds a busy wait of 3.0 µs (on the TSC, calibrated
  against CLOCK_MONOTONIC) in a function of its own, stallscopeKnownCost, called once per
  MSET by msetGenericCommand. Its own CPU time per MSET must be that wait: the interval of
  its change (where the time went: a difference of means over the paired reps) holds 3.0 µs
  and excludes 0, and msetGenericCommand's cumulative cost holds it too. Before, the wait
  sat inline in msetGenericCommand, and on an Intel Xeon guest the cost landed where no
  reader could tell it from the lookups around it (issue 38): a function of its own is the
  truth on any host. "Nothing else" is asked as the report's error control can promise it,
  at 99% so that a correct rule fails the test rarely: no other top mover at all and no
  other focus row called a change beyond its line (✅/❌), callers' cumulative cost and the
  lookups the wait slows for real on this host aside (test_nothing_else_moved); both
  families are held to their family-wise error (Holm: at most 1% each at 99%).
- cases/patches/known-cost-control-mset.patch is the same code waiting 0 ns: the binaries
  differ as the known cost's does from the base (the function, the call, the layout), the
  cost does not. No verdict of a change anywhere, asked the same way at 99%; whatever the
  known cost shows beyond its function that the control does not show is the wait's.

docs/statistics.md ("Profiles in the paired windows") gives the default-size figures.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from analysis.intervals import paired_t_interval
from analysis.profile.stacks import read_folded
from analysis.stats import DECIDED
from tests.conftest_run import BASE_SPEC, cli_env
from tests.conftest import REPO

pytestmark = pytest.mark.slow

KNOWN_NS = 3000.0
WAIT = "stallscopeKnownCost"      # the known cost's own function (cases/patches/known-cost-mset.patch)
# the wait's caller, and the callee beside the wait that holds the MSET's lookups
CALLER, BESIDE = "msetGenericCommand", "setKeyWithDictEntry"
LOOKUPS = "lookupKey"             # under BESIDE: the lookups the wait slows (test_nothing_else_moved)
REPS = "5"
# 32 windows a rep, half the default: the wait is ~8% of the samples and is seen from nothing
# at either count, and CI spends 40 s less a run (a rep of 64 windows took 25 s)
WINDOWS = "32"


def _run(tmp: Path, cand: str) -> tuple[dict, Path]:
    out = tmp / "runs"
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--reps", REPS, "--paired-windows", WINDOWS,
                        "--variant", f"base={BASE_SPEC}", "--variant", cand,
                        "--out", str(out), "--no-progress", "--report"],
                       cwd=tmp, env=cli_env(), capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, p.stderr[-3000:]
    run_dir = next(out.iterdir())
    report = tmp / "reports" / run_dir.name
    return json.loads((report / "results.json").read_text()), run_dir


@pytest.fixture(scope="module")
def known_cost(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("known-cost")
    return _run(tmp, f"kc={BASE_SPEC}+patch={REPO / 'cases/patches/known-cost-mset.patch'}")


@pytest.fixture(scope="module")
def no_cost(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("no-cost")
    return _run(tmp, f"kz={BASE_SPEC}+patch={REPO / 'cases/patches/known-cost-control-mset.patch'}")


def test_the_profiles_come_from_the_paired_windows(known_cost):
    res, run_dir = known_cost
    prof = res["profile"]
    assert prof["paired"] and prof["reps"]["base"] == prof["reps"]["kc"] == [1, 2, 3, 4, 5]
    m = json.loads((run_dir / "manifest.json").read_text())
    assert not [r for r in m["schedule"] if r["kind"] == "profile"]     # no separate reps
    assert (run_dir / "paired" / "1" / "perf-kc.folded").is_file()
    cost = res["profiler_cost"]
    assert cost["available"] and cost["frequency_hz"] >= 49 and cost["pooled"] is not None


def test_a_known_cost_shows_as_that_cost_in_its_own_function(known_cost):
    res, run_dir = known_cost
    split = res["profile"]["time_split"]
    row = next(r for r in split["rows"] if r["name"] == WAIT)
    # its own CPU time per MSET: from nothing to the wait. The interval excludes 0 and reaches
    # 3.0-3.3 µs: a function's CPU time per operation is its share of the samples times the
    # server's CPU time per operation, and that CPU time holds perf's own handler time, where
    # no sample ever lands (the timer cannot fire inside it): every absolute figure reads high
    # by perf's share of the CPU, up to the 5% budget (3.0 µs -> 3.15), plus the loop's exit
    # (CI size, 999 Hz: +3.19 µs [+3.07, +3.32] at 64 windows a rep, +2.91 µs [+2.46, +3.36] at
    # 32; docs/statistics.md, "Known effects")
    assert row["base"] < 100 and 0 < row["ci_low"] <= KNOWN_NS * 1.1 and row["ci_high"] >= KNOWN_NS, row
    # and the command that calls it holds it in its cumulative cost. That row holds the
    # lookups too (setKeyWithDictEntry's), which the wait slows for real on this host
    # (test_nothing_else_moved; CI read msetGenericCommand's +5.77 µs [+4.45, +7.09] beside
    # the wait's +3.24 µs and setKeyWithDictEntry's +2.55 µs): what it gained beyond them
    # holds the wait (+3.22 µs [+2.41, +4.04] there; a t interval at 99% over the reps'
    # differences, as tests/test_known_wait_glibc.py asks)
    lo, hi, _ = paired_t_interval(_beyond(run_dir), 0.99)
    assert lo <= KNOWN_NS * 1.1 and hi >= KNOWN_NS, (lo, hi)


def _beyond(run_dir: Path) -> np.ndarray:
    """Per paired rep: what the candidate's CALLER gained over the base's in cumulative CPU
    time per MSET beyond what its BESIDE gained, ns."""
    res = analyse(load_run(run_dir), CompareOptions(focus=[CALLER, BESIDE, WAIT]))

    def gained(name: str) -> np.ndarray:
        row = next(r for r in res.profile.focus if r.name == name)
        assert row.base_cum_ns.reps == row.cand_cum_ns.reps
        return np.asarray(row.cand_cum_ns.values) - np.asarray(row.base_cum_ns.values)
    return gained(CALLER) - gained(BESIDE)


def _strict(run_dir: Path) -> dict:
    """The run's profile section analysed again at 99% (module docstring)."""
    return json.loads(json.dumps(analyse(load_run(run_dir), CompareOptions(confidence=0.99)).to_json()))["profile"]


def _called(prof: dict) -> list[tuple[str, str, str]]:
    """(function, flat|cum, verdict) of every row called a change: a focus row beyond its
    line (✅/❌), a top mover by any decided verdict."""
    return [(r["name"], k, r[f"{k}_verdict"]["verdict"])
            for rows, called in ((prof["focus"], ("improvement", "regression")), (prof["movers"], DECIDED))
            for r in rows for k in ("flat", "cum")
            if r[f"{k}_verdict"] and r[f"{k}_verdict"]["verdict"] in called]


def test_nothing_else_moved(known_cost):
    """Only the wait's own cost moved, the cumulative cost of what calls it, and the
    lookups it slows, asked at 99%, beyond the line for the focus rows (module docstring);
    the control below is held to nothing at all. The wait slows the MSET's lookups for real
    on this host (the throughput proves it without perf: tests/test_known_effects_accounting.py,
    docs/statistics.md "Known effects"), and the same code waiting 0 ns does not: a run may
    find them and be right (CI read dictFindByHash's own and cumulative cost and lookupKey's
    cumulative ❌ here at 99%). Those are lookupKey and the functions under it (`slowed`: about
    half the samples at CI size), read from the candidate's stacks as the wait's callers are."""
    _, run_dir = known_cost
    prof = _strict(run_dir)
    assert prof["movers_fdr"]["rule"] == prof["fdr"]["rule"] == "holm"
    callers, slowed = set(), set()
    for rep in (run_dir / "paired").iterdir():
        st = read_folded(rep / "perf-kc.folded")
        for frames in st.weights:
            fns = st.functions_of(frames)
            if WAIT in fns:
                callers.update(fns[:fns.index(WAIT)])
            if LOOKUPS in fns:
                slowed.update(fns[fns.index(LOOKUPS):])
    assert "msetGenericCommand" in callers          # the wait's frame names its caller
    assert {LOOKUPS, "dictFindByHash"} <= slowed and not slowed & {WAIT, CALLER, BESIDE}, slowed
    moved = [(name, k, v) for name, k, v in _called(prof)
             if name != WAIT and not (k == "cum" and name in callers) and name not in slowed]
    assert not moved, moved


def test_a_change_without_a_cost_gets_no_verdict(no_cost):
    """The same code waiting 0 ns, asked as the known cost's "nothing else moved" is (module
    docstring), at 99%: no top mover at all, no focus row beyond its line, the whole
    profile's CPU per MSET unmoved. At the report's 95% each family may call a false change
    5% of the time, and the two builds' layouts differ for real: CI once printed
    msetGenericCommand's cumulative cost per MSET -6% [-11.1, -0.6] "improvement" (throughput
    +2.2% [-0.4, +4.9]) for a text-only change, which at 99% was no verdict."""
    res, run_dir = no_cost
    assert res["profile"]["paired"]
    prof = _strict(run_dir)
    decided = _called(prof)
    assert not decided, decided
    tot = prof["per_op_total"]["change"]
    assert tot["verdict"] not in DECIDED, tot
