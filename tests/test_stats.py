"""Statistics: known answers (constructed numbers are fine here: this is math, not data)."""
import math
import statistics

import numpy as np
import pytest
from scipy.stats import ttest_ind

from analysis import ranks
from analysis.stats import compare, compare_shares, summarize


def test_summary_known_values():
    s = summarize([1, 2, 3, 4, 10])
    assert (s.n, s.median, s.mean, s.min, s.max) == (5, 3.0, 4.0, 1.0, 10.0)
    assert s.stdev == pytest.approx(math.sqrt(12.5))        # sum sq dev 50 / (n-1)
    assert s.cv == pytest.approx(math.sqrt(12.5) / 4)
    assert summarize([7]).stdev == 0.0
    with pytest.raises(ValueError, match="no values"):
        summarize([])


def test_mann_whitney_null_distribution_exact():
    # counts of U for m = n = 5 start 1, 1, 2, 3, 5 (of C(10,5) = 252 arrangements)
    cdf = ranks.mann_whitney_cdf(5, 5)
    assert [round(c * 252) for c in cdf[:5]] == [1, 2, 4, 7, 12]
    assert cdf[-1] == pytest.approx(1.0)
    # Wilcoxon signed rank, n = 5: counts of T+ start 1, 1, 1, 2 (of 32)
    assert [round(c * 32) for c in ranks.signed_rank_cdf(5)[:4]] == [1, 2, 3, 5]


def test_hodges_lehmann_by_hand():
    # differences cand - base: {1,2,3} - {0,1}... = 1,0,2,1,3,2 -> sorted 0,1,1,2,2,3 -> median 1.5
    assert ranks.hodges_lehmann([0, 1], [1, 2, 3]) == 1.5
    # 5 v 5: the 95% interval is [D(3), D(23)] of the 25 sorted differences (coverage 96.8%)
    base, cand = [10, 11, 12, 13, 14], [20, 21, 22, 23, 24]
    d = sorted(c - b for c in cand for b in base)
    lo, hi, conf = ranks.shift_interval(base, cand)
    assert (lo, hi) == (d[2], d[22]) == (7.0, 13.0)
    assert conf == pytest.approx(1 - 8 / 252)


def test_identical_samples_no_change():
    vals = [100.0, 101.0, 99.0, 100.5, 99.5]
    ch = compare(vals, list(vals))
    assert ch.delta == 0 and ch.rel == 0
    assert ch.ci_low < 0 < ch.ci_high
    assert ch.verdict == "no change"


def test_clear_improvement_and_regression():
    base = [100, 101, 99, 100, 100]
    up = [110, 111, 109, 110, 110]
    ch = compare(base, up)
    assert ch.verdict == "improvement"
    # the Hodges-Lehmann shift (median of the 25 differences) with its Mann-Whitney interval
    assert ch.delta == 10.0 and ch.estimator == "Hodges-Lehmann shift"
    assert (ch.ci_low, ch.ci_high) == (9.0, 11.0)
    # relative: the same on log values, so the ratios cand_j / base_i by hand
    ratios = sorted(c / b for c in up for b in base)
    assert ch.rel == pytest.approx(ratios[12] - 1) == pytest.approx(0.1)
    assert (ch.rel_ci_low, ch.rel_ci_high) == (pytest.approx(ratios[2] - 1),
                                               pytest.approx(ratios[22] - 1))
    assert "96.8%" in ch.method
    # the same numbers for a lower-is-better metric (latency) are a regression
    assert compare(base, up, higher_is_better=False).verdict == "regression"


def test_change_is_the_estimator_of_its_interval():
    """pyperf's rule: the printed change lies inside its own interval. Paired windows whose
    sides' medians move by +4 while every pair moved by 4..6: the old difference of
    medians (+4) sat outside the signed-rank interval [4.5, 5.5]."""
    base = [103, 94, 95, 100, 100, 100, 101, 94]
    cand = [108, 99, 101, 105, 104, 104, 107, 99]
    ch = compare(base, cand, paired=True)
    assert statistics.median(cand) - statistics.median(base) == 4.0
    assert (ch.ci_low, ch.ci_high) == (4.5, 5.5) and "signed-rank" in ch.method
    diffs = [c - b for b, c in zip(base, cand)]
    walsh = sorted((diffs[i] + diffs[j]) / 2 for i in range(8) for j in range(i, 8))
    assert ch.delta == statistics.median(walsh) == 5.0
    assert ch.estimator.startswith("Hodges-Lehmann pseudo-median")
    assert ch.rel_ci_low <= ch.rel <= ch.rel_ci_high
    # unpaired: the Hodges-Lehmann shift, not the difference of medians (10)
    b, c = [10, 11, 12, 13, 14], [20, 21, 22, 30, 40]
    u = compare(b, c)
    assert u.delta == ranks.hodges_lehmann(b, c) == 11.0
    assert u.ci_low <= u.delta <= u.ci_high
    # Welch (3 reps): difference of means; bootstrap: difference of medians
    w = compare([1.0, 1.01, 0.99], [2.0, 2.01, 2.5])
    assert w.delta == pytest.approx(statistics.mean([2.0, 2.01, 2.5]) - 1.0)
    assert w.estimator == "difference of means"
    bs = compare(b, c, method="bootstrap")
    assert bs.delta == 10.0 and bs.estimator == "difference of medians"


def test_relative_interval_on_the_log_scale_never_passes_minus_100():
    # a cost that almost vanishes: linear (ci / base median) reached -115%
    base = [0.2, 0.22, 0.24, 0.2, 0.19]
    cand = [0.01, 0.011, 0.009, 0.05, 0.01]
    ch = compare(base, cand, higher_is_better=False)
    assert ch.ci_low / statistics.median(base) < -1.0
    assert -1.0 < ch.rel_ci_low <= ch.rel <= ch.rel_ci_high < 0
    ratios = sorted(c / b for c in cand for b in base)
    assert ch.rel == pytest.approx(ratios[12] - 1)
    assert ch.verdict == "improvement"
    # Welch on logs is scipy's Welch on logs (3 reps per side)
    b3, c3 = [38647.34, 20314.88, 23054.75], [4340.75, 2871.50, 4455.34]
    w = compare(b3, c3)
    want = ttest_ind(np.log(c3), np.log(b3), equal_var=False).confidence_interval(0.95)
    assert (w.rel_ci_low, w.rel_ci_high) == (pytest.approx(math.expm1(want.low)),
                                             pytest.approx(math.expm1(want.high)))
    assert w.rel == pytest.approx(math.expm1(np.log(c3).mean() - np.log(b3).mean()))
    # the verdict follows the printed (relative) interval, which clears 0, even though
    # the absolute Welch interval (one fast base rep) reaches past 0
    assert w.ci_low < 0 < w.ci_high and w.rel_ci_high < 0 and w.verdict == "regression"


def test_no_ratio_with_a_value_at_or_below_zero():
    ch = compare([10, 11, 12, 10, 11], [0, 0, 0, 0, 0], higher_is_better=False)
    assert ch.rel is None and ch.rel_ci_low is None and ch.rel_ci_high is None
    assert ch.delta == -11.0 and ch.ci_high < 0          # the absolute change still stands
    assert ch.verdict == "improvement" and "of the base median" in ch.reason
    sh = compare_shares([1.0, 1.1, 0.9, 1.0], [0.0, 0.0, 0.1, 0.0])
    assert sh.rel is None and sh.delta < 0 and sh.unit == "pp"


def test_below_waterline_is_minor_not_no_change():
    """A decided change under its line is named by its direction, on both sides (-4% once
    read "no change" while +4% read "improvement"), and the line is the same both ways by
    default: a decided -4% is a regression as +4% is an improvement (with the automation's
    two lines it printed "regression, below the 5% line", the softer word for the direction
    a gate is there to catch)."""
    base = [100, 100.1, 99.9, 100, 100]
    cand = [102, 102.1, 101.9, 102, 102]        # +2%: real, but under the 3% line
    ch = compare(base, cand)
    assert ch.ci_low > 0 and ch.verdict == "minor improvement" and ch.line == 0.03
    assert "below the 3% line" in ch.reason
    minor = compare(base, [98, 98.1, 97.9, 98, 98])          # -2%: under the same line
    assert minor.verdict == "minor regression" and minor.line == 0.03
    assert "a real regression, below the 3% line" in minor.reason
    assert compare(base, [96, 96.1, 95.9, 96, 96]).verdict == "regression"       # -4%
    assert compare(base, [104, 104.1, 103.9, 104, 104]).verdict == "improvement"  # +4%
    # a line of its own for regressions, asked for
    own = compare(base, [96, 96.1, 95.9, 96, 96], regression=0.05)
    assert own.verdict == "minor regression" and own.line == 0.05


def test_unstable_and_insufficient():
    ch = compare([100, 140, 70, 100, 130], [105, 60, 150, 100, 90])
    assert ch.verdict == "unstable" and "CV" in ch.reason
    ch = compare([1, 2], [3, 4, 5])
    assert ch.verdict == "insufficient data" and ch.ci_low is None and ch.method == "n<3: none"


def test_three_reps_reports_real_coverage():
    ch = compare([1.0, 1.01, 0.99], [2.0, 2.01, 1.99], method="hl")
    assert ch.verdict == "improvement"
    assert ch.confidence == pytest.approx(0.9)          # 1 - 2/C(6,3): 95% is unattainable
    assert "not attainable" in ch.method


def test_default_method_reaches_95_at_three_reps():
    # compare() and compare_shares() share the documented default, method="auto"
    for ch in (compare([1.0, 1.01, 0.99], [2.0, 2.01, 1.99]),
               compare_shares([1.0, 1.01, 0.99], [2.0, 2.01, 1.99])):
        assert ch.confidence == pytest.approx(0.95) and "Welch" in ch.method


def test_paired_uses_pair_differences():
    # drift moves both sides together; pairs see a steady +2 that unpaired ranks blur
    base = [100, 110, 120, 130, 140, 150]
    cand = [106, 116.5, 125.5, 136.2, 145.9, 156]
    p = compare(base, cand, paired=True, noise=0.03)
    assert 5.5 <= p.ci_low < p.ci_high <= 6.5
    assert p.verdict == "improvement" and "signed-rank" in p.method
    # every pair exactly +6 (rounded output): no spread, so no interval (issue 26 item 3)
    flat = compare(base, [b + 6 for b in base], paired=True)
    assert flat.verdict == "insufficient data" and flat.ci_low is None and flat.p_value is None
    u = compare(base, cand)
    assert u.ci_low < 0 < u.ci_high                      # unpaired cannot see it
    with pytest.raises(ValueError, match="equal counts"):
        compare([1, 2, 3], [1, 2, 3, 4], paired=True)


def test_bootstrap_is_reproducible():
    a = compare([100, 101, 99, 100, 100], [110, 111, 109, 110, 110], method="bootstrap")
    b = compare([100, 101, 99, 100, 100], [110, 111, 109, 110, 110], method="bootstrap")
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high) == (9.0, 11.0)
    assert "seed 0" in a.method
    with pytest.raises(ValueError, match="unpaired only"):
        compare([1, 2, 3], [1, 2, 3], paired=True, method="bootstrap")


def test_shares_use_percentage_points():
    ch = compare_shares([8.5, 8.4, 8.6], [1.0, 1.1, 0.9])
    assert ch.unit == "pp" and ch.delta == pytest.approx(-7.5)
    assert ch.verdict == "improvement"                   # a cost share going down
    # 0.20% -> 0.30% is +50% relative but only 0.1 pp: decided, under the 0.5 pp line (the
    # same line both ways)
    small = compare_shares([0.2, 0.21, 0.19], [0.3, 0.31, 0.29])
    assert small.rel == pytest.approx(0.5, abs=0.005) and small.verdict == "minor regression"
    assert small.line == 0.5 and "below the 0.50 pp line" in small.reason


def test_unpaired_sides_of_different_lengths_get_a_p_value():
    # 4 reps against 3 (a failed rep): no pair differences exist, and none are taken
    ch = compare([100, 102, 98, 101], [110, 111, 109])
    assert ch.p_value is not None and 0 < ch.p_value < 0.1
    assert compare([1.0, 2.0, 3.0], [1.5, 2.5, 3.5, 4.5], method="hl").p_value is not None


def test_two_reps_a_side_get_a_welch_interval_only_where_asked():
    b, c = [10.0, 10.4], [14.0, 14.5]
    assert compare(b, c).verdict == "insufficient data"          # the run pipeline: 3 a side
    ch = compare_shares(b, c, min_n=2, higher_is_better=True)
    t = ttest_ind(c, b, equal_var=False).confidence_interval(0.95)
    assert "Welch" in ch.method and "n=2+2" in ch.method
    assert (ch.ci_low, ch.ci_high) == pytest.approx((t.low, t.high))
    assert ch.verdict == "improvement" and ch.detectable is not None
    with pytest.raises(ValueError, match="min_n must be at least 2"):
        compare(b, c, min_n=1)
