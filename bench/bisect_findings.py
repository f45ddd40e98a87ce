"""Figure 5c's last column: the findings of a scheduled job with a `bisect:` block, each
regression bisected to its commit as collectors/schedule/autobisect.py does.

The model. Run i of a job measures its commit i against the pinned baseline's commit P, so a
shift injected at run s is commit s. A regression the detector places at run k is bisected
over the range of the run that alerts it, P..k for a paired test, P..k+1 at least for a
finding other signals place (alerted_at), by the real search (analysis/bisect/search.py)
and step rule (analysis/bisect/rule.py) at the job's minimum change, each probe's paired reps
drawn from the 25 recorded paired reps of figure 15 (bench/bisection.py: sd 2.7% a rep) plus
the true change between the probe and its base. Then, as the alert would read:

- a culprit: the finding moves to the culprit's run; findings naming one culprit are one;
- no culprit: the finding is withdrawn (the range's ends are the same within the minimum;
  the alert lists it as not confirmed, analysis/history/alert_md.py);
- unresolved: the finding stays where the detector placed it.

A range of one commit is that commit, unmeasured (autobisect does the same). Improvements
are not bisected: the autobisect bisects regressions only.

What the model leaves out: the builds (each probe a build of its commit), and that a real
bisection's reps come from this host on the day, not from the recorded evening.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from analysis.bisect import rule
from analysis.bisect.search import CULPRIT, NO_CULPRIT
from bench.bisection import residuals, simulate

# The goal is a 2% shift: a job that wants its 2% regressions bisected asks for that.
MIN_CHANGE = 0.02


def alerted_at(c, k: int, runs: int) -> int:
    """The run whose range (P..that run) bisects a finding placed at run k. A paired test
    places a shift at its own run and is alerted there; any other signal (E-Divisive, a
    function's series) sees a shift only runs after its place, and the run that alerts it
    late bisects from P to itself (collectors/schedule/autobisect.py). The sequential
    detection is not simulated: the earliest such run, k + 1, is taken, the smallest range
    (a later run's range holds the shift whenever this one does)."""
    placed_by_test = c.signal == "paired" and c.p_value is not None
    return k if placed_by_test else min(k + 1, runs - 1)


@dataclass
class Bisector:
    """Bisects the findings of one bench, keeping its cost."""
    rng: np.random.Generator
    min_change: float = MIN_CHANGE
    bisections: int = 0
    reps: int = 0
    outcomes: Counter = field(default_factory=Counter)   # culprit at the shift / elsewhere, ...

    def __post_init__(self) -> None:
        self.res = residuals()
        self.sd = float(self.res.std(ddof=1))

    def outcome(self, k: int, at: int | None, size: float) -> tuple[str, int | None]:
        """Bisect P..k with the shift `size` at run `at` (None: none): (status, the culprit's
        run or None)."""
        if k == 0:
            return CULPRIT, 0                # one commit: it is the culprit, unmeasured
        effect = [0.0] + [math.log1p(size) if at is not None and i >= at else 0.0 for i in range(k + 1)]
        looks = rule.plan_looks(self.min_change, self.sd, rule.step_alpha(k + 1))
        b, reps = simulate(self.res, effect, self.min_change, looks, self.rng)
        self.bisections += 1
        self.reps += reps
        c = b.culprit()
        run = None if c is None else b.commits.index(c) - 1
        self.outcomes[b.status if run is None else "the shift's commit" if run == at else "another commit"] += 1
        return b.status, run

    def confirm(self, found: list, ids: list[int], at: int | None, size: float) -> list[int]:
        """The runs the job's findings name once each regression is bisected."""
        named: list[int] = []
        for c in found:
            k = ids.index(c.first_run.id)
            if c.direction != "regression":
                named.append(k)
                continue
            status, culprit = self.outcome(alerted_at(c, k, len(ids)), at, size)
            if culprit is not None:
                if culprit not in named:
                    named.append(culprit)
            elif status != NO_CULPRIT:
                named.append(k)
        return named
