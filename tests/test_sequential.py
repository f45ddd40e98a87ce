"""A run that decides stops when it has answered (analysis/sequential.py,
collectors/runner/looks.py, analysis/compare/row_targets.py; docs/statistics.md, "Stop when
answered"): the looks and their alphas, a look made on a real recorded run directory, the
report read at the level of the look that stopped the run, and the simulation's core
(bench/sequential.py, `make bench` figure 16) on recorded reps. No server is run."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis import sequential
from analysis.compare.engine import analyse
from analysis.compare.options import CompareOptions
from analysis.compare.row_targets import RowTarget, open_rows, out_of_reach, rows
from analysis.inputs.manifest import PrecisionPlan
from analysis.inputs.rundir import load_run, save_manifest
from collectors.runner import looks
from collectors.runner.precision import PrecisionRun
from tests.conftest import REPO

RUNS = REPO / "tests" / "data" / "runs"


def test_looks_spend_little_early_and_most_at_the_end():
    assert sequential.looks(13) == [4, 6, 10, 13]
    assert sequential.looks(20) == [4, 6, 10, 13, 20]
    assert sequential.looks(40) == [4, 6, 10, 13, 19, 28, 40]
    assert sequential.looks(3) == [3]
    # the first look stays however near the end: a plan of 5 spends alike at 4 and 5
    assert sequential.looks(5) == [4, 5] and sequential.spending([4, 5]) == [0.025, 0.025]
    assert sequential.looks(6) == [4, 6] and sequential.looks(7) == [4, 7]
    for n in range(3, 41):
        counts = sequential.looks(n)
        alphas = sequential.spending(counts)
        assert counts[-1] == n and counts == sorted(set(counts))
        assert sum(alphas) <= sequential.ALPHA + 1e-12 and min(alphas) > 0
        assert all(a < alphas[-1] for a in alphas[:-1]) or n == 5
        if n >= 13:      # the last look keeps a level near 95% whatever the plan
            assert 0.027 <= alphas[-1] <= 0.045, (n, alphas)
    assert sequential.spending([4, 6, 10, 13]) == [0.0014, 0.0035, 0.017, 0.0281]


def test_the_report_is_read_at_the_level_the_run_ended_at():
    plan = PrecisionPlan(planned=13, looks=[4, 6, 10, 13], alphas=[0.0014, 0.0035, 0.017, 0.0281])
    assert sequential.run_level(PrecisionPlan(planned=13)) is None       # a run made before the looks
    assert sequential.run_level(None) is None
    plan.made = 2                                    # stopped by the budget after two looks
    assert sequential.alpha_left(plan) == pytest.approx(0.0451)
    assert sequential.run_level(plan) == pytest.approx(0.9549)
    looks.end_by_budget(plan)
    assert plan.level == pytest.approx(0.9549) and plan.alpha == pytest.approx(0.0451)


def test_a_row_is_settled_when_decided_or_at_its_target():
    assert RowTarget("t", "throughput", 0.02, 0.019, "no change").settled
    assert RowTarget("f", "focus", 0.05, 0.30, "minor regression").settled
    assert RowTarget("f", "focus", 0.05, None, "gone").settled
    open_ = RowTarget("f", "focus", 0.05, 0.069, "no change")
    assert not open_.settled and open_.text() == "f could see ±6.9% (target ±5%)"
    assert not RowTarget("f", "focus", 0.05, None, "insufficient data").settled


def _as_decides(tmp_path: Path, name: str, ok: int, planned: int):
    """A copy of a recorded paired run made a run that decides of `planned` reps with its
    first `ok` reps done, and the PrecisionRun that watches it."""
    d = tmp_path / name
    shutil.copytree(RUNS / name, d)
    m = load_run(d).manifest
    m.options.targets, m.options.paired, m.options.reps, m.options.budget_s = True, True, planned, None
    m.precision = PrecisionPlan(planned=planned, note="planned")
    for r in m.schedule:
        if r.kind == "paired" and r.rep > ok:
            r.status = "pending"
    save_manifest(d, m)
    notes: list[str] = []
    ctx = SimpleNamespace(run_dir=d, manifest=m, variants=m.variants, opts=m.options, progress=None,
                          note=lambda msg, always=False: notes.append(msg))
    return d, PrecisionRun(ctx), notes


@pytest.mark.heavy
def test_a_look_on_a_recorded_run_stops_it_and_its_report_reads_at_that_level(tmp_path):
    """noise-paired-12reps-16pairs (+14.6% between two servers, sd 3.5% a rep) as a run that
    decides of 12 reps: looks at 4, 6 and 12. The looks at 4 and 6 passed unmade (as after an
    interrupted session) are made as one at 6 reps, at the sum of their alphas: the change is
    decided, the run stops, the reps left are dropped, and the comparison prints every
    interval at that look's level."""
    d, pr, notes = _as_decides(tmp_path, "noise-paired-12reps-16pairs", ok=6, planned=12)
    plan = pr.plan
    assert plan.looks == [4, 6, 12] and len(plan.alphas) == 3
    rep6 = next(r for r in pr.run.manifest.schedule if r.kind == "paired" and r.rep == 6)
    pr.after(rep6)
    alpha = plan.alphas[0] + plan.alphas[1]
    assert (plan.ended_by, plan.look, plan.made) == ("answered", 2, 2), notes
    assert plan.level == pytest.approx(1 - alpha) and plan.open == []
    assert all(r.status == "ok" for r in pr.run.manifest.schedule)      # reps 7-12 dropped
    save_manifest(d, pr.run.manifest)
    r = analyse(load_run(d), CompareOptions())
    assert r.settings.confidence == pytest.approx(1 - alpha)
    assert r.paired[0].change.confidence >= 1 - alpha - 1e-9 and r.paired[0].change.verdict == "improvement"
    assert r.measurement.look == 2 and r.measurement.level == pytest.approx(1 - alpha)
    assert "look 2 of 3 found every row decided, at its target or out of its reach" in r.measurement.precision
    # asked for its own level, a look reads the run at it
    assert analyse(load_run(d), CompareOptions(run_level=False)).settings.confidence == 0.95


@pytest.mark.heavy
def test_an_answer_not_reached_at_a_look_lets_the_run_go_on(tmp_path):
    """At 4 reps the same run's change is inside the first look's 99.86% interval (t at 3
    degrees of freedom): the look says what is open and the run goes on."""
    d, pr, notes = _as_decides(tmp_path, "noise-paired-12reps-16pairs", ok=4, planned=12)
    rep4 = next(r for r in pr.run.manifest.schedule if r.kind == "paired" and r.rep == 4)
    pr.after(rep4)
    assert pr.plan.made == 1 and pr.plan.ended_by is None and pr.plan.open == [
        next(t.text() for t in open_rows(analyse(load_run(d), CompareOptions(
            confidence=1 - pr.plan.alphas[0], run_level=False))))]
    assert sum(r.status == "pending" for r in pr.run.manifest.schedule) == 8
    assert any("look 1 of 3 at 4 paired reps" in n and "next look at 6" in n for n in notes), notes


@pytest.mark.heavy
def test_a_row_out_of_reach_is_not_waited_for(tmp_path):
    """The recorded demo (mset-demo-stalls-xeon480: 21M keys, 85 s a rep) as a run that decides
    of 13 reps, at its first look (4 reps): every row is decided but lookupKey's own cost
    (+5%, could see ±16% at 99.86%). With the budget leaving one more rep, that row would
    neither reach ±5% nor be decided by the run's end: the look does not wait for it, the run
    stops, and the row is marked as having missed its target. With the plan's 13 reps ahead
    it could still get there, and the run goes on."""
    from collectors.runner import looks
    for units_left, stops in ((1, True), (None, False)):
        d, pr, notes = _as_decides(tmp_path / str(units_left), "mset-demo-stalls-xeon480", ok=4, planned=13)
        msg = looks.look(pr.plan, load_run(d), 4, units_left=units_left)
        assert (pr.plan.ended_by == "answered") is stops, msg
        if stops:
            assert "out of reach" in msg
        else:
            assert "lookupKey (flat)" in msg and "next look at 6" in msg
    r = analyse(load_run(RUNS / "mset-demo-stalls-xeon480"), CompareOptions())
    lk = next(f for f in r.profile.focus if f.name == "lookupKey")
    assert lk.flat_verdict.target_missed is True


@pytest.mark.heavy
def test_the_throughput_row_is_waited_for_to_the_plan_s_end(tmp_path):
    """aa-false-mark-xeon480 (a default A/A of 9 reps) at its first look, 4 reps done and the
    budget leaving one more: the throughput could see ±5.6% at 99.57% on 4 pairs, and
    projected to 5 reps it would still miss ±2%, so the futility check would let it go; a
    look waits for it all the same (its reps are what the plan was made for), and the run
    goes on."""
    d, pr, notes = _as_decides(tmp_path, "aa-false-mark-xeon480", ok=4, planned=9)
    looks.plan_looks(pr.plan)
    alpha = pr.plan.alphas[0]
    r = analyse(load_run(d), CompareOptions(confidence=1 - alpha, run_level=False))
    thr = next(t for t in rows(r) if t.kind == "throughput")
    assert not thr.settled and thr.detectable > 0.05
    reach = looks.reach(pr.plan, 4, alpha, 1)
    assert reach.n_end == 5 and out_of_reach(thr, reach)
    assert "throughput" in [t.name for t in open_rows(r, reach)]
    msg = looks.look(pr.plan, load_run(d), 4, units_left=1)
    assert pr.plan.ended_by is None and "throughput could see" in msg and "next look at 6" in msg, msg


@pytest.mark.heavy
def test_recorded_rows_that_missed_their_target_are_marked():
    """aa-decides-emr-2: lookupKey's own cost (a focus function at 9.7% of the samples) could
    see ±6.9% against ±5%: marked on its row and in the measurement; the throughput row met
    ±2%."""
    r = analyse(load_run(RUNS / "aa-decides-emr-2"), CompareOptions())
    assert r.paired[0].target == 0.02 and r.paired[0].target_missed is False
    lk = next(f for f in r.profile.focus if f.name == "lookupKey")
    assert lk.flat_verdict.target == 0.05 and lk.flat_verdict.target_missed is True
    assert lk.cum_verdict.target_missed is False
    assert any(m.startswith("lookupKey (flat) could see ±6.9%") for m in r.measurement.missed)
    assert {t.name for t in rows(r) if t.kind == "focus"} >= {"lookupKey (flat)", "dictFindByHash (flat)"}


@pytest.mark.heavy
def test_the_simulation_keeps_coverage_where_a_95_interval_at_every_look_loses_it():
    """bench/sequential.py's core on two recordings, few runs: the shipped spending keeps every
    row's coverage at 94% or more, as recorded and as an A/A run, with a false verdict in at
    most 5% of A/A runs per family; the naive rule (95% at every look) loses it where the run
    stops early (the demo's skewed lookupKey row, a throughput-only noise run's A/A)."""
    from bench import sequential as fig
    demo = fig.recording("mset-demo-stalls-xeon480")
    noise = fig.recording("noise-paired-12reps-16pairs")
    assert demo.cols[0] == "throughput" and "lookupKey (flat)" in demo.cols and demo.family >= 5
    for rec in (demo, noise):
        for aa in (False, True):
            got = fig.simulate(rec, "spending", 600, aa=aa)
            assert min(got["coverage"].values()) >= 0.94, (rec.name, aa, got)
            if aa:
                assert got["decided"]["throughput"] <= 0.05 and got["decided"]["focus"] <= 0.05, got
    shipped = fig.simulate(demo, "spending", 600)
    assert shipped["early"] > 0.2 and shipped["reps"] < 12.5          # the demo often answers early
    assert fig.simulate(demo, "naive", 600)["coverage"]["lookupKey (flat)"] < 0.92
    naive = fig.simulate(noise, "naive", 600, aa=True)
    assert naive["coverage"]["throughput"] < 0.92 and naive["decided"]["throughput"] > 0.08


@pytest.mark.heavy
def test_the_floor_of_reps_is_where_a_skewed_row_keeps_its_level():
    """sequential.FLOOR_REPS and SHORT_COVERAGE, from bench/sequential.py --short: the small
    A/A's dictFindByHash row (two reps in ten ~13% from the rest) keeps about 89% in a plan of 7
    (seven draws miss both rare reps one time in five) and 94% or more in a plan of 9."""
    from bench import sequential as fig
    rec = fig.recording("mset-aa-paired-small")
    row = "dictFindByHash (flat)"
    seven = fig.simulate(rec, "spending", 2000, planned=7)["coverage"][row]
    assert seven == pytest.approx(sequential.SHORT_COVERAGE[7], abs=0.015) and seven < 0.92
    nine = fig.simulate(rec, "spending", 2000, planned=sequential.FLOOR_REPS)["coverage"]
    assert min(nine.values()) >= 0.94, nine
    assert sequential.short_coverage(9) is None and sequential.short_coverage(None) is None
    assert sequential.short_coverage(7) == sequential.SHORT_COVERAGE[7] < 0.94


@pytest.mark.heavy
def test_a_plan_of_five_keeps_its_first_look_and_its_level():
    """A plan of 5 looks at 4 and 5 (the first look is never dropped): its last look at 97.5%
    keeps the worst recorded row at 94% (SHORT_COVERAGE[5], bench/sequential.py --short),
    where the last look alone at 95% kept 87.7% and a change answered at 4 ran to 5."""
    from bench import sequential as fig
    rec = fig.recording("mset-demo-stalls-xeon480")
    got = fig.simulate(rec, "spending", 2000, planned=5)
    assert min(got["coverage"].values()) == pytest.approx(sequential.SHORT_COVERAGE[5], abs=0.01)
    assert got["early"] > 0.9          # the demo's change answers at the first look, at 4
    alone = fig.simulate(rec, "fixed", 2000, planned=5)
    assert min(alone["coverage"].values()) < 0.9


@pytest.mark.heavy
def test_a_run_planned_below_the_floor_marks_every_row_with_a_target():
    """A recorded run that decides, marked as a plan of 7 would be (row_targets.mark): every
    row with a target carries level_kept, its report cell and the PR comment's say "short
    plan", and the measurement says what such a plan's intervals keep; at 13 nothing is."""
    from analysis.compare.measurement import measurement
    from analysis.compare.row_targets import floor_reps, main_row, mark
    from analysis.report.tables import judgement_verdict
    from collectors.pr.results_doc import document, fn_verdict
    run = load_run(RUNS / "aa-decides-emr-2")
    r = analyse(run, CompareOptions())
    assert r.paired[0].level_kept is None
    missed = mark(r, 7)
    kept = sequential.SHORT_COVERAGE[7]
    lk = next(f for f in r.profile.focus if f.name == "lookupKey")
    assert r.paired[0].level_kept == kept and lk.flat_verdict.level_kept == kept
    assert judgement_verdict(lk.flat_verdict).text.endswith("; missed its ±5% target; covers ~88%")
    short = dataclasses.replace(run.manifest, precision=dataclasses.replace(run.manifest.precision, planned=7))
    said = measurement(short, main_row(r), missed).precision
    assert ". 7 paired reps, fewer than the 9 a skewed function row's interval needs" in said
    assert f"covered as little as {kept:.1%}" in said
    doc = document(json.loads(r.dumps()), "results.json")
    row = next(f for f in doc.obj("profile").objs("focus") if f.text("name") == "lookupKey")
    assert fn_verdict(row, "flat").level_kept == kept
    # a plan of 9 that its budget ended after 8 reps stands on 8 (row_targets.floor_reps)
    plan = run.manifest.precision
    assert floor_reps(dataclasses.replace(plan, planned=9, ended_by="budget"), 8) == 8
    assert floor_reps(dataclasses.replace(plan, planned=9, ended_by="answered"), 6) == 9
    assert floor_reps(None, 8) is None


KNOWN_STALL = "debsrc:redis@8.0+patch=cases/patches/known-stall-mset.patch"


@pytest.mark.slow
def test_a_live_run_that_decides_is_interrupted_resumed_and_stops_when_answered(tmp_path):
    """A run that decides at CI size (tiny, 16 windows a rep, no profiles, no in-cache
    control), the known stall against its base (about −25% at this size): interrupted after
    its second rep, resumed, it looks at 4 and 6 reps and stops at the first look that finds
    its throughput decided, well before its 13 planned; `--resume` of the ended run runs
    nothing; its report is at that look's level (about 50 s on the 2-core guest)."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest_run import BASE_SPEC, built, cli_env, start_cli
    built("a", BASE_SPEC)
    built("b", KNOWN_STALL)
    p = start_cli(["mset-50keys", "--size", "tiny", "--variant", f"a={BASE_SPEC}", "--variant",
                   f"b={KNOWN_STALL}", "--paired-windows", "16", "--profile", "off", "--no-stalls",
                   "--out", str(tmp_path)], tmp_path / "run.log")
    try:
        deadline, run_dir = time.time() + 300, None
        while time.time() < deadline:
            run_dir = next((d for d in tmp_path.iterdir() if (d / "manifest.json").is_file()), None)
            if run_dir is not None:
                m = json.loads((run_dir / "manifest.json").read_text())
                if sum(r["status"] == "ok" for r in m["schedule"]) >= 2:
                    break
            time.sleep(0.2)
        os.killpg(p.pid, signal.SIGINT)
        assert p.wait(60) == 130, (tmp_path / "run.log").read_text()[-2000:]
    finally:
        if p.poll() is None:
            p.kill()
    plan = load_run(run_dir).manifest.precision
    # 13 reps planned on a host with no records; more where the session's earlier runs of the
    # case left a spread that asks more (the looks follow the plan: 4, 6, 10, then 13 on the
    # way to a long plan's end, or the end itself)
    assert plan.planned >= 13 and plan.looks == sequential.looks(plan.planned)
    assert plan.looks[:3] == [4, 6, 10] and plan.looks[3] in (13, plan.planned), plan.looks
    assert plan.made == 0 and plan.ended_by is None

    def resume() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "collectors", "run", "--resume", str(run_dir),
                               "--no-progress"], cwd=REPO, env=cli_env(), capture_output=True,
                              text=True, timeout=600)
    r = resume()
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"targets: look 1 of {len(plan.looks)} at 4 paired reps" in r.stderr, r.stderr[-3000:]
    # the progress interval is the one the looks judge: with the spread between runs the
    # manifest keeps (the suite's own A/A runs of the case where it has 3, else another host's)
    spread = load_run(run_dir).manifest.run_spread
    assert spread is not None and "paired reps, throughput " in r.stderr
    assert (" with the spread between runs [" in r.stderr) == (spread.sd > 0)
    assert "every row decided, at its target, or out of reach by the run's end" in r.stderr
    assert "the run stops here" in r.stderr
    m = load_run(run_dir).manifest
    assert m.precision.ended_by == "answered" and m.precision.look in (1, 2, 3)
    assert len(m.schedule) == m.precision.looks[m.precision.look - 1] < plan.planned
    assert all(rep.status == "ok" for rep in m.schedule) and m.status.state == "complete"
    again = resume()
    assert again.returncode == 0 and "0 of" in again.stderr
    res = analyse(load_run(run_dir), CompareOptions())
    assert res.settings.confidence == pytest.approx(m.precision.level)
    assert res.paired[0].change.verdict == "regression" and res.measurement.ended_by == "answered"
