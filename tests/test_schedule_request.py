"""A schedule job's run as data (collectors/schedule/jobrun.py job_request): the job's fields
make the RunRequest, and its run-args mean what they mean on `stallscope run`'s command line,
after the job's own flags (so they win), read by run's own parser (commands/run_arguments.py)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from analysis.inputs.option_specs import DEFAULT_BUDGET_S, PRECISION_PILOT
from collectors.runner.api import RunRequest, with_plugin_defaults
from collectors.schedule.jobrun import job_request
from collectors.schedule.model import Baseline, Job, Schedule, ScheduleError
from commands import run_arguments

SCHED = Schedule(path="nightly.yaml", runs_dir="sched-runs")
VARIANTS = ["base=git:/src/redis@abc", "cand=git:/src/redis@def"]


def _job(**kw) -> Job:
    return Job(name="lookup", cron="0 2 * * *", cases=("mget-100keys",), candidate="git:/src/redis@unstable",
               baseline=Baseline("previous"), **kw)


def _request(job: Job) -> RunRequest:
    return job_request(SCHED, job, "mget-100keys", VARIANTS, run_arguments)


def _as_command_line(job: Job) -> RunRequest:
    """The request the job's run was before it was built as data: its fields spelled as flags,
    then its run-args, parsed by `stallscope run`'s parser."""
    argv = ["mget-100keys", *[a for v in VARIANTS for a in ("--variant", v)], "--reps", str(job.reps),
            *(["--profile-reps", str(job.profile_reps)] if job.profile_reps is not None else []),
            "--size", job.size, "--out", SCHED.runs_dir, "--no-progress", *job.run_args]
    if job.profile_reps == 0:
        argv += ["--profile", "off"]
    req = run_arguments.request_from_args(run_arguments.parser().parse_args(argv), argv)
    return dataclasses.replace(req, command=None)


def _filled(req: RunRequest) -> RunRequest:
    """As plan_run reads it: the plugins' flags it leaves open at their defaults."""
    return dataclasses.replace(req, options=with_plugin_defaults(req.options))


def test_the_jobs_fields_make_the_request():
    req = _request(_job(reps=3, profile_reps=0, size="small"))
    assert (req.case, req.variants, req.out, req.progress, req.command) == (
        "mget-100keys", VARIANTS, Path("sched-runs"), False, None)
    o = req.options
    assert (o.reps, o.profile_reps, o.size, o.profile, o.precision, o.budget_s) == (3, 0, "small", "off", None, None)
    # the manifest's command is the request's own arguments: they make the same run
    argv = req.argv()
    back = run_arguments.request_from_args(run_arguments.parser().parse_args(argv), argv)
    assert dataclasses.replace(back, command=None) == _filled(req)


@pytest.mark.parametrize("job", [
    _job(),
    _job(reps=7, profile_reps=2, size="large"),
    _job(reps=3, profile_reps=0, run_args=("--load-generator", "memtier")),
    _job(reps=6, run_args=("--reps", "4", "--size", "small", "--profile-reps", "1")),
    _job(run_args=("--precision", "2%")),
    _job(reps=9, run_args=("--precision", "3%", "--budget", "10m", "--on", "dictFind", "--unpaired")),
    _job(profile_reps=0, run_args=("--profile", "perf", "--profile-reps", "2")),   # the job's 0 still wins
    _job(size="small", run_args=("--size", "default")),                            # given at its default
    _job(run_args=("--tma-level", "3", "--tma-split", "--parca-label", "a=1", "--parca-label", "b=2")),
    _job(run_args=("--variant", "third=debsrc:redis", "--set", "workload.pipeline=16", "--out", "elsewhere",
                   "--report", "--keep-perf-data", "--frequency", "49", "--paired-windows", "16")),
])
def test_run_args_mean_what_they_meant_after_the_jobs_flags(job):
    req = _request(job)
    assert _filled(req) == _filled(_as_command_line(job))
    argv = req.argv()    # and the manifest's command makes that run
    back = run_arguments.request_from_args(run_arguments.parser().parse_args(argv), argv)
    assert dataclasses.replace(back, command=None) == _filled(req)


def test_run_args_override_the_jobs_fields_and_carry_plugin_flags():
    req = _request(_job(reps=6, size="large", run_args=("--reps", "3", "--size", "small", "--tma-level", "3")))
    assert (req.options.reps, req.options.size) == (3, "small")
    assert req.options.extra == {"tma_level": 3}
    assert req.argv()[-3:] == ["--tma-level", "3", "--no-progress"]
    # the rules fill what neither the job nor its run-args set
    assert _request(_job(run_args=("--precision", "2%"))).options.budget_s == DEFAULT_BUDGET_S
    assert run_arguments.given(["--precision", "2%"])["options"] == {"precision": 0.02}
    assert run_arguments.given([]) == {"options": {}}
    assert PRECISION_PILOT != 5 == _request(_job(run_args=("--precision", "2%"))).options.reps   # the job's reps


@pytest.mark.parametrize("run_args", [("--reps", "many"), ("--no-such-flag",), ("stray-case",),
                                      ("--tma-level",)])
def test_bad_run_args_name_the_file_the_job_and_the_arguments(run_args, capsys):
    with pytest.raises(ScheduleError) as e:
        _request(_job(run_args=run_args))
    assert str(e.value).startswith(f"nightly.yaml: job lookup: run arguments {run_args} are not valid "
                                   "`stallscope run` arguments")
    assert "stallscope run: error:" in capsys.readouterr().err     # argparse said what is wrong


def test_a_job_cannot_resume_a_run():
    with pytest.raises(ScheduleError, match="nightly.yaml: job lookup: .*--resume is not one of its run arguments"):
        _request(_job(run_args=("--resume", "runs/x")))
