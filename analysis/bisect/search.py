"""A bisection's state and its search: which commit to probe next, and what the probes so far
prove. Pure data and logic (no builds, no runs): collectors/bisect/driver.py runs the steps
this module asks for, and bisect.json (the bisection's directory) holds this state between
steps, so an interrupted bisection resumes where it stopped.

The range is first-parent, oldest first: commits[0] is the good end, commits[-1] the bad
end. Every step compares one commit (the probe) with the good end. The search keeps
lo (the newest commit shown the *same* as good; 0 at the start) and hi (the oldest shown
*different*): first the ends (is there a change at all?), then the middle of (lo, hi) until
they are neighbours, and commits[hi] is the culprit. A step that stays "not yet" after its
last look ends the search: the culprit lies in (lo, hi] and the report says so, with both
ends' intervals. After a culprit, two more comparisons make the report: the culprit's parent
against the culprit (the functions that moved, from that run's profiles) and the culprit
against the bad end (does the culprit explain the whole range, or is a second change in the
rest, unresolved).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from analysis.bisect.rule import DIFFERENT, NOT_YET, SAME, Decision

SCHEMA = 1
ENDS, PROBE, FUNCTIONS, REST = "ends", "probe", "functions", "rest"
RUNNING, CULPRIT, NO_CULPRIT, UNRESOLVED = "running", "culprit", "no culprit", "unresolved"


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    date: str             # author date, ISO 8601


@dataclass
class Step:
    """One comparison: `base` (an index into commits) against `probe`, over paired reps that
    may come from several runs (one per look)."""
    role: str                              # ends | probe | functions | rest
    base: int
    probe: int
    runs: list[str] = field(default_factory=list)       # run directories, in order
    log_ratios: list[float] = field(default_factory=list)   # probe/base, one per paired rep
    decision: dict[str, Any] | None = None   # the last look's Decision (None: no look yet)
    counted: int = 0                       # runs whose reps are in log_ratios (a later one is unfinished)
    report: str = ""                       # the functions step: its comparison report

    @property
    def verdict(self) -> str:
        return self.decision["verdict"] if self.decision else NOT_YET

    def decided(self) -> Decision | None:
        return Decision(**self.decision) if self.decision else None


@dataclass
class Bisection:
    case: str
    repo: str
    good: str                              # the refs as given
    bad: str
    commits: list[Commit]
    min_change: float                      # fraction (0.02: 2%)
    min_change_why: str
    alpha: float                           # each step's share of the error
    looks: list[int]
    budget_s: float
    size: str = "default"
    paired_windows: int | None = None      # per paired rep (None: the run's default)
    spent_s: float = 0.0
    steps: list[Step] = field(default_factory=list)
    # the culprit's parent against the culprit: the functions whose CPU per operation moved
    functions: list[dict[str, Any]] = field(default_factory=list)
    status: str = RUNNING
    why: str = ""                          # how the search ended, one sentence
    schema: int = SCHEMA

    # ----------------------------------------------------------------- the search
    def bounds(self) -> tuple[int, int | None]:
        """(lo, hi): the newest commit shown the same as good, the oldest shown different
        (None: the bad end is not shown different yet)."""
        lo, hi = 0, None
        for s in self.steps:
            if s.role not in (ENDS, PROBE) or s.base != 0:
                continue
            if s.verdict == DIFFERENT and self._bad_way(s) and (hi is None or s.probe < hi):
                hi = s.probe
            elif s.verdict == SAME and s.probe > lo:
                lo = s.probe
        return lo, hi

    def step_for(self, role: str, base: int, probe: int) -> Step:
        """The step comparing base with probe (made if new): a resumed search finds its own."""
        for s in self.steps:
            if (s.role, s.base, s.probe) == (role, base, probe):
                return s
        self.steps.append(Step(role, base, probe))
        return self.steps[-1]

    def next_step(self) -> Step | None:
        """The comparison to run next, or None when the search is over (status says how)."""
        last = len(self.commits) - 1
        ends = self.step_for(ENDS, 0, last)
        if ends.decision is None or ends.verdict == NOT_YET and not self._exhausted(ends):
            return ends
        if ends.verdict != DIFFERENT:
            return self._end(NO_CULPRIT if ends.verdict == SAME else UNRESOLVED, ends)
        lo, hi = self.bounds()
        assert hi is not None
        if hi - lo > 1:
            probe = self.step_for(PROBE, 0, (lo + hi) // 2)
            if probe.decision is None or not self._exhausted(probe):
                return probe
            return self._end(UNRESOLVED, probe)
        for role, base, p in ((FUNCTIONS, hi - 1, hi), (REST, hi, last)):
            if role == REST and hi == last:
                continue
            s = self.step_for(role, base, p)
            if s.decision is None or s.verdict == NOT_YET and not self._exhausted(s):
                return s
        self.status = CULPRIT
        self.why = f"culprit {self.commits[hi].sha[:12]}: the first commit shown different from the good end"
        return None

    def _bad_way(self, s: Step) -> bool:
        """Does the step's change go the way the bad end's does? A probe that differs from
        the good end the other way is a second change in the range, not the first one's side."""
        ends = next((e for e in self.steps if e.role == ENDS), None)
        if ends is None or ends.decision is None or s.decision is None:
            return True
        return (ends.decision["change"] > 0) == (s.decision["change"] > 0)

    def _exhausted(self, s: Step) -> bool:
        """The step has taken its last look (or its role decides with one run)."""
        if s.role == FUNCTIONS:
            return s.decision is not None
        return s.verdict != NOT_YET or len(s.log_ratios) >= self.looks[-1]

    def _end(self, status: str, step: Step) -> None:
        self.status = status
        d = step.decided()
        said = d.text() if d else "no look"
        if status == NO_CULPRIT:
            self.why = (f"no culprit: the bad end is the same as the good end within ±"
                        f"{self.min_change:.1%} ({said})")
        elif step.role == ENDS:
            self.why = (f"no culprit proven: the ends could not be told apart or shown the same at "
                        f"±{self.min_change:.1%} within {self.looks[-1]} paired reps ({said})")
        elif step.verdict == DIFFERENT:
            self.why = (f"unresolved: {self.commits[step.probe].sha[:12]} differs from the good end the "
                        f"other way from the bad end ({said}): the range holds more than one change; "
                        f"bisect each side of it")
        else:
            lo, hi = self.bounds()
            self.why = (f"unresolved: the culprit is in {self.commits[lo].sha[:12]}.."
                        f"{self.commits[hi or -1].sha[:12]} ({(hi or len(self.commits) - 1) - lo} "
                        f"commits); probe {self.commits[step.probe].sha[:12]} stayed undecided ({said})")
        return None

    def culprit(self) -> Commit | None:
        if self.status != CULPRIT:
            return None
        return self.commits[self.bounds()[1]]

    def probes_left(self) -> int:
        """About how many more steps the search needs (for progress)."""
        lo, hi = self.bounds()
        span = (hi if hi is not None else len(self.commits) - 1) - lo
        return (1 if hi is None else 0) + max(0, span - 1).bit_length() + 2

    # ----------------------------------------------------------------- bisect.json
    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Bisection":
        d = dict(d)
        d["commits"] = [Commit(**c) for c in d["commits"]]
        d["steps"] = [Step(**s) for s in d["steps"]]
        return cls(**d)
