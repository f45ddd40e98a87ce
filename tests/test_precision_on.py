"""`--precision P --on FUNCTION[:flat|cum]`: the plan and the printed row read the same
numbers (analysis/compare/planned.py), for any function, on the recorded paired A/A run
tests/data/runs/mset-aa-paired-small (10 paired reps, perf in the windows at 299 Hz).

- the plan's per-rep log ratios are the row's: the same thread view, the same rule for a
  rep with no sample of the function (half a sample added to every rep of both sides,
  analysis/counting.py: the plan used to drop such reps while the row, unable to take a
  log, fell back to an absolute interval);
- a function that is not a focus function gets its row beside the focus rows, with the
  two-stage interval the run's reps were added for, outside the focus family."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from analysis import counting, twostage
from analysis.compare import profiles
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.planned import function_log_ratios
from analysis.inputs.rundir import load_run

AA = Path(__file__).parent / "data" / "runs" / "mset-aa-paired-small"


def _row(sec, name):
    return next(r for r in sec.focus if r.name == name)


def _ratios(row, k):
    b, c = getattr(row, f"base_{k}_ns"), getattr(row, f"cand_{k}_ns")
    return [math.log(y / x) for x, y in zip(b.values, c.values)]


def test_a_rep_without_a_sample_is_taken_alike_by_the_plan_and_the_row():
    """dictFind's own cost has reps of 0 samples on both sides (4 4 0 2 4 2 0 3 1 1 against
    3 2 3 3 0 2 1 2 2 5): the plan keeps all 10 reps and its ratios are the ones the row's
    interval is made of; the row is judged on the log scale like every other row."""
    run = load_run(AA)
    plan = function_log_ratios(run, "a", "b", "dictFind", "flat")
    assert len(plan) == 10
    sec, _ = profiles.profiles(run, "a", "b", list(run.manifest.case.focus), CompareOptions())
    row = _row(sec, "dictFind")
    ch = row.flat_ns_change
    assert ch.rel is not None and ch.rel_ci_low is not None       # no longer an absolute interval
    assert "interval at" not in ch.reason and ch.confidence > 0.99    # at the family's level too
    assert min(row.base_flat_ns.values) == 0.0                    # the sides print as measured
    counts_b = [round(x) for x in row.base_flat_samples]
    counts_c = [round(x) for x in row.cand_flat_samples]
    nb, nc = counting.corrected(counts_b, counts_c)
    assert 0 in counts_b and min(nb) == 0.5
    # the ratio of the corrected counts, times the ratio of operations, is the plan's ratio
    ops = {v: [json.loads((AA / "paired" / str(k) / "rep.json").read_text())["collectors"][f"perf:{v}"]
               ["sampled_commands"] for k in sec.reps[v]] for v in "ab"}
    by_hand = np.log(nc / nb) + np.log(np.array(ops["a"]) / np.array(ops["b"]))
    assert plan == pytest.approx(list(by_hand), abs=0.02)   # sample weights are ~1e9/299 ns, not exactly


def test_the_plan_reads_the_view_its_row_is_judged_in():
    """The view is chosen once (profiles.choose_thread) and both read through it: with the
    main thread's view forced, the plan's ratios are the main-view row's."""
    run = load_run(AA)
    asked = []
    real = profiles.shares

    def spy(reps, thread, names):
        asked.append(thread)
        return real(reps, thread, names)
    with mock.patch.object(profiles, "choose_thread", lambda *a: ("main", "forced")), \
            mock.patch.object(profiles, "shares", spy):
        plan = function_log_ratios(run, "a", "b", "lookupKey", "cum")
        sec, _ = profiles.profiles(run, "a", "b", ["lookupKey"], CompareOptions())
    assert asked[0] == "main" and sec.thread == "main"
    assert plan == pytest.approx(_ratios(_row(sec, "lookupKey"), "cum"))


def _precision_run(tmp_path: Path, on: str, pilot: int = 5) -> Path:
    """The recorded run as if it had been a --precision run on `on` with a first stage of
    `pilot` reps (only manifest.json's options and plan differ: the reps are the recorded ones)."""
    run = tmp_path / AA.name
    shutil.copytree(AA, run)
    m = json.loads((run / "manifest.json").read_text())
    m["options"].update(precision=0.05, precision_on=on, reps=pilot)
    m["precision"] = {"planned": 10, "ended_by": "precision"}
    (run / "manifest.json").write_text(json.dumps(m))
    return run


def test_on_a_function_that_is_not_a_focus_function_prints_its_two_stage_row(tmp_path):
    run = load_run(_precision_run(tmp_path, "rtree_metadata_read:flat"))
    assert "rtree_metadata_read" not in (run.manifest.case.focus or [])
    r = analyse(run, CompareOptions())
    row = _row(r.profile, "rtree_metadata_read")
    ch = row.flat_ns_change
    assert "Stein's two-stage" in ch.method and "t-interval over all" in ch.method
    assert "rtree_metadata_read" not in {m.name for m in r.profile.movers}
    # the interval is a function row's two-stage one over the plan's own log ratios, first
    # stage 5: the wider of Stein's and the t over all pairs (twostage, "A function row")
    x = function_log_ratios(run, "a", "b", "rtree_metadata_read", "flat")
    iv = twostage.interval(x, 5, ch.confidence, whole=True)
    assert (ch.rel_ci_low, ch.rel_ci_high) == pytest.approx((math.expm1(iv.low), math.expm1(iv.high)))
    # outside the focus family (the one comparison it was planned for): its cumulative
    # cost is one of the family's rows, its flat cost per operation is not
    assert "Holm over" in row.cum_verdict.reason and "Holm over" not in row.flat_verdict.reason
    from analysis.report import markdown
    md = markdown.render(r)
    focus_part = md.split("Top movers")[0]
    line = next(x for x in focus_part.splitlines() if x.startswith("| rtree\\_metadata\\_read (flat)"))
    assert "at 95%" in line        # its own level, in a table of the family's
