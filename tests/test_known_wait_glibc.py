"""A known wait reached through the C library raises its caller's cumulative row by its own
cost (docs/statistics.md, "Skipped callers"; issue 45, item 3).

cases/patches/known-wait-glibc-mset.patch spins 3.0 µs per MSET on clock_gettime, called
straight from msetGenericCommand: the time is spent in glibc and the vDSO, which keep no frame
pointer, so frame-pointer stacks list `call;clock_gettime;__vdso_clock_gettime` and skip
msetGenericCommand. Two real paired runs of it against its base, back to back on one host
(tests/data/runs/known-wait-glibc-tiny*/SOURCES.md: tiny size, 10 reps, 999 Hz, a busy shared
guest): the default `--call-graph auto`, whose probe found the skipped callers and unwound the
main thread with DWARF, and `--call-graph fp`.

What the wait adds to msetGenericCommand's cumulative row is read beside its other callee that
the wait slows: setKeyWithDictEntry, which holds the key lookups (on this guest they read
slower beside the wait, as beside the known cost's: cases/patches/README.md). Per paired rep,
the change of msetGenericCommand's cumulative CPU time per MSET minus the change of
setKeyWithDictEntry's is what msetGenericCommand gained beyond the lookups: the wait, and the
loop's own few instructions. A t interval over the 10 reps of that difference must hold the
wait's 3.0 µs with DWARF, and lie far below it with frame pointers alone.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from analysis.profile.stacks import read_folded
from analysis.report import markdown as report_md
from tests.conftest import REPO

pytestmark = pytest.mark.heavy
RUNS = REPO / "tests" / "data" / "runs"
WAIT_NS = 3000.0                    # the patch's STALLSCOPE_KNOWN_WAIT_NS
CALLER, BESIDE = "msetGenericCommand", "setKeyWithDictEntry"
WAIT_FRAMES = ("__vdso_clock_gettime", "clock_gettime@@GLIBC_2.17", "clock_gettime@plt")
FOCUS = [CALLER, BESIDE, *WAIT_FRAMES]


def _analyse(run_dir: Path):
    return analyse(load_run(run_dir), CompareOptions(focus=FOCUS))


@pytest.fixture(scope="module")
def runs():
    return {k: _analyse(RUNS / f"known-wait-glibc-tiny{s}") for k, s in (("auto", ""), ("fp", "-fp"))}


def _changes(res, name: str, kind: str = "cum") -> np.ndarray:
    """Per paired rep: the candidate's CPU time per MSET minus the base's, ns."""
    row = next((r for r in res.profile.focus if r.name == name), None)
    if row is None or getattr(row, f"base_{kind}_ns") is None:         # never sampled
        return np.zeros(len(next(r for r in res.profile.focus if r.name == CALLER).base_cum_ns.values))
    b, c = getattr(row, f"base_{kind}_ns"), getattr(row, f"cand_{kind}_ns")
    assert b.reps == c.reps
    return np.asarray(c.values) - np.asarray(b.values)


def _t(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    half = sps.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return x.mean(), x.mean() - half, x.mean() + half


def _beyond(res) -> np.ndarray:
    return _changes(res, CALLER) - _changes(res, BESIDE)


def _own_wait(res) -> np.ndarray:
    return sum(_changes(res, f, "flat") for f in WAIT_FRAMES)


def test_the_wait_reads_as_itself_in_its_own_frames_either_way(runs):
    """Flat rows need no caller: both runs find the wait's 3 µs in glibc and the vDSO."""
    for key, res in runs.items():
        mean, lo, hi = _t(_own_wait(res))
        assert lo <= WAIT_NS <= hi and lo > 0.85 * WAIT_NS, (key, mean, lo, hi)


def test_dwarf_raises_the_callers_cumulative_row_by_the_wait(runs):
    """With the default unwinding msetGenericCommand's cumulative row carries the wait:
    what it gained beyond the lookups holds 3.0 µs and the wait's own frames' mean
    (recorded: +3.18 µs [+2.96, +3.41] against the wait's own +2.98 µs [+2.83, +3.13])."""
    beyond, own = _t(_beyond(runs["auto"])), _t(_own_wait(runs["auto"]))
    assert beyond[1] <= WAIT_NS <= beyond[2], beyond
    assert beyond[1] <= own[0] <= beyond[2], (beyond, own)
    # and the row itself: its change holds all the MSET gained (every row that moved sits
    # under it, the wait and the lookups beside it)
    row = next(r for r in runs["auto"].profile.focus if r.name == CALLER)
    total = runs["auto"].profile.time_split.total
    assert row.cum_ns_change.ci_low <= total.delta <= row.cum_ns_change.ci_high


def test_frame_pointers_alone_leave_the_wait_out_of_its_callers_row(runs):
    """The same with --call-graph fp: the caller's row gains no more than the loop's own
    instructions (recorded +0.20 µs [+0.13, +0.28]), far below the wait's own cost; its
    cumulative change misses part of what the MSET gained."""
    beyond, own = _t(_beyond(runs["fp"])), _t(_own_wait(runs["fp"]))
    assert beyond[2] < own[1] and beyond[2] < 0.25 * WAIT_NS, (beyond, own)
    row = next(r for r in runs["fp"].profile.focus if r.name == CALLER)
    assert row.cum_ns_change.ci_high < runs["fp"].profile.time_split.total.delta


def test_the_stacks_name_the_caller_only_when_unwound_whole():
    """Every candidate rep: with DWARF clock_gettime sits under msetGenericCommand whenever
    MSET called it, never straight under `call`; with frame pointers the other way round."""
    for suffix, under, never in (("", CALLER, "call"), ("-fp", "call", CALLER)):
        for rep in sorted((RUNS / f"known-wait-glibc-tiny{suffix}" / "paired").iterdir()):
            seen = {under: 0.0, never: 0.0}
            st = read_folded(rep / "perf-kw.folded")
            for frames in st.weights:
                fns = st.functions_of(frames)
                if "clock_gettime@@GLIBC_2.17" in fns:
                    i = fns.index("clock_gettime@@GLIBC_2.17")
                    parent = fns[i - 1].removesuffix(".part.0")
                    if parent in seen:
                        seen[parent] += st.weights[frames]
            assert seen[under] > 0 and seen[never] == 0, (suffix, rep.name, seen)


def test_the_report_says_how_many_callers_were_skipped(runs):
    """auto: the probe's reason (skipped callers) and next to nothing skipped in the
    profile; fp: the skipped share, where, and the note beside the cumulative tables."""
    t = runs["auto"].profile.truncated
    assert t.callgraph == "fp+dwarf" and t.dwarf_threads == ["redis-server"]
    assert t.probe.threads["redis-server"].skipped_pct > 10 and t.probe.threads["redis-server"].truncated_pct < 1
    assert "skipping a caller" in t.unwind and "→ __GI___libc_write" in t.unwind
    assert t.skipped.available and t.skipped.worst < 0.5 and not t.skipped.exceeds
    md = report_md.render(runs["auto"])
    assert "Skipped callers: at most" in md and "⚠️ Skipped callers" not in md
    f = runs["fp"].profile.truncated.skipped
    assert f.available and f.exceeds and f.worst > 10
    assert f.shares["kw"].median > f.shares["base"].median + 3          # the wait's samples
    assert "call -> clock_gettime@@GLIBC_2.17" in f.sites and "call → clock_gettime@@GLIBC_2.17 2.7%" in f.note
    md = report_md.render(runs["fp"])
    assert "⚠️ Skipped callers: the cumulative shares of functions that call C library code" in md
    cum = [i for i in runs["fp"].summary if i.what == "focus" and i.values[0].measure.startswith("cumulative")]
    assert cum and all("may be understated by up to 18.0% (skipped callers)" in i.note for i in cum), cum


@pytest.mark.slow
def test_a_live_run_recovers_the_caller(tmp_path):
    """The same at CI size, live: 5 paired reps of 32 windows, `--call-graph whole` (the
    default, auto, counts the skipped callers and leaves them: docs/statistics.md)."""
    out = tmp_path / "runs"
    from tests.conftest_run import BASE_SPEC, cli_env
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--reps", "5", "--paired-windows", "32", "--variant", f"base={BASE_SPEC}",
                        "--variant", f"kw={BASE_SPEC}+patch={REPO / 'cases/patches/known-wait-glibc-mset.patch'}",
                        "--call-graph", "whole", "--out", str(out), "--no-progress"],
                       cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, p.stderr[-3000:]
    res = _analyse(next(out.iterdir()))
    assert res.profile.truncated.dwarf_threads == ["redis-server"]
    assert res.profile.truncated.skipped.worst < 1.0
    beyond = _t(_beyond(res), 0.99)
    assert beyond[1] <= WAIT_NS * 1.1 and beyond[2] >= WAIT_NS, beyond
