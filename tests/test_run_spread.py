"""The spread between runs that a run's own interval leaves out (analysis/run_spread.py): its
estimate from a host's recorded A/A runs, the widened throughput interval, and the plan that
counts it. Recorded data only: the eleven default-size A/A runs of the 480 MiB Xeon guest
(tests/data/noise/xeon480-aa-default.json) and the one of them that printed a false mark
(tests/data/runs/aa-false-mark-xeon480); `make bench` figure 17 (bench/run_spread.py) gives
the simulated coverage."""
from __future__ import annotations

import dataclasses
import json
import math
import shutil

import pytest
from scipy import stats as sps

from analysis import run_spread, sequential
from analysis.compare.engine import analyse
from analysis.compare.families import sweep_fdr
from analysis.compare.options import CompareOptions
from analysis.compare.throughput import paired, paired_units
from analysis.inputs.host import HostSummary
from analysis.inputs.rundir import load_run
from analysis.inputs.run_spread import RunSpread
from collectors.host import machine, noise
from collectors.host.noise import Noise
from collectors.runner import api, rep_plan, targets
from collectors.runner.options import RunOptions
from collectors.workload.cases import load_case
from bench import run_spread as bench_spread
from tests.conftest import REPO

DATA = REPO / "tests" / "data"
RECORDS = DATA / "noise" / "xeon480-aa-default.json"
FALSE_MARK = DATA / "runs" / "aa-false-mark-xeon480"
FALSE_MARK_ID = "20261206-233228-mset-50keys"


def _runs() -> list[dict]:
    doc = json.loads(RECORDS.read_text())
    return [r for case in doc["hosts"].values() for rs in case.values() for r in rs]


def _summaries(runs: list[dict]) -> list[tuple[float, float, int]]:
    return [(r["change"], r["sd"], r["units"]) for r in runs]


def _t_covers(y: float, sd: float, n: int, room: float = 0.0) -> bool:
    h = float(sps.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return abs(y) <= math.hypot(h, room)


def test_the_recorded_aa_runs_stray_from_zero_more_than_their_intervals_allow():
    """Eleven A/A runs (truth 0): three of their 95% intervals over reps leave 0 out, where
    about half of one is expected; the spread between runs from all of them is 0.45%. Each
    judged with τ from the other ten, all but the largest (+1.49%, τ from the rest 0.34%)
    hold 0: the rule is proved on the simulation of bench/run_spread.py, not on these."""
    runs = _runs()
    assert len(runs) == 11 and all(r["aa"] for r in runs)
    est = run_spread.estimate(_summaries(runs))
    assert est.runs == 11 and 0.0044 < est.sd < 0.0046
    assert 0 < est.low < est.sd < est.high          # its 95% interval (Q-profile)
    naive = [r["run"] for r in runs if not _t_covers(r["change"], r["sd"], r["units"])]
    assert naive == ["20261206-161723-mset-50keys", FALSE_MARK_ID, "20261207-023358-mset-50keys"]
    widened = []
    for i, r in enumerate(runs):
        others = run_spread.estimate(_summaries(runs[:i] + runs[i + 1:]))
        room = float(sps.t.ppf(0.975, others.runs - 1)) * others.sd
        if not _t_covers(r["change"], r["sd"], r["units"], room):
            widened.append((r["run"], round(others.sd, 4)))
    assert widened == [("20261207-023358-mset-50keys", 0.0034)]


def test_a_noisy_run_does_not_cancel_what_quieter_runs_showed():
    """Each run weighs by its precision: the plain average of y² − sd²/n over the eight runs
    of 2026-12-06 and the 4-rep run of 2026-12-07 (sd 1.8% a rep, mean −0.04%) is 0.16%,
    the noisy run's −sd²/n taking most of what the eight showed (0.40% by either rule);
    Paule-Mandel keeps 0.36%."""
    runs = _summaries(_runs())
    nine = runs[:8] + [next(r for r in runs if r[2] == 4)]
    plain = math.sqrt(max(0.0, sum(y * y - sd * sd / n for y, sd, n in nine) / len(nine)))
    assert plain < 0.0017 and 0.0036 < run_spread.estimate(nine).sd < 0.0037
    assert 0.0039 < run_spread.estimate(runs[:8]).sd < 0.0040


def test_too_few_aa_runs_give_no_spread_and_runs_within_their_reps_give_zero():
    runs = _summaries(_runs())
    assert run_spread.estimate(runs[:2]) is None
    # three runs whose means are well inside their own standard errors: nothing between them
    calm = [(0.0001, 0.01, 9), (-0.0002, 0.012, 9), (0.0, 0.008, 9)]
    assert run_spread.estimate(calm) == RunSpread(sd=0.0, runs=3, low=0.0, high=0.0)


def _false_mark_run(tmp_path, spread: RunSpread | None):
    """A copy of the recorded false mark with `spread` written into its manifest as a run
    planned with it would have it."""
    run_dir = tmp_path / "run"
    shutil.copytree(FALSE_MARK, run_dir)
    m = json.loads((run_dir / "manifest.json").read_text())
    if spread is not None:
        m["run_spread"] = spread.to_json()
    (run_dir / "manifest.json").write_text(json.dumps(m))
    return load_run(run_dir)


def _false_mark_row(tmp_path, spread: RunSpread | None):
    """The recorded false mark's paired throughput row at the level its run was read at,
    with `spread` in its manifest."""
    run = _false_mark_run(tmp_path, spread)
    level = sequential.run_level(run.manifest.precision)
    # as the comparison (analysis/compare/engine.py) gives it the run's spread
    opts = CompareOptions(confidence=level, run_spread=run.manifest.run_spread)
    return paired(run, "a", "b", opts)[0].change, level


def test_the_widened_interval_of_the_recorded_false_mark(tmp_path):
    """As recorded: +0.9% [+0.3, +1.6], a decided improvement below the line in an A/A run.
    With the spread of the seven A/A runs made before it (0.26%: what the run would have been
    planned with) it reads +0.9% [−0.1, +1.9], no change; with the spread of the ten others
    (0.36%) [−0.2, +2.1]. Each says what the run could see, and the p-value and the interval
    agree."""
    naive, level = _false_mark_row(tmp_path / "0", None)
    assert level == pytest.approx(0.9643)
    assert naive.verdict == "minor improvement" and naive.rel_ci_low > 0
    assert "widened" not in naive.method
    runs = _runs()
    at = [r["run"] for r in runs].index(FALSE_MARK_ID)
    before = run_spread.estimate(_summaries(runs[:at]))
    others = run_spread.estimate(_summaries(runs[:at] + runs[at + 1:]))
    assert (before.runs, round(before.sd, 4), others.runs, round(others.sd, 4)) == (7, 0.0026, 10, 0.0036)
    for spread, verdict in ((before, "no change"), (others, "no change")):
        c, _ = _false_mark_row(tmp_path / str(spread.runs), spread)
        assert c.rel == naive.rel and c.verdict == verdict
        assert c.rel_ci_low < naive.rel_ci_low and c.rel_ci_high > naive.rel_ci_high
        assert c.ci_low < naive.ci_low and c.ci_high > naive.ci_high
        assert f"spread between runs, {run_spread.text(spread)}" in c.method
        assert f"sd {spread.sd:.2%} [" in c.method and f"from {spread.runs} recorded A/A runs" in c.method
        assert (c.p_value < 1 - level) == (c.rel_ci_low > 0 or c.rel_ci_high < 0)
        assert c.detectable > naive.detectable
    assert "This run could see" in c.reason


def test_the_recorded_false_mark_on_a_host_without_aa_runs(tmp_path):
    """A fresh host borrows the Xeon guest's spread: the recorded false mark, +0.9% [+0.3,
    +1.6] as printed, reads no change, and its method names whose spread widened it."""
    c, _ = _false_mark_row(tmp_path, run_spread.default())
    assert c.verdict == "no change" and c.rel_ci_low < 0 < c.rel_ci_high
    assert "widened by another host's spread between runs" in c.method
    assert "14 recorded A/A runs of mset-50keys on an Intel Xeon KVM guest (480 MiB L3)" in c.method
    # the manifest keeps whose it was, so a report made later reads it alike
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["run_spread"]["borrowed"] == "mset-50keys on an Intel Xeon KVM guest (480 MiB L3)"
    assert load_run(tmp_path / "run").manifest.run_spread == run_spread.default()


def _analysed(tmp_path, spread: RunSpread | None):
    return analyse(_false_mark_run(tmp_path, spread), CompareOptions())


def _half_widths(ch) -> tuple[float, float]:
    e = math.log1p(ch.rel)
    return e - math.log1p(ch.rel_ci_low), math.log1p(ch.rel_ci_high) - e


def test_every_cpu_time_per_operation_of_a_paired_run_carries_the_spread_too(tmp_path):
    """The server's speed in a run moves its throughput and every CPU time per operation
    alike (the recorded A/A runs' own τ: throughput 0.43%, the whole profile's CPU time per
    operation 0.44%, figure 17), so a paired run's rows of CPU time per operation are
    widened by the same spread as its throughput, each at its own level, and the throughput
    once (not again where a family recomputes it)."""
    spread = run_spread.default()
    bare, wide = _analysed(tmp_path / "bare", None), _analysed(tmp_path / "wide", spread)
    t0, t1 = bare.paired[0].change, wide.paired[0].change
    room = run_spread.room(spread, t1.confidence)
    assert all(h1 == pytest.approx(math.hypot(h0, room), rel=1e-6)
               for h0, h1 in zip(_half_widths(t0), _half_widths(t1)))
    assert t1.method.count("widened by") == 1
    rows = [(getattr(a, f"{k}_ns_change"), getattr(b, f"{k}_ns_change"))
            for a, b in zip(bare.profile.focus, wide.profile.focus) for k in ("flat", "cum")]
    rows.append((bare.profile.per_op_total.change, wide.profile.per_op_total.change))
    judged = [(a, b) for a, b in rows if a is not None and a.rel_ci_low is not None]
    assert len(judged) >= 5
    for a, b in judged:
        assert b.method.count("widened by another host's spread between runs") == 1, b.method
        assert b.rel == pytest.approx(a.rel) and b.rel_ci_low < a.rel_ci_low and b.rel_ci_high > a.rel_ci_high
        if b.confidence == a.confidence:       # a family at the same level: exactly the same room
            r = run_spread.room(spread, b.confidence)
            assert _half_widths(b)[1] == pytest.approx(math.hypot(_half_widths(a)[1], r), rel=1e-6)
    # the p-value is the widened interval's, at any level: a family that ranks by it calls a
    # row changed exactly when the row's interval at the family's level leaves 0 out
    for _, b in judged + [(t0, t1)]:
        assert (b.p_value < 1 - b.confidence) == b.clears_zero
    fam = wide.profile.fdr
    called = [b for _, b in judged if b.clears_zero and b.confidence == fam.level]
    assert fam.discoveries >= len(called)
    # shares are not widened: a share's run component is not the server's speed
    assert "widened" not in wide.profile.focus[0].flat_change.method


def test_the_widened_p_value_is_the_same_at_every_level(tmp_path):
    """A family takes a row's p-value at one level and prints its interval at another: with
    the recorded false mark's paired throughput (a t interval, 9 reps) the widened p-value
    does not depend on the level it was taken at, and at each level the interval leaves 0
    out exactly when p is below 1 - level."""
    run = load_run(FALSE_MARK)
    units = paired_units(run, "a", "b")
    b = [math.exp(sum(math.log(x) for x, _ in u) / len(u)) for u in units.values()]
    c = [math.exp(sum(math.log(y) for _, y in u) / len(u)) for u in units.values()]
    got = []
    for level in (0.95, 0.9643, 0.99, 0.999):
        o = CompareOptions(confidence=level, method_level=0.9999, run_spread=run_spread.default())
        ch = o.relative(b, c, higher_is_better=True, paired=True)
        assert "t-interval" in ch.method and (ch.p_value < 1 - level) == (ch.rel_ci_low > 0)
        got.append(ch.p_value)
    assert max(got) == pytest.approx(min(got), rel=1e-6)
    assert 0.05 < got[0] < 0.2         # widened: no longer the bare interval's p < 0.036


def test_an_interval_that_reaches_minus_100_percent_is_widened_on_its_linear_scale():
    """A small function's CPU time per operation over 3 reps, judged at a weighted mover's
    level (99.995%), has a relative interval from −100% to +1.9e20%: these are the ns per
    MSET of one such row of a live A/A at CI size (its comparison stopped on log1p(−1) before
    this). No log scale there, so it is widened on its own scale by e^room − 1, and its
    p-value still agrees with it."""
    b = [41.52497303575873, 26.453514799154334, 39.05024642072275]
    c = [55.87969966784827, 13.22850535218713, 52.691196210027634]
    at = dict(confidence=0.99995, method_level=0.99995)
    bare = CompareOptions(**at).relative(b, c, higher_is_better=False, paired=True)
    assert bare.rel_ci_low == -1.0
    o = CompareOptions(**at, run_spread=run_spread.default())
    ch = o.relative(b, c, higher_is_better=False, paired=True)
    r = math.expm1(run_spread.room(o.run_spread, ch.confidence))
    assert ch.rel_ci_low == pytest.approx(ch.rel - math.hypot(ch.rel - bare.rel_ci_low, r))
    assert ch.rel_ci_high == pytest.approx(ch.rel + math.hypot(bare.rel_ci_high - ch.rel, r))
    assert ch.verdict == bare.verdict and ch.p_value >= bare.p_value
    assert (ch.p_value < 1 - ch.confidence) == (ch.rel_ci_low > 0 or ch.rel_ci_high < 0)


def test_the_recorded_aa_rows_stray_with_the_throughput(tmp_path):
    """The 14 recorded A/A runs' rows (tests/data/noise/xeon480-aa-rows.json), each run
    judged with the throughput's τ from the others: the whole profile's CPU time per
    operation held 0 in 11 of 14 bare, 14 of 14 widened; its own τ is the throughput's
    (0.44% and 0.43%). No row holds 0 less often widened than bare."""
    got = {name: (k, tau, naive, wide) for name, k, tau, naive, wide in
           bench_spread.rows_leave_one_out(bench_spread.row_runs())}
    assert got["CPU time per operation"][0] == 14 and got["CPU time per operation"][2:] == (11, 14)
    assert got["throughput"][2:] == (11, 13)
    assert 0.0042 < got["throughput"][1] < 0.0044 and 0.0043 < got["CPU time per operation"][1] < 0.0045
    assert all(wide >= naive for _, _, naive, wide in got.values())
    assert {"dictFindByHash (flat)", "msetGenericCommand (cum)", "lookupKey (cum)"} <= set(got)


def test_a_sweep_s_points_keep_their_own_run_s_spread_in_their_family(tmp_path):
    """A sweep judges its points' headlines together, recomputing each at the family's
    level with the sweep's options: each point keeps the widening of its own run's spread
    (analysis/compare/families.sweep_fdr), and a point without one stays bare."""
    run = load_run(FALSE_MARK)
    spread = run_spread.default()
    wide = paired(run, "a", "b", CompareOptions(run_spread=spread))[0]
    bare = paired(run, "a", "b", CompareOptions())[0]
    fam = sweep_fdr([("p1", wide, True, None, spread), ("p2", bare, True, None, None)], CompareOptions())
    assert fam is not None and fam.comparisons == 2
    assert "widened by another host's spread" in wide.change.method
    assert "widened" not in bare.change.method
    assert wide.change.rel_ci_low < bare.change.rel_ci_low and wide.change.rel_ci_high > bare.change.rel_ci_high


def test_no_spread_leaves_a_change_as_it_was(tmp_path):
    c, _ = _false_mark_row(tmp_path, None)
    same = run_spread.widen(c, RunSpread(sd=0.0, runs=8), higher_is_better=True, noise=0.03,
                            regression=None, max_cv=0.1)
    assert same is c


def _noise(between: RunSpread | None) -> Noise:
    return Noise(sd=0.011, unit_s=80, runs=8, source="this case", latest="", fixed_s=63.0,
                 window_wall_s=0.337, between=between)


def test_the_plan_counts_the_spread_that_no_reps_narrow():
    """9 reps at this host's pooled sd of the case (1.1%): ±1.6% from the reps alone, ±2.1%
    with the spread between runs in it, and a thousand reps cannot go below what that spread
    alone allows. A target below it is named out of reach with the spread as the reason."""
    spread = RunSpread(sd=0.0036, runs=8)         # as 8 A/A runs of this host once gave it
    bare, wide = rep_plan.throughput_reach(_noise(None), 9), rep_plan.throughput_reach(_noise(spread), 9)
    assert 0.015 < bare < 0.017 < 0.020 < wide < 0.021
    floor = run_spread.planned_sd(spread) * 2.8          # 1.96 + 0.84 at the least
    assert rep_plan.throughput_reach(_noise(spread), 1000) > floor
    tight = targets.Targets(throughput=0.01)
    assert targets.planned_units(_noise(None), tight).units < targets.planned_units(_noise(spread), tight).units
    p = rep_plan.plan(_noise(spread), 720, tight, 999, 0.25, 33)
    short = rep_plan.short_of(p, _noise(spread), tight, 147.0)
    assert any("throughput ±1% is out of reach" in s and "0.36% between runs, which no reps narrow" in s
               for s in short)


def test_the_host_records_give_the_spread_of_this_case_s_aa_runs(tmp_path):
    host, store = HostSummary(cpu_model="x"), tmp_path / "noise.json"
    runs = _runs()
    for r in runs[:2] + [dict(runs[2], aa=False, run="real-change")]:
        noise.record(host, "mset-50keys", "default", r, store)
    # two A/A runs and a real change's run: too few to measure this host's spread, so the
    # one recorded on the Xeon guest stands in, and says so
    assert noise.lookup(host, "mset-50keys", "default", path=store).between == run_spread.default()
    for r in runs[2:]:
        noise.record(host, "mset-50keys", "default", r, store)
    got = noise.lookup(host, "mset-50keys", "default", path=store).between
    assert got == run_spread.estimate(_summaries(runs), latest=runs[-1]["at"]) and not got.borrowed
    # another case's A/A runs say nothing of this one's; an unpaired run has none
    assert noise.lookup(host, "hgetall", "default", path=store).between.borrowed
    assert noise.lookup(host, "mset-50keys", "default", paired=False, path=store) is None


def test_a_host_without_aa_runs_borrows_the_recorded_spread_and_says_whose():
    """analysis/run_spread_default.json holds the Xeon guest's 14 default A/A runs: the 11 of
    the fixture, verbatim, and the 3 of 2026-12-07. Their spread, 0.38% [0.18, 0.75]%, is what
    a host without 3 A/A runs of its own is widened by, named as another host's."""
    doc = json.loads(run_spread.DEFAULT_RUNS.read_text())
    keep = ("run", "at", "units", "sd", "change")
    assert doc["runs"][:11] == [{k: r[k] for k in keep} for r in _runs()]
    assert len(doc["runs"]) == 14 and "480 MiB L3" in doc["host"]
    d = run_spread.default()
    assert d == dataclasses.replace(run_spread.estimate(_summaries(doc["runs"]), latest=doc["runs"][-1]["at"]),
                                    borrowed="mset-50keys on an Intel Xeon KVM guest (480 MiB L3)")
    assert (round(d.sd, 4), round(d.low, 4), round(d.high, 4), d.runs) == (0.0038, 0.0018, 0.0075, 14)
    assert run_spread.text(d) == ("sd 0.38% [0.18, 0.75]% from 14 recorded A/A runs of mset-50keys on "
                                  "an Intel Xeon KVM guest (480 MiB L3)")
    assert run_spread.note(d).startswith("widened by another host's spread between runs (this one has "
                                         "fewer than 3 A/A runs of the case), sd 0.38%")
    own = run_spread.estimate(_summaries(_runs()))
    assert run_spread.note(own).startswith("widened by this host's spread between runs, sd 0.45%")


def test_a_paired_run_keeps_the_host_s_spread_in_its_manifest_and_says_so(tmp_path, monkeypatch):
    """The run reads this host's records when it is planned (collectors/runner/api.py)."""
    host = machine.host_facts()
    doc = json.loads(RECORDS.read_text())
    doc["hosts"] = {noise.host_key(host.summary()): next(iter(doc["hosts"].values()))}
    (tmp_path / "noise.json").write_text(json.dumps(doc))
    monkeypatch.setenv("STALLSCOPE_RECORDS", str(tmp_path))
    case, said = load_case("mset-50keys", "default"), []
    got = api._run_spread(dataclasses.replace(RunOptions(), paired=True), host, case, said.append)
    assert got == run_spread.estimate(_summaries(_runs()), latest=_runs()[-1]["at"])
    assert said == ["stallscope run: throughput and CPU time per operation widened by this host's spread between "
                    "runs: sd 0.45% [0.23, 0.94]% from 11 recorded A/A runs of mset-50keys at size default"]
    assert api._run_spread(dataclasses.replace(RunOptions(), paired=False), host, case, said.append) is None
    # an in-cache control of the case is its own size: the default size's A/A runs are not its,
    # so it is widened by another host's, and the run says whose
    assert api._run_spread(dataclasses.replace(RunOptions(), paired=True), host, case, said.append,
                           "incache") == run_spread.default()
    assert said[-1] == ("stallscope run: throughput and CPU time per operation widened by another host's spread between "
                        "runs, sd 0.38% [0.18, 0.75]% from 14 recorded A/A runs of mset-50keys on an Intel "
                        "Xeon KVM guest (480 MiB L3): this host has fewer than 3 recorded A/A runs of "
                        "mset-50keys at size incache (the same --variant twice) to measure its own "
                        "(docs/statistics.md, \"Runs differ by more than their reps\")")
    # a host that has recorded nothing at all borrows it too
    monkeypatch.setenv("STALLSCOPE_RECORDS", str(tmp_path / "none"))
    assert api._run_spread(dataclasses.replace(RunOptions(), paired=True), host, case, said.append) \
        == run_spread.default()
    monkeypatch.setenv("STALLSCOPE_RECORDS", str(tmp_path))
    # --precision narrows the interval over reps: below the spread between runs it is said
    # that the printed interval stays wider than asked
    said.clear()
    api._run_spread(dataclasses.replace(RunOptions(), paired=True, precision=0.005, targets=False),
                    host, case, said.append)
    assert said[-1].startswith("stallscope run: --precision ±0.5% narrows the interval over this run's reps")
    assert said[-1].endswith("so it stays wider than asked")
