"""Figure 5c's last column: the findings of a scheduled job with a `bisect:` block, each
regression bisected to its commit as collectors/schedule/autobisect.py does, on a clock.

The model. Run i of a job measures its commit i against the pinned baseline's commit P, so a
shift injected at run s is commit s. A regression the detector places at run k is bisected
over the range of the run that alerts it, P..k for a paired test, P..k+1 at least for a
finding other signals place (alerted_at), its first probe the commit of run k-1 (the run
before the place), by the real search (analysis/bisect/search.py) and step rule
(analysis/bisect/rule.py) at the job's minimum change, each step's paired reps drawn from
the 25 recorded paired reps of figure 15 (bench/bisection.py: sd 2.7% a rep) plus the true
change between its commits. The clock (bench/bisection.py's Clock): a paired rep at
`--size small` takes REP_S (tests/data/runs/mset-aa-paired-small, the same VM: 64 windows,
10 reps of 25 s, perf on), each look LOOK_S more (a run's start), each probe's commit a build
of BUILD_S (ccache warm); the budget BUDGET_S is checked before every look, as the driver
does, and a culprit counts once the search has proven it (the report's comparisons after it
are cut short by the budget, never the culprit). Then, as the alert would read:

- a culprit: the finding moves to the culprit's run; findings naming one culprit are one;
- no culprit: the finding is withdrawn (the range's ends are the same within the minimum;
  the alert lists it as not confirmed, analysis/history/alert_md.py);
- unresolved: the finding stays where the detector placed it.

A range of one commit is that commit, unmeasured (autobisect does the same). Improvements
are not bisected: the autobisect bisects regressions only.

What the model leaves out: that a real run spans several commits (the range after the first
probe is then those of one run, not one commit), and that a real bisection's reps come from
this host on the day, not from the recorded evening.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from analysis.bisect.rule import DIFFERENT
from analysis.bisect.search import CULPRIT, FUNCTIONS, NO_CULPRIT
from bench.bisection import Clock, residuals, simulate

# The goal is a 2% shift: a job that wants its 2% regressions bisected asks for that.
MIN_CHANGE = 0.02
REP_S, LOOK_S, BUILD_S = 25.0, 5.0, 60.0
BUDGET_S = 3600.0                    # bisect: {budget: 1h}


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
    """Bisects the findings of one bench, keeping its cost and, per shift size, how the
    bisections ended."""
    rng: np.random.Generator
    min_change: float = MIN_CHANGE
    clock: Clock = field(default_factory=lambda: Clock(REP_S, LOOK_S, BUILD_S, BUDGET_S))
    bisections: int = 0
    reps: int = 0
    outcomes: Counter = field(default_factory=Counter)   # culprit at the shift / elsewhere, ...
    by_size: dict = field(default_factory=lambda: defaultdict(Counter))
    seconds: dict = field(default_factory=lambda: defaultdict(list))
    unconfirmed: Counter = field(default_factory=Counter)   # culprits the budget left unchecked

    def __post_init__(self) -> None:
        self.res = residuals()
        self.sd = float(self.res.std(ddof=1))

    def outcome(self, k: int, at: int | None, size: float, placed: int | None = None) -> tuple[str, int | None]:
        """Bisect P..k with the shift `size` at run `at` (None: none), first probing the run
        before `placed`: (status, the culprit's run or None)."""
        if k == 0:
            return CULPRIT, 0                # one commit: it is the culprit, unmeasured
        effect = [0.0] + [math.log1p(size) if at is not None and i >= at else 0.0 for i in range(k + 1)]
        hint = placed if placed is not None and 0 < placed < k + 1 else None
        sim = simulate(self.res, effect, self.min_change, self.rng, hint=hint, clock=self.clock)
        b = sim.b
        self.bisections += 1
        self.reps += sim.reps
        c = b.culprit()
        run = None if c is None else b.commits.index(c) - 1
        holds = at is not None and at <= k
        ended = b.status if run is None else "the shift's commit" if run == at else "another commit"
        if ended == "unresolved" and sim.spent >= self.clock.budget_s:
            ended = "unresolved: budget spent"
        self.outcomes[ended] += 1
        self.by_size[(size, holds)][ended] += 1
        self.seconds[(size, holds)].append(sim.proven_s if run is not None else sim.spent)
        fn = next((s for s in b.steps if s.role == FUNCTIONS), None)
        if run is not None and (fn is None or fn.verdict != DIFFERENT):
            self.unconfirmed[(size, holds, run == at)] += 1
        return b.status, run

    def confirm(self, found: list, ids: list[int], at: int | None, size: float) -> list[int]:
        """The runs the job's findings name once each regression is bisected."""
        named: list[int] = []
        for c in found:
            k = ids.index(c.first_run.id)
            if c.direction != "regression":
                named.append(k)
                continue
            status, culprit = self.outcome(alerted_at(c, k, len(ids)), at, size, placed=k)
            if culprit is not None:
                if culprit not in named:
                    named.append(culprit)
            elif status != NO_CULPRIT:
                named.append(k)
        return named

    def lines(self) -> list[str]:
        """Per shift size, how the bisections of the alerts ended, and the minutes of the
        clock to the culprit's proof (or to the end, without one)."""
        out = []
        for (size, holds), got in sorted(self.by_size.items(), key=lambda kv: (kv[0][0], not kv[0][1])):
            n = sum(got.values())
            t = np.array(self.seconds[(size, holds)]) / 60
            cells = ", ".join(f"{v} {k}" for k, v in got.most_common())
            left = self.unconfirmed[(size, holds, True)] + self.unconfirmed[(size, holds, False)]
            if left:
                cells += (f"; {left} of the culprits not confirmed against their parent (the budget spent), "
                          f"{self.unconfirmed[(size, holds, False)]} of them another commit")
            what = "holding the shift" if holds else "without it"
            out.append(f"shift {100 * size:+3.0f}%, {n} ranges {what}: {cells}; minutes median {np.median(t):.0f}, "
                       f"90th percentile {np.percentile(t, 90):.0f}")
        return out
