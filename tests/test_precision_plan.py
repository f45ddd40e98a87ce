"""collectors/runner/precision.py reads what --precision was asked from the manifest's
options (manifest schema 4: the first stage options.reps, the budget options.budget_s,
--on options.precision_on) and writes only the plan's own state. No server is run: the
schedule is made by hand, so the budget's decision is checked in milliseconds."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from analysis.inputs.manifest import Manifest, PrecisionPlan, Rep, Variant
from analysis.inputs.run_options import RunOptions
from collectors.runner.precision import PrecisionRun


def _precision_run(opts: RunOptions, spent_s: float) -> PrecisionRun:
    """Three ok paired reps of 10 s each, one pending; `spent_s` already spent."""
    done = [Rep("paired", i, "paired", "ok", started=f"2026-11-27T10:00:{10 * i:02d}Z",
                finished=f"2026-11-27T10:00:{10 * i + 10:02d}Z") for i in (1, 2, 3)]
    m = Manifest(run_id="r", created="2026-11-27T10:00:00Z", command=["stallscope", "run"],
                 case={"name": "mset-50keys"}, size="small",
                 variants={v: Variant(v, "bin:/bin/true", "binary") for v in ("base", "cand")},
                 schedule=[*done, Rep("paired", 4, "paired")], options=opts,
                 precision=PrecisionPlan(planned=6, spent_s=spent_s))
    notes: list[str] = []
    ctx = SimpleNamespace(run_dir=Path("unused"), manifest=m, variants=m.variants, opts=opts,
                          progress=None, note=lambda msg, always=False: notes.append(msg))
    return PrecisionRun(ctx)


def test_the_first_stage_the_budget_and_on_come_from_options():
    opts = RunOptions(reps=3, precision=0.02, budget_s=60.0, paired=True, precision_on="dictFind:flat")
    pr = _precision_run(opts, spent_s=55.0)
    assert (pr.pilot, pr.budget_s, pr.on, pr.target) == (3, 60.0, ("dictFind", "flat"), 0.02)
    pending = pr.run.manifest.schedule[-1]
    # past the first stage, one more 10 s rep does not fit 60 s with 55 spent
    assert not pr.may_start(pending)
    plan = pr.run.manifest.precision
    assert plan.ended_by == "budget" and plan.note.startswith("budget of 1m00s spent after 3 of 6 planned")
    assert pending not in pr.run.manifest.schedule
    # the plan's own state only (what was asked is in options); the looks' keys are a run
    # that decides' (collectors/runner/looks.py), empty here
    looks = {"looks", "alphas", "made", "look", "alpha", "level", "open", "control_s", "replan"}
    assert set(plan.to_json()) == {"pilot_sd", "planned", "ended_by", "note", "spent_s"} | looks
    assert not any(plan.to_json()[k] for k in looks)


def test_a_rep_of_the_first_stage_or_within_the_budget_starts():
    inside = RunOptions(reps=5, precision=0.02, budget_s=60.0, paired=True)    # first stage of 5
    assert _precision_run(inside, spent_s=55.0).may_start(Rep("paired", 4, "paired"))
    room = RunOptions(reps=3, precision=0.02, budget_s=600.0, paired=True)
    pr = _precision_run(room, spent_s=55.0)
    assert pr.on is None and pr.may_start(pr.run.manifest.schedule[-1])
    assert pr.run.manifest.precision.ended_by is None
