"""The rules that keep the paired signal's findings honest against a pinned baseline
(paired_signal.refine, plausible, confirmed): small, exact cases."""
import numpy as np

from analysis.history import paired_signal
from analysis.history.paired_signal import RunRatios


def _series(shift: float, at: int = 20, n: int = 40, seed: int = 3) -> list[float]:
    y = np.random.default_rng(seed).normal(0, 0.012, n)
    y[at:] += shift
    return [float(v) for v in y]


def test_a_cut_without_a_mean_shift_behind_it_is_dropped_and_a_real_one_kept():
    assert paired_signal.refine(_series(0.0), [15]) == {}
    kept = paired_signal.refine(_series(-0.03), [18])
    assert list(kept) == [20] and 20 in kept[20]


def test_the_places_a_shift_may_be_at_are_an_interval_around_the_best():
    y = _series(-0.02)
    places = paired_signal.plausible(y)
    assert places == list(range(places[0], places[-1] + 1)) and places[0] <= 20 <= places[-1]
    assert len(paired_signal.plausible(_series(-0.06))) < len(places)


def _ratios(means: list[float]) -> list[RunRatios]:
    return [RunRatios(None, (m - 0.01, m, m + 0.01)) for m in means]


def test_the_first_runs_of_a_stretch_are_held_against_0_or_the_one_run_before():
    low = [-0.03] + [-0.03 + 0.004 * (i % 3) for i in range(8)]      # the runs after hold it
    back = [-0.03] + [0.004 * (i % 3) for i in range(8)]             # they are back at 0
    assert paired_signal.confirmed(_ratios(low), 0, 0, 9) is True
    assert paired_signal.confirmed(_ratios(back), 0, 0, 9) is False
    assert paired_signal.confirmed(_ratios([0.0] + back), 1, 0, 10) is False
    assert paired_signal.confirmed(_ratios([0.0] + low), 1, 0, 10) is True
