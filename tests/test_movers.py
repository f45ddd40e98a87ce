"""The top movers' family (analysis/compare/families.py): each function's rows weigh its own
share, its CPU time per operation is judged by a moderated t (analysis/moderated.py), on the
recorded paired A/A run tests/data/runs/mset-aa-paired-small (bench/movers.py, `make bench`
figure 7d, runs more draws):

- bench/movers.py builds its rows from the recorded reps with the library's pieces: on the
  whole run they are the family `stallscope compare` judges, with its p-values and weights;
- on A/A draws (5 or 10 reps, each rep's sides swapped at random) the shipped rule calls a
  false mover in at most about 5% of draws, each row alone at 95% in most of them;
- with a ±10% change planted in a function of about 7% of the samples, the shipped rule
  finds it far more often than Holm over the same rows did;
- the planner's function (power.row_reach) gives the level such a row is judged at."""
from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest

from analysis import power
from analysis.compare import families, profiles
from analysis.compare.options import CompareOptions
from analysis.inputs.rundir import load_run
from bench import movers


@pytest.fixture(scope="module")
def pool():
    return movers.pool()


def _library_family(run):
    """The top movers' rows as compare judges them: (name, kind) -> (p-value, level, weight)."""
    got = {}
    real = families.function_fdr

    def spy(sec, opts, candidates=(), counted=None):
        out = real(sec, opts, candidates, counted)
        asked = {r.name for r in sec.focus}
        for r in candidates:
            for k in ("flat", "cum"):
                j = getattr(r, f"{k}_verdict")
                if r.name not in asked and j is not None and j.basis:
                    ch = getattr(r, f"{k}_ns_change")
                    got[(r.name, k)] = (ch.p_value, ch.level, families.own_share(r))
        return out
    with mock.patch.object(profiles, "function_fdr", spy):
        sec, _ = profiles.profiles(run, "a", "b", list(run.manifest.case.focus or []), CompareOptions())
    return got, sec.movers_fdr


def test_the_bench_judges_the_rows_compare_judges(pool):
    run = load_run(movers.RUN)
    lib, fam = _library_family(run)
    rows = movers.rows(pool, pool.counts, pool.total, pool.unit)
    assert {(r.name, r.kind) for r in rows} == set(lib) and fam.comparisons == len(rows)
    assert fam.weights == "own share" and 0.5 < fam.weight_left < 1
    from analysis import moderated
    p = {(r.name, r.kind): moderated.p_value(t) for r, t in zip(rows, _tests(rows))}
    for key, (lp, level, w) in lib.items():
        assert p[key] == pytest.approx(lp, rel=1e-3, abs=1e-6), key
        r = next(r for r in rows if (r.name, r.kind) == key)
        assert r.weight == pytest.approx(w, rel=1e-6)
        assert level == pytest.approx(1 - 0.05 * power.on_grid(w / fam.weight_left))


def _tests(rows):
    from analysis import counting, moderated
    d = [counting.of_row(r.base, r.cand, r.nb, r.nc, True) for r in rows]
    prior = moderated.prior_of(d)
    return [moderated.row_test(x, prior) for x in d]


@pytest.mark.heavy
def test_aa_draws_rarely_call_a_mover_under_the_shipped_rule(pool):
    for k in (5, 10):
        err = movers.error_rates(pool, k, 120, seed=2)
        assert err["naive"] >= 60, err             # about every second draw and more
        lo, _ = movers.wilson(err["shipped"], 120)
        assert lo <= 0.05 and err["shipped"] <= 12, err    # consistent with 5% (10%: 12 of 120)


@pytest.mark.heavy
def test_a_planted_ten_percent_is_found_far_more_often_than_under_holm(pool):
    # 60 draws each of the two 7%-share functions, 10 reps: the shipped rule finds the
    # change in about a quarter (15-32% over 100 draws), Holm in 0-2%
    det = movers.detections(pool, 10, 60, seed=3)
    ours = sum(det[f]["shipped"] for f in ("rtree_metadata_read", "dictSdsKeyLen"))
    holm = sum(det[f]["holm"] for f in ("rtree_metadata_read", "dictSdsKeyLen"))
    assert ours >= 15 and ours >= 4 * max(holm, 1), det


def test_the_planner_says_the_level_a_share_is_judged_at():
    r = power.row_reach(0.05, 1600, 10)
    assert r.level == pytest.approx(1 - 0.05 * power.on_grid(0.05))      # 1 - q x share
    more = power.row_reach(0.05, 8000, 10)
    assert more.level == r.level and more.detectable < r.detectable / 2
    assert power.row_reach(0.10, 1600, 10).level < r.level               # a larger share: laxer
    focus = power.row_reach(0.05, 1600, 10, focus_rows=10)
    assert focus.level == pytest.approx(0.995)
    # what counting predicts: sd of a rep's log ratio sqrt(2 / (share x samples))
    assert r.se == pytest.approx(math.sqrt(2 / (0.05 * 1600)) / math.sqrt(10))
    with pytest.raises(ValueError):
        power.row_reach(5, 1600, 10)                                      # a share is a fraction


def test_a_mover_noisier_than_its_family_is_judged_on_its_own_degrees_of_freedom():
    """zfree in the recorded A/A aa-decides-emr-1: its own dispersion 2.28 on 12 degrees of
    freedom, the family's 0.91 on 52. Judged on 64 it was called changed 3.9x as often as
    99.9% allows over every pattern of swapped sides; on its own 12, about as often as
    allowed, and its detectable size is K at 13 pairs, not at 60 (bench/mover_df.py)."""
    from analysis import counting, moderated
    from bench import mover_df
    p = movers.pool(mover_df.REPO / "tests/data/runs/aa-decides-emr-1")
    rows = movers.rows(p, p.counts, p.total, p.unit)
    d = [counting.of_row(r.base, r.cand, r.nb, r.nc, True) for r in rows]
    prior = moderated.prior_of(d)
    i = next(i for i, r in enumerate(rows) if (r.name, r.kind) == ("zfree", "flat"))
    t = moderated.row_test(d[i], prior)
    assert d[i].phi == pytest.approx(2.28, abs=0.01) and prior.d0 == pytest.approx(52.3, abs=0.1)
    assert t.df == 12 and t.phi == d[i].phi
    b, c = rows[i].base, rows[i].cand
    ch = moderated.change(b, c, t, 0.99)
    assert ch.detectable == pytest.approx(math.expm1(power.moderated_multiplier(12, 0.99) * t.se))
    _, flips = mover_df.flips("aa-decides-emr-1")
    z = next(f for f in flips if (f.name, f.kind) == ("zfree", "flat"))
    assert mover_df.called(z, 0.999, "family") / 0.001 > 3      # 3.9x
    assert mover_df.called(z, 0.999, "shipped") / 0.001 < 1.3   # 1.0x
    for run in ("aa-decides-emr-1", "aa-decides-emr-3"):
        _, rs = mover_df.flips(run)
        for level in (0.95, 0.99):
            assert mover_df.rate(rs, level, "shipped") < mover_df.rate(rs, level, "family")
