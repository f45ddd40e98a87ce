"""E-Divisive means over one sequence of values (signal-processing-algorithms, MongoDB's
detector): where its segments start, with the permutation test at p < PVALUE, seeded so
the same history always gives the same change points."""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

PVALUE = 0.05
PERMUTATIONS = 100
MIN_RUNS = 6           # fewer runs than this: no change-point detection, in-run verdicts only


@contextlib.contextmanager
def _seeded(seed: int = 20261123) -> Iterator[None]:
    # The detector permutes with numpy's global generator: fixed, so the same history gives
    # the same change points, and restored, so nobody else's randomness changes.
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def change_indices(values: list[float]) -> list[int]:
    """Indices where a new segment starts (E-Divisive means, p < PVALUE)."""
    if len(values) < MIN_RUNS or len(set(values)) < 2:
        return []
    with _seeded():
        return sorted(int(i) for i in e_divisive(np.asarray(values, dtype=float), pvalue=PVALUE,
                                                   permutations=PERMUTATIONS))
