"""A host's first run of a case plans again after its first paired rep
(collectors/runner/replan.py). Replayed on a recorded default-size A/A of the Xeon guest
(tests/data/runs/aa-default-13reps-xeon480): its first rep, as a first run would have made
it, then the plan made again from what that rep cost, the budget left and an empty records
directory; and once live, at CI size, from a first rep to the look that answers
(test_a_live_first_run_plans_again_and_its_reps_take_the_new_plan)."""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis import sequential
from analysis.inputs.layout import MANIFEST
from analysis.inputs.rundir import load_run, save_manifest
from collectors.runner import rep_plan
from collectors.runner.noise_log import rep_cost
from collectors.runner.precision import PrecisionRun
from collectors.runner.replan import measured_cost
from collectors.workload.cases import load_case
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "runs"
AA = RUNS / "aa-default-13reps-xeon480"      # 13 paired reps of 96 windows, 95 s the first
SHORT = RUNS / "aa-false-mark-xeon480"       # 9 paired reps of 48 windows


def _first_rep_only(tmp_path: Path, budget_s: float, replan: bool = True,
                    before=lambda run_dir: None) -> tuple[PrecisionRun, list[str]]:
    """The recorded A/A as it stood after its first rep: reps 2-13 pending, the plan of a
    host that had recorded no rep cost (13 reps of 96 windows, looks at 4, 6, 10, 13)."""
    pr, notes = _as_planned(tmp_path, budget_s, replan, before, made=1)
    pr.after(pr.run.manifest.schedule[0])
    return pr, notes


def _as_planned(tmp_path: Path, budget_s: float, replan: bool = True, before=lambda run_dir: None,
                made: int = 1) -> tuple[PrecisionRun, list[str]]:
    """The recorded A/A with its first `made` reps as recorded and the rest pending."""
    run_dir = tmp_path / AA.name
    shutil.copytree(AA, run_dir)
    m = load_run(run_dir).manifest
    for r in m.schedule[made:]:
        r.status, r.started, r.finished = "pending", None, None
    m.options.budget_s = budget_s
    p = m.precision
    p.planned, p.ended_by, p.note, p.made, p.look, p.alpha, p.level, p.open = 13, None, "", 0, None, None, None, []
    p.looks, p.alphas, p.replan = [], [], replan
    p.spent_s = 95.0 * made           # the first rep's 95 s (its started/finished)
    save_manifest(run_dir, m)
    before(run_dir)
    notes: list[str] = []
    case = load_case("mset-50keys", "default")
    ctx = SimpleNamespace(run_dir=run_dir, manifest=m, case=case, variants=m.variants,
                          opts=m.options.__class__(**vars(m.options)),
                          progress=SimpleNamespace(total=13 - made),      # the reps left to run
                          note=lambda msg, always=False: notes.append(msg))
    pr = PrecisionRun(ctx)
    assert p.looks == [4, 6, 10, 13]
    return pr, notes


@pytest.fixture(autouse=True)
def _no_records(tmp_path, monkeypatch):
    """A host's first run: nothing recorded (the replan reads the records like a plan)."""
    monkeypatch.setenv("STALLSCOPE_RECORDS", str(tmp_path / "records"))


def test_a_rep_costs_what_its_own_windows_took():
    """Each rep's windows come from its rep.json, so reps of 96 and 48 windows in one run are
    each priced right (the run's option says only what the next rep gets)."""
    for run, windows in ((AA, 96), (SHORT, 48)):
        rd = load_run(run)
        got = [rep_cost(rd, r, 999) for r in rd.manifest.reps(kind="paired")]
        assert all(g is not None and 54 < g[0] < 64 and 0.33 < g[1] < 0.35 for g in got), (run.name, got)
        assert len(rd.facts(rd.manifest.reps(kind="paired")[0]).paired.order) == windows


def test_the_first_rep_plans_what_the_budget_holds(tmp_path):
    """16 minutes less the control's 3: 13 reps of 96 windows do not fit at 95 s a rep. After
    the first, the plan is the one a run with that cost recorded would make: 9 reps of 48
    windows (8 of 96 would stay below the floor a skewed row's interval needs), looks planned
    for them, the reps still to run of 48 windows, and what they cannot reach said at once."""
    pr, notes = _first_rep_only(tmp_path, budget_s=960.0)
    plan, m = pr.plan, pr.run.manifest
    cost = measured_cost(pr.run)
    assert cost == rep_plan.RepCost(pytest.approx(62.2, abs=1.0), pytest.approx(0.337, abs=0.002))
    # what fits: the first rep's 95 s made, then reps of 48 windows at ~79 s in the 685 s left
    left = 960.0 - plan.control_s - 95.0
    assert plan.planned == 1 + int(left // cost.rep_s(48)) == sequential.FLOOR_REPS
    assert 1 + int(left // cost.rep_s(96)) == 8
    assert (m.options.paired_windows, pr.run.opts.paired_windows, m.paired.windows) == (48, 48, 48)
    assert m.options.reps == pr.run.opts.reps == plan.planned == pr.pilot
    assert pr.run.progress.total == 8           # the reps left to run: 12, then 8
    # the looks are planned again from the new count, before the first is made
    assert plan.looks == sequential.looks(9) == [4, 6, 9] and plan.made == 0 and not plan.replan
    assert sum(plan.alphas) == pytest.approx(0.05, abs=1e-9)
    paired = [r for r in m.schedule if r.kind == "paired"]
    assert len(paired) == 9 and [r.rep for r in paired] == list(range(1, 10))
    assert paired[0].status == "ok" and all(r.status == "pending" for r in paired[1:])
    said = next(n for n in notes if "planned again" in n)
    assert (f"planned again after 1 paired rep ({cost.fixed_s:.0f} s a rep outside its windows and "
            "0.34 s a window here)") in said
    assert "9 paired reps of 48 windows" in said and "(8 of 96: reps, not samples" in said
    assert plan.note in said and "fewer than the 9" not in said
    # the manifest on disk, as a resumed run reads it
    save_manifest(pr.run.run_dir, m)
    back = load_run(pr.run.run_dir).manifest
    assert back.options.reps == 9 and back.options.paired_windows == 48
    assert back.precision.looks == plan.looks and not back.precision.replan


def test_a_plan_made_again_below_the_floor_keeps_the_first(tmp_path):
    """15 minutes less the control's 3: after the first rep the budget holds 7 reps of 96
    windows or 8 of 48, both below the floor. The first plan of 13 is kept (its first look at
    99.86% judges a large change answered early within its coverage; a plan of 7 would look
    first at a looser level) and the budget stops the rest; the run says so."""
    pr, notes = _first_rep_only(tmp_path, budget_s=900.0)
    plan, m = pr.plan, pr.run.manifest
    assert plan.planned == 13 and plan.looks == [4, 6, 10, 13] and not plan.replan
    assert (m.options.paired_windows, pr.run.opts.paired_windows, m.options.reps) == (96, 96, 13)
    assert len([r for r in m.schedule if r.kind == "paired"]) == 13 and pr.run.progress.total == 12
    said = next(n for n in notes if "planned again" in n)
    assert "7 paired reps of 96 windows" in said and "8 of 48 would stay below the 9" in said
    assert "so the first plan of 13 is kept" in said and said.removeprefix("targets: ") in plan.note


def test_a_budget_that_holds_more_plans_more(tmp_path):
    """30 minutes: the first rep's cost holds 13 reps and more samples a rep, and the
    schedule grows to the new count."""
    pr, _ = _first_rep_only(tmp_path, budget_s=1800.0)
    m = pr.run.manifest
    # more reps and more samples a rep (docs/statistics.md: 14 of 144)
    assert (pr.plan.planned, m.options.paired_windows, pr.run.opts.paired_windows, m.paired.windows) == \
        (14, 144, 144, 144)
    assert m.options.perf_share == pr.run.opts.perf_share == float(rep_plan.best_share(14, 144))
    assert pr.run.progress.total == 13 and pr.plan.looks == sequential.looks(14)
    assert len([r for r in m.schedule if r.kind == "paired"]) == pr.plan.planned
    # what the plan costs fits what was left after the first rep
    cost = measured_cost(pr.run)
    assert 95.0 + (pr.plan.planned - 1) * cost.rep_s(m.options.paired_windows) <= 1800.0 - pr.plan.control_s


def test_a_plan_from_the_host_s_records_is_not_made_again(tmp_path):
    pr, notes = _first_rep_only(tmp_path, budget_s=900.0, replan=False)
    assert pr.plan.planned == 13 and pr.plan.looks == [4, 6, 10, 13]
    assert pr.run.manifest.options.paired_windows == 96
    assert not any("planned again" in n for n in notes)


def test_the_replanned_manifest_keeps_its_keys(tmp_path):
    """manifest.json's precision keeps `replan` (docs/run-directory.md)."""
    pr, _ = _first_rep_only(tmp_path, budget_s=960.0)
    save_manifest(pr.run.run_dir, pr.run.manifest)
    text = (pr.run.run_dir / MANIFEST).read_text()
    assert '"replan": false' in text
    assert load_run(pr.run.run_dir).manifest.precision.planned == 9


def test_a_plan_that_cannot_be_made_again_keeps_the_first_and_says_why(tmp_path, monkeypatch):
    """A first rep that booked no phases (a rep.json without them), or a plan that raises:
    the run goes on with its first plan, and says so."""
    import json

    def no_phases(run_dir):
        f = run_dir / "paired" / "1" / "rep.json"
        doc = json.loads(f.read_text())
        doc.pop("phases")
        f.write_text(json.dumps(doc))
    pr, notes = _first_rep_only(tmp_path, budget_s=900.0, before=no_phases)
    assert pr.plan.planned == 13 and pr.plan.looks == [4, 6, 10, 13] and not pr.plan.replan
    assert any("not made again after the first rep (no rep booked what it cost)" in n for n in notes)

    from collectors.runner import replan

    def broken(*a, **k):
        raise ValueError("noise.json line 3: not JSON")
    monkeypatch.setattr(replan, "replan", broken)
    pr, notes = _first_rep_only(tmp_path / "again", budget_s=900.0)
    assert pr.plan.planned == 13 and len([r for r in pr.run.manifest.schedule if r.kind == "paired"]) == 13
    assert any("not made again after the first rep (noise.json line 3: not JSON)" in n for n in notes)


def test_a_failed_first_rep_waits_for_one_that_measured(tmp_path):
    """Rep 1 failed (another was added for it): nothing is planned from it; rep 2 is the
    first that measured, and the plan made from it counts only the reps that can still end
    ok, so its last look comes due."""
    pr, notes = _as_planned(tmp_path, budget_s=960.0, made=2)
    m = pr.run.manifest
    first, second = m.schedule[0], m.schedule[1]
    first.status = "failed"
    pr.after(first)                              # replaced: a 14th rep at the end
    assert pr.plan.replan and pr.plan.planned == 13
    assert len([r for r in m.schedule if r.kind == "paired"]) == 14
    pr.after(second)
    live = [r for r in m.schedule if r.kind == "paired" and r.status != "failed"]
    assert not pr.plan.replan and len(live) == pr.plan.planned == pr.plan.looks[-1]
    assert any("planned again after 1 paired rep" in n for n in notes)


KNOWN_STALL = "debsrc:redis@8.0+patch=cases/patches/known-stall-mset.patch"


@pytest.mark.slow
def test_a_live_first_run_plans_again_and_its_reps_take_the_new_plan(tmp_path):
    """A live run that decides at CI size on a host with no records (this test's own
    STALLSCOPE_RECORDS): the known stall against its base, perf in the paired windows, no
    in-cache control, a 4-minute budget. It starts on the first plan (13 reps of 96 windows,
    which that budget cannot hold: 24 s of windows a rep), plans again after its first rep
    from what that rep cost, and the reps after it run the new plan's windows, its looks
    planned for the new count; the report reads at the look that ended it. No focus rows
    (`--set focus=[]`): at this size they cannot reach ±5% and would hold the run to its
    budget (3 min 51 s), where the throughput alone (the known stall: −17% [−18.6, −16.0]
    here) is answered at the first look, about 2 minutes in all on the 2-core guest."""
    import json
    import subprocess
    import sys

    from analysis.compare.engine import analyse
    from analysis.compare.options import CompareOptions
    from analysis.inputs.option_specs import TARGET_UNITS, TARGET_WINDOWS
    from tests.conftest_run import BASE_SPEC, built, cli_env
    built("a", BASE_SPEC)
    built("b", KNOWN_STALL)
    out = tmp_path / "runs"
    p = subprocess.run([sys.executable, "-m", "collectors", "run", "mset-50keys", "--size", "tiny",
                        "--variant", f"a={BASE_SPEC}", "--variant", f"b={KNOWN_STALL}", "--no-stalls",
                        "--budget", "4m", "--set", "focus=[]", "--out", str(out), "--no-progress"],
                       cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    first = f"{TARGET_UNITS} paired reps of {TARGET_WINDOWS} windows"
    assert first in p.stderr, p.stderr[-3000:]      # the first plan
    assert "targets: planned again after 1 paired rep (" in p.stderr, p.stderr[-3000:]
    run_dir = next(out.iterdir())
    m = load_run(run_dir).manifest
    plan, windows = m.precision, m.options.paired_windows
    # taken: 96-window reps cannot reach the floor of 9 in what the budget left, reps of 48
    # can (each about 16 s of windows and switching, and 4 s of restart, load and folding here)
    assert not plan.replan and windows == rep_plan.SHORT_WINDOWS, (windows, p.stderr[-2000:])
    assert sequential.FLOOR_REPS <= plan.planned < TARGET_UNITS
    assert plan.looks == sequential.looks(plan.planned)
    assert m.paired.windows == windows
    reps = [r for r in m.schedule if r.kind == "paired"]
    assert all(r.status == "ok" for r in reps) and len(reps) >= plan.looks[0]
    ran = [len(json.loads((run_dir / r.dir / "rep.json").read_text())["paired"]["order"])
           for r in reps]
    assert ran[0] == TARGET_WINDOWS and set(ran[1:]) == {windows}, ran
    # answered at a look of the new plan; the report reads at its level
    assert plan.ended_by == "answered" and len(reps) == plan.looks[plan.look - 1], (plan, p.stderr[-2000:])
    res = analyse(load_run(run_dir), CompareOptions())
    assert res.settings.confidence == pytest.approx(plan.level)
    assert res.paired[0].change.verdict == "regression"
