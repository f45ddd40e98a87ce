"""The PR comment's lead, rendered by the trusted comment job from results.json alone
(collectors/pr/lead_md.py, standard library only), against report.md's lead written by
analysis/report (lead.py, stall_tables.py, markdown._lead) from the same results: line for
line and cell for cell on the recorded demos; planted hostile strings render inert
(cmark-gfm); a malformed results.json is an error naming the file and the field."""
from __future__ import annotations

import itertools

from analysis.intervals import level_text
from analysis.power import POWER
from analysis.report import fmt
from analysis.stats import detectable_text


def test_the_standard_library_numbers_are_the_statistics_own():
    """analysis/report/fmt.py words the level and the detectable size itself (the comment job
    imports it under python3 -S, without numpy): the same text as the statistics' own."""
    levels = [0.8, 0.9, 0.95, 0.96, 0.969, 0.975, 0.99, 0.9964, 0.9979, 0.99999, 0.999984188612,
              0.95 ** (1 / 3), 1 - 0.05 / 7]
    assert [fmt.level(x) for x in levels] == [level_text(x) for x in levels]
    sizes = [None, 0.0, 0.001, 0.0114, 0.0235, 0.148458233496, 0.5, 0.99, 1.0, 1.0001, 3.2]
    for size, points in itertools.product(sizes, (False, True)):
        assert fmt.detectable(size, "pp" if points else "rel") == detectable_text(size, points)
    assert fmt.POWER == POWER
