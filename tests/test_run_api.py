"""The run API (collectors/runner/api.py) and `stallscope run`'s arguments make the same run:
a request rendered as arguments (the manifest's command, how a sweep point or the demo is
reproduced) parses back to the same request."""
from __future__ import annotations

from pathlib import Path

import pytest

from commands import run_arguments as arguments
from collectors.runner.api import RunRequest, plan_run, with_plugin_defaults
from analysis.inputs.option_specs import DEFAULT_TARGET_BUDGET_S, TARGET_UNITS, TARGET_WINDOWS
from collectors.runner.options import RunError, RunOptions


def _round_trip(req: RunRequest) -> RunRequest:
    argv = req.argv()
    back = arguments.request_from_args(arguments.parser().parse_args(argv), argv)
    back.command = None
    return back


@pytest.mark.parametrize("opts,sets,report", [
    (RunOptions(), [], False),
    (RunOptions(reps=8, profile="off", profile_reps=0, frequency_hz=49, pairing="paired",
                paired_window_s=0.5, paired_windows=16, size="small", precision=0.02, budget_s=900.0,
                keep_perf_data=True), ["dataset.keys=1M", "workload.pipeline=16"], True),
    (RunOptions(reps=3, pairing="unpaired", load_generator="redis-benchmark"), [], False),
    (RunOptions(reps=2, layouts=3, profile="off"), [], False),
    # every pairing, and a precision, budget and window that no short text gives exactly
    (RunOptions(pairing="auto", precision=1 / 30, budget_s=90.5, paired_window_s=1 / 3), [], False),
    (RunOptions(reps=4, pairing="unpaired", precision=0.0123456789, budget_s=5400.0), [], False),
    (RunOptions(pairing="paired", precision=0.07, budget_s=1800.0, precision_on="dictFind:flat"), [], False),
    # the plugins' flags a caller sets (a schedule job's run-args) are spelled too
    (RunOptions(extra={"tma_level": 3, "tma_split": True, "parca_label": ["a=1", "b=2"]}), [], False),
    # a run that decides spells none of its planned defaults; the demo's budget is its own
    (RunOptions(targets=True, reps=TARGET_UNITS, paired_windows=TARGET_WINDOWS,
                budget_s=DEFAULT_TARGET_BUDGET_S), [], False),
    (RunOptions(targets=True, reps=TARGET_UNITS, paired_windows=TARGET_WINDOWS, budget_s=720.0), [], False),
    (RunOptions(targets=True, reps=TARGET_UNITS, paired_windows=48, budget_s=DEFAULT_TARGET_BUDGET_S), [], False),
    (RunOptions(quick=True), [], False),
    (RunOptions(reps=3, perf_share=0.75), [], False),
])
def test_a_request_spelled_as_arguments_parses_back_to_itself(opts, sets, report):
    req = RunRequest("mset-50keys", ["base=debsrc:redis@8.0", "cand=debsrc:redis@8.0+patch=x.patch"],
                     opts, sets=sets, out=Path("runs/x"), report=report, progress=False)
    back = _round_trip(req)
    # the plugins' flags come back at their defaults, as plan_run fills them in
    assert back == RunRequest(**{**vars(req), "options": with_plugin_defaults(req.options)})
    assert back.options.extra["tma"] == "auto" and back.options.extra["call_graph"] == "auto"


def test_bad_requests_stop_before_anything_is_built(tmp_path):
    log = []
    with pytest.raises(RunError, match="at least one --variant"):
        plan_run(RunRequest("mset-50keys", [], out=tmp_path), log.append)
    with pytest.raises(RunError, match="--reps must be at least 1"):
        plan_run(RunRequest("mset-50keys", ["a=bin:/bin/true"], RunOptions(reps=0), out=tmp_path), log.append)
    with pytest.raises(RunError, match="--budget goes with --precision"):
        plan_run(RunRequest("mset-50keys", ["a=bin:/bin/true"], RunOptions(budget_s=60), out=tmp_path),
                 log.append)
    with pytest.raises(RunError, match="variant name 'a' given twice"):
        plan_run(RunRequest("mset-50keys", ["a=bin:/bin/true", "a=bin:/bin/true"], out=tmp_path), log.append)
    with pytest.raises(RunError, match="--layouts 2: variant\\(s\\) a are prebuilt"):
        plan_run(RunRequest("mset-50keys", ["a=bin:/bin/true", "b=debsrc:redis"], RunOptions(layouts=2),
                            out=tmp_path),
                 log.append)
    assert list(tmp_path.iterdir()) == [] and log == []


def test_new_runs_sweeps_and_experiments_share_one_id_with_a_collision_suffix(tmp_path):
    """collectors.runner.new_manifest.new_run_id names run, sweep and experiment directories
    (an experiment started twice in one second was a FileExistsError)."""
    import re
    from analysis.clock import parse_iso, now_iso
    from collectors.runner.new_manifest import new_run_id
    from collectors.sweep.directory import new_sweep_id
    first = new_run_id("cases/mset@1.yaml", tmp_path)
    assert re.fullmatch(r"\d{8}-\d{6}-cases_mset_1\.yaml", first)
    (tmp_path / first).mkdir()
    again = new_sweep_id("cases/mset@1.yaml", tmp_path)
    assert again == first + "-2" or again[:15] > first[:15]      # or the clock ticked over
    assert parse_iso(now_iso()) is not None and parse_iso("yesterday") is None
