"""The funnel's interval from 2 runs a side, proved on recorded reps (bench/small_n.py).

The TMA funnel gives an interval from 2 outputs per side (analysis.stats.SMALL_N). Both
sides of each simulated comparison are drawn from one pool of recorded per-window
throughput of one binary (tests/data/runs/noise-*), so the true change is 0: the Welch
t-interval the funnel uses must hold it at least about 95% of the time, while the normal
interval and "the ranges do not overlap" (what a reader does with two runs) fail. `make
bench` figure 8 runs more draws."""
from __future__ import annotations

import numpy as np
import pytest

from analysis.stats import SMALL_N, compare_shares
from bench import small_n

DRAWS = 4000


@pytest.fixture(scope="module")
def pools():
    p = small_n.recorded_pools()
    assert len(p) == 6 and all(len(x.values) >= 190 for x in p)
    return p


def test_welch_holds_at_two_runs_a_side_and_the_naive_rules_do_not(pools):
    rows = small_n.simulate(pools, SMALL_N, DRAWS, seed=5, modes=("iid", "in order"))
    assert len(rows) == 12
    for name, mode, share, _half in rows:
        # 4,000 draws: a true 95% lands below 94.2% with probability under 1%
        assert share["welch"] >= 0.942, (name, mode, share)
        if mode == "iid":
            assert share["normal"] < 0.88, (name, mode, share)    # ~81%: far from 95%
            assert share["ranges"] < 0.75, (name, mode, share)    # a false change in 1 of 3


def test_unequal_spreads_and_share_pools():
    """Welch's harder cases (issue 26 item 11): the candidate's spread three times the
    base's, and values that are shares (a function's % of samples per profile rep). Welch
    holds about its 95% (93.6-96.6% measured in make bench figure 8: with spreads that differ
    it can fall a point short at 2 a side, and the docs say so); the naive rules fail."""
    rows = small_n.simulate(small_n.recorded_pools()[:2] + small_n.share_pools(), SMALL_N,
                            DRAWS, seed=6, modes=("iid", "iid, cand spread x3"))
    assert any("share:" in name for name, *_ in rows)
    for name, mode, share, _half in rows:
        assert share["welch"] >= 0.925, (name, mode, share)
        assert share["normal"] < 0.88 and share["ranges"] < 0.78, (name, mode, share)


def test_the_simulated_interval_is_the_one_stallscope_computes(pools):
    """The bench's vectorised Welch is the shipped one: same call on the same draws."""
    rng = np.random.default_rng(11)
    b, c = small_n.draws(pools[0].values, SMALL_N, 300, False, rng)
    held = small_n.holds(b, c)["welch"]
    for i in range(len(b)):
        ch = compare_shares(list(b[i]), list(c[i]), min_n=SMALL_N)
        assert "Welch" in ch.method and ch.ci_low is not None
        assert (ch.ci_low <= 0 <= ch.ci_high) == bool(held[i]), i
