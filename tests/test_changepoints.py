"""The in-run paired signal (analysis/history/paired_signal.py) beside E-Divisive on the
series (analysis/history/changepoints.py), on synthetic history whose noise is read off the
paired runs recorded here (bench/synthetic_history.py): the model's numbers are those
runs'; the paired test finds an injected shift at its run, and against a pinned baseline
E-Divisive over the in-run changes finds a 2% one; without a shift the paired test fires at
its stated rate, also when nights differ in noise; a shift both signals find is one finding
that names both, in the store and in the alert the schedule delivers."""
from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import special
from scipy.stats import binom

from analysis import stats
from analysis.compare import pair_clusters
from analysis.compare.throughput import paired_units
from analysis.history import paired_signal
from analysis.history.alert_due import due, record
from analysis.history.changepoints import ChangePoint, at_run, detect, merge
from analysis.history.store import HistoryStore, StoredRun
from bench.synthetic_history import NOISY, QUIET, Shift, make_job
from analysis.inputs.rundir import load_run
from analysis.history.alert_md import render_alert
from collectors.schedule.jobrun import _changes_at

RUNS = Path(__file__).parent / "data" / "runs"


def _ingest(st: HistoryStore, h) -> list[StoredRun]:
    for r in h.runs:
        st.ingest_results(r, job=h.job)
    return st.runs(h.job)


@pytest.fixture
def store(tmp_path):
    return HistoryStore.open(tmp_path / "h.sqlite")


# ------------------------------------------------------------------- the noise model

@pytest.mark.parametrize("name, noise", [("noise-paired-12reps-16pairs", QUIET),
                                         ("noise-paired-8reps-48pairs", QUIET),
                                         ("mset-demo-paired", NOISY)])
def test_the_noise_model_is_the_recorded_runs(name, noise):
    pairs_by_rep = paired_units(load_run(RUNS / name), "base", "prefetch")
    units, _ = pair_clusters.units(pairs_by_rep)
    sd = float(np.std([math.log(u.cand / u.base) for u in units], ddof=1))
    pairs = len(next(iter(pairs_by_rep.values())))
    assert noise.rep_sd(pairs) == pytest.approx(sd, rel=0.1)


@pytest.mark.heavy
def test_a_synthetic_run_carries_the_paired_change_a_real_run_computes():
    h = make_job("j", 200, [], seed=3)
    logs = []
    for r in h.runs[:5]:
        row = r["paired"][0]
        ch = stats.compare(row["base"]["values"], row["cand"]["values"], paired=True)
        assert row["change"]["p_value"] is not None and row["base"]["n"] == 5
        assert {k: row["change"][k] for k in ("rel", "rel_ci_low", "rel_ci_high", "verdict", "p_value")} == \
               {"rel": ch.rel, "rel_ci_low": ch.rel_ci_low, "rel_ci_high": ch.rel_ci_high,
                "verdict": ch.verdict, "p_value": ch.p_value}
    for r in h.runs:
        b, c = r["paired"][0]["base"]["values"], r["paired"][0]["cand"]["values"]
        logs.append(np.var([math.log(y / x) for x, y in zip(b, c)], ddof=1))
    assert math.sqrt(np.mean(logs)) == pytest.approx(QUIET.rep_sd(), rel=0.1)
    medians = [math.log(r["paired"][0]["cand"]["median"]) for r in h.runs]
    assert 0.04 < np.std(medians, ddof=1) < 0.08        # the level moves far more than the ratio


# ------------------------------------------------------------- the moderated variance

def test_the_prior_pools_agreeing_variances_and_not_disagreeing_ones():
    rng = np.random.default_rng(0)

    def prior(sds):
        return paired_signal.prior([paired_signal.RunRatios(None, tuple(rng.normal(0, s, 5))) for s in sds])

    # 30 runs' variances of 4 df each estimate the prior's worth only roughly: medians of 40
    same = [prior([QUIET.rep_sd()] * 30) for _ in range(40)]
    mixed = [prior([QUIET.rep_sd(), NOISY.rep_sd()] * 15) for _ in range(40)]
    assert np.median([p.d0 for p in same]) > 30 and np.median([p.d0 for p in mixed]) < 6
    assert np.median([math.sqrt(p.s02) for p in same]) == pytest.approx(QUIET.rep_sd(), rel=0.1)
    assert prior([QUIET.rep_sd()] * 4).d0 == 0                     # too few runs: no prior
    assert paired_signal.trigamma_inverse(float(special.polygamma(1, 3.7))) == pytest.approx(3.7)


def _nights(n: int, kind: str, rng: random.Random) -> list[float]:
    """Each run's per-rep sd: every night quiet; quiet or noisy at random; or in spells that
    switch between the two every 4 nights on average."""
    quiet, noisy = QUIET.rep_sd(), NOISY.rep_sd()
    if kind == "quiet":
        return [quiet] * n
    if kind == "quiet or noisy":
        return [rng.choice([quiet, noisy]) for _ in range(n)]
    out, sd = [], quiet
    for _ in range(n):
        sd = (noisy if sd == quiet else quiet) if rng.random() < 0.25 else sd
        out.append(sd)
    return out


def _null_ratios(n: int, nights: str, pinned: bool, seed: int) -> list[paired_signal.RunRatios]:
    rng = random.Random(seed)
    out = []
    for k, sd in enumerate(_nights(n, nights, rng)):
        commits = {"base": "f" * 40 if pinned else f"{k:040x}", "cand": f"{k + 1:040x}"}
        out.append(paired_signal.RunRatios(StoredRun(k, "j", f"r{k}", "", commits, {}),
                                           tuple(rng.gauss(0, sd) for _ in range(5))))
    return out


@pytest.mark.heavy
@pytest.mark.parametrize("pinned", [False, True])
@pytest.mark.parametrize("nights, rate", [("quiet", 1), ("quiet or noisy", 1), ("spells", 2)])
def test_the_paired_test_fires_at_its_stated_rate_without_a_shift(pinned, nights, rate):
    """ALPHA per run (within Binomial's 99.9% bounds); up to twice that when the noise
    changes in spells, the prior having been fitted to the other kind of night."""
    n = 4000
    fired = len(paired_signal.regressions(_null_ratios(n, nights, pinned, seed=5)))
    assert binom.ppf(0.001, n, paired_signal.ALPHA) <= fired <= binom.ppf(0.999, n, rate * paired_signal.ALPHA)


# --------------------------------------------------------------- findings in a store

@pytest.mark.heavy
def test_the_paired_test_finds_a_5pct_shift_at_its_run(store):
    found = 0
    for seed in range(10):       # recall 0.97 at this noise (bench/history.py): 8 of 10 at least
        h = make_job(f"prev{seed}", 20, [Shift(12, -0.05)], seed=seed, baseline="previous")
        runs = _ingest(store, h)
        hits = [c for c in detect(store, h.job) if "paired" in c.signals and c.first_run.id == runs[12].id]
        for c in hits:
            assert c.direction == "regression" and c.p_value <= paired_signal.ALPHA and "vs its baseline" in c.how
            assert c.commit_range == (h.commits[11], h.commits[12])
            assert c.shift_low < c.shift < c.shift_high < 0 and -0.10 < c.shift < -0.02
        found += len(hits)
    assert found >= 8


@pytest.mark.heavy
def test_a_pinned_baseline_finds_a_2pct_shift_over_the_in_run_changes(store):
    h = make_job("pin", 40, [Shift(20, -0.02)], seed=3, baseline="pinned")
    runs = _ingest(store, h)
    pos = {r.id: i for i, r in enumerate(runs)}
    found = [c for c in detect(store, "pin") if "paired" in c.signals]
    (c,) = [c for c in found if abs(pos[c.first_run.id] - 20) <= 1]
    assert c.direction == "regression" and -0.04 < c.shift < 0 and c.shift_high < 0
    assert any("E-Divisive over the in-run changes" in x.how for x in (c, *c.also))


@pytest.mark.heavy
@pytest.mark.parametrize("policy", ["previous", "pinned"])
def test_shift_free_history_stays_within_one_false_alert_per_100_runs(tmp_path, policy):
    st = HistoryStore.open(tmp_path / "h.sqlite")
    runs = found = 0
    for j in range(15):
        h = make_job(f"j{j}", 40, [], seed=100 + j, baseline=policy)
        runs += len(_ingest(st, h))
        found += len(detect(st, h.job, ("paired:",)))
    # both signals together, at most 1 in 100 runs (within Binomial's 99.9% bound)
    assert found <= binom.ppf(0.999, runs, 0.01)


def _cp(signal: str, run: StoredRun, direction: str = "regression", p: float | None = None) -> ChangePoint:
    return ChangePoint("j", "paired:j", signal, run, None, -0.05, -0.07, -0.03, direction, how=signal, p_value=p)


def test_findings_of_one_shift_are_merged_once_naming_both():
    runs = [StoredRun(i, "j", f"r{i}", "", {}, {}) for i in range(8)]
    pos = {r.id: r.id for r in runs}
    out = merge([_cp("change point", runs[3]), _cp("paired", runs[2], p=0.001),     # one shift
                 _cp("change point", runs[6], "improvement"), _cp("paired", runs[6], p=0.002),
                 _cp("change point", runs[0])], pos)                                 # two runs away
    assert [(c.first_run.id, c.kind) for c in out] == [
        (0, "change point"), (2, "paired+change point"), (6, "paired"), (6, "change point")]
    assert out[1].also[0].first_run.id == 3


def test_a_shift_both_signals_find_is_stored_and_alerted_once(store):
    h = make_job("both", 30, [Shift(15, -0.10, "lookupKey")], seed=4, baseline="previous")
    runs = _ingest(store, h)
    pos = {r.id: i for i, r in enumerate(runs)}
    near = [c for c in detect(store, "both") if c.series == "paired:both" and abs(pos[c.first_run.id] - 15) <= 1]
    (c,) = near
    assert c.signals == ("paired", "change point") and c.first_run.id == runs[15].id
    assert [r["kind"] for r in store.stored_change_points("both")
            if r["series"] == "paired:both" and r["first_run"] == runs[15].id] == ["paired+change point"]
    text = render_alert(at_run(store, "both", runs[15]), runs[15])
    assert text.count("| paired:both |") == 1 and "found by 2 signals" in text
    assert "in-run paired: paired test vs its baseline" in text and "E-Divisive on the series" in text


def test_the_schedule_alerts_a_shift_at_the_newest_run(store):
    h = make_job("last", 12, [Shift(11, -0.08)], seed=2, baseline="previous")
    runs = _ingest(store, h)
    found = _changes_at(store, "last", runs[-1])
    assert [c.signals for c in found] == [("paired",)]
    assert found[0].commit_range == (h.commits[10], h.commits[11])
    text = render_alert(found, runs[-1])
    assert "#### Regressions" in text and "in-run paired" in text and h.commits[11][:12] in text
    assert _changes_at(store, "last", runs[-2]) == []


def test_a_shift_placed_at_an_earlier_run_is_alerted_once_by_the_next_run(store):
    """A finding placed at run 15 that no run alerted (E-Divisive sees a shift runs after
    it): the next run that keeps its alerts alerts it, the run after does not again."""
    h = make_job("late", 30, [Shift(15, -0.10, "lookupKey")], seed=4, baseline="previous")
    for r in h.runs[:29]:
        store.ingest_results(r, job=h.job)
    runs = store.runs("late")
    (c,) = [c for c in detect(store, "late") if c.series == "paired:late" and c.first_run.id == runs[15].id]
    # a history kept before runs recorded their alerts: only what is placed at the run
    assert all(x.first_run.id == runs[28].id for x in due(store, "late", runs[28]))
    record(store, runs[10], [])                  # the job's first run that kept its alerts
    late = due(store, "late", runs[28])
    assert ("paired:late", runs[15].id) in [(x.series, x.first_run.id) for x in late]
    record(store, runs[28], late)
    store.ingest_results(h.runs[29], job="late")
    assert [x for x in due(store, "late", store.runs("late")[29]) if x.series == "paired:late"
            and x.first_run.id == runs[15].id] == []
    # one alerted within a run of where the shift is placed now counts as alerted too
    record(store, runs[28], [])
    store.set_meta(runs[20].id, "alerted", [["paired:late", "regression", runs[16].id]])
    assert [x for x in due(store, "late", store.runs("late")[29]) if x.first_run.id == runs[15].id
            and x.series == "paired:late"] == []


def test_a_regression_whose_bisection_found_no_culprit_is_alerted_as_not_confirmed(store):
    h = make_job("refuted", 12, [Shift(11, -0.08)], seed=2, baseline="previous")
    runs = _ingest(store, h)
    found = _changes_at(store, "refuted", runs[-1])
    ends = {"good": h.commits[10], "bad": h.commits[11]}
    store.set_culprit(runs[-1].id, {"status": "no culprit", **ends,
                                    "why": "no culprit: the bad end is the same as the good end"})
    text = render_alert(found, store.run(runs[-1].id))
    assert "#### Regressions" not in text and "#### Not confirmed: bisecting the run's range found no culprit" in text
    assert "the bad end is the same" in text and "| paired:refuted |" in text
    store.set_culprit(runs[-1].id, {"status": "culprit", "culprit": h.commits[11], "subject": "s", **ends})
    text = render_alert(found, store.run(runs[-1].id))
    assert "#### Regressions" in text and "Not confirmed" not in text and "**Culprit:" in text
