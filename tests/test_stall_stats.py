"""The memory-stall section's intervals (analysis/compare/stall_stats.py): each is checked
against a computation of its own, and the coverage of the rule the report prints (Welch over
the two runs' pair differences for the stall removed, Fieller for its share) is simulated,
beside the naive share a reader takes from the CPU-time table, which misses the truth."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from analysis.compare import stall_stats as st
from analysis.compare.stalls import stall_row


def test_the_difference_of_two_means_is_welchs_interval():
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 2, 13), rng.normal(4, 0.5, 8)
    iv = st.interval(st.difference(st.mean_of(a), st.mean_of(b)), 0.95)
    ref = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert iv.value == pytest.approx(a.mean() - b.mean())
    assert (iv.low, iv.high) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert iv.decided


def test_one_rep_a_side_gives_no_interval_and_says_why():
    iv = st.interval(st.difference(st.mean_of([5.0]), st.mean_of([1.0, 2.0])), 0.95)
    assert iv.low is None and iv.why == "fewer than 2 reps on a side" and not iv.decided


def _fieller_by_search(num: st.Mean, den: st.Mean, cov: float, level: float) -> tuple[float, float]:
    """Fieller's set found by brute force: every rho whose t statistic of num - rho den stays
    under the quantile."""
    t = st.t_quantile(min(num.df, den.df), level)
    grid = np.linspace(-5, 5, 200001)
    stat = (num.value - grid * den.value) ** 2 - t * t * (num.var - 2 * grid * cov + grid * grid * den.var)
    inside = grid[stat <= 0]
    return float(inside.min()), float(inside.max())


def test_fieller_is_the_set_of_ratios_the_t_test_keeps():
    num, den = st.Mean(8.0, 1.5, 12), st.Mean(10.0, 0.8, 20)
    iv = st.fieller(num, den, 0.6, 0.95)
    low, high = _fieller_by_search(num, den, 0.6, 0.95)
    assert iv.value == pytest.approx(0.8)
    assert iv.low == pytest.approx(low, abs=1e-4) and iv.high == pytest.approx(high, abs=1e-4)


def test_fieller_refuses_a_denominator_not_clear_of_zero():
    iv = st.fieller(st.Mean(1.0, 0.1, 10), st.Mean(0.5, 1.0, 10), 0.0, 0.95)
    assert iv.low is None and "not clear of 0" in iv.why


# --------------------------------------------------------------- coverage by simulation

# A run like the demo's: 13 paired reps at the run's size, 8 in the control; a function that
# costs base 44 us and cand 12 us per op out of cache, 15 and 10 us in cache; rep-to-rep spread
# that moves both variants of a pair together (a restart, the host) and a smaller part each
# its own, as the recorded paired runs show.
TRUE = {"lb": 44.0, "lc": 12.0, "sb": 15.0, "sc": 10.0}


def _runs(rng, n_large=13, n_small=8):
    def run(n, b, c, common_sd, own_sd):
        shift = rng.normal(0, common_sd, n)
        return b + shift + rng.normal(0, own_sd, n), c + shift * (c / b) + rng.normal(0, own_sd, n)
    lb, lc = run(n_large, TRUE["lb"], TRUE["lc"], 4.0, 1.0)
    sb, sc = run(n_small, TRUE["sb"], TRUE["sc"], 1.5, 0.5)
    return {"large": {"b": list(lb), "c": list(lc)}, "small": {"b": list(sb), "c": list(sc)}}


def _naive_share(data) -> tuple[float, float]:
    """The share a reader takes from the CPU-time table alone (the seeds' "dictFindLinkInternal
    -88%"): the function's paired time drop at the run's size, 1 - cand/base per rep, with its
    t interval, read as the share of its stall the change removed. It leaves out the time the
    function spends in cache, which the change does not touch."""
    x = 1 - np.asarray(data["large"]["c"]) / np.asarray(data["large"]["b"])
    half = st.t_quantile(len(x) - 1, 0.95) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean() - half), float(x.mean() + half)


@pytest.mark.heavy
def test_the_printed_intervals_cover_and_the_naive_share_does_not():
    rng = np.random.default_rng(20261206)
    truth_removed = (TRUE["lb"] - TRUE["sb"]) - (TRUE["lc"] - TRUE["sc"])
    truth_share = truth_removed / (TRUE["lb"] - TRUE["sb"])
    hits = {"removed": 0, "share": 0, "base": 0, "naive": 0}
    shares = naive_n = 0
    n = 4000
    for _ in range(n):
        d = _runs(rng)
        row = stall_row("f", "flat", d["large"], d["small"], "b", "c", 0.95, True)
        hits["removed"] += row.removed.low <= truth_removed <= row.removed.high
        o = row.base.out_of_cache
        hits["base"] += o.low <= TRUE["lb"] - TRUE["sb"] <= o.high
        if row.share_removed is not None and row.share_removed.low is not None:
            shares += 1
            hits["share"] += row.share_removed.low <= truth_share <= row.share_removed.high
        naive = _naive_share(d)
        naive_n += 1
        hits["naive"] += naive[0] <= truth_share <= naive[1]
    cover = {"removed": hits["removed"] / n, "base": hits["base"] / n,
             "share": hits["share"] / shares, "naive": hits["naive"] / naive_n}
    # 4000 runs: a 95% coverage reads 94.3-95.7% two binomial standard errors out
    assert cover["removed"] >= 0.94 and cover["base"] >= 0.94 and cover["share"] >= 0.94, cover
    assert shares > 0.9 * n
    # the time drop (73% here) is not the stall's share (93%): its interval never covers it
    assert cover["naive"] < 0.05, cover


@pytest.mark.heavy
def test_the_removed_stall_of_an_unchanged_function_is_rarely_decided():
    """Both variants the same code (an A/A at both sizes): 'removed' decides at most its 5%."""
    rng = np.random.default_rng(7)
    decided, n = 0, 4000
    for _ in range(n):
        b = rng.normal(30, 4, 13)
        large = {"b": list(b + rng.normal(0, 1, 13)), "c": list(b + rng.normal(0, 1, 13))}
        s = rng.normal(12, 1.5, 8)
        small = {"b": list(s + rng.normal(0, 0.5, 8)), "c": list(s + rng.normal(0, 0.5, 8))}
        row = stall_row("f", "flat", large, small, "b", "c", 0.95, True)
        decided += row.removed.decided
    assert decided / n <= 0.06, decided / n
    assert math.isclose(decided / n, 0.05, abs_tol=0.015)
