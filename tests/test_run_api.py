"""The run API (collectors/runner/api.py) and `stallscope run`'s arguments make the same run:
a request rendered as arguments (the manifest's command, how a sweep point or the demo is
reproduced) parses back to the same request."""
from __future__ import annotations

from pathlib import Path

import pytest

from collectors.runner import arguments
from collectors.runner.api import RunRequest, plan_run, with_plugin_defaults
from collectors.runner.options import RunError, RunOptions


def _round_trip(req: RunRequest) -> RunRequest:
    argv = req.argv()
    back = arguments.request_from_args(arguments.parser().parse_args(argv), argv)
    back.command = None
    return back


@pytest.mark.parametrize("opts,sets,report", [
    (RunOptions(), [], False),
    (RunOptions(reps=8, profile="off", profile_reps=0, freq_hz=49, pairing="paired",
                paired_window_s=0.5, paired_windows=16, size="small", precision=0.02, budget_s=900.0,
                keep_perf_data=True), ["dataset.keys=1M", "workload.pipeline=16"], True),
    (RunOptions(reps=3, pairing="unpaired", load_generator="redis-benchmark"), [], False),
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
    assert list(tmp_path.iterdir()) == [] and log == []
