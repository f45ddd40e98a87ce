"""A bisection's state and its search: which commit to probe next, and what the probes so far
prove. Pure data and logic (no builds, no runs): collectors/bisect/driver.py runs the steps
this module asks for, and bisect.json (the bisection's directory) holds this state between
steps, so an interrupted bisection resumes where it stopped.

The range is first-parent, oldest first: commits[0] is the good end, commits[-1] the bad
end. Every step compares one commit (the probe) with the good end. The search keeps
lo (the newest commit shown the *same* as good; 0 at the start) and hi (the oldest shown
*different*): first the ends (is there a change at all?), then the middle of (lo, hi) until
they are neighbours, and commits[hi] is the culprit. Given a commit to probe first (`hint`:
a scheduled job's history places the change after the run before it), that commit is the
first probe; shown different, the search goes back from it in doubling steps (hint - 1,
hint - 3, hint - 7, ...) until a probe is the same, then halves what is left. A step that stays
"not yet" after its last look ends the search: the culprit lies in (lo, hi] and the report
says so, with both ends' intervals. Once lo and hi are neighbours the culprit is proven, and
two more comparisons make the report: the culprit's parent against the culprit (its first run
profiled: the functions that moved; and it must differ from its parent the way the range
went, or the search ends unresolved: a change smaller than the minimum, or one spread over
commits, passes the midpoint of the step rule at a commit of chance) and the culprit against
the bad end (does the culprit explain the whole range, or is a second change in the rest,
unresolved). A budget spent after the proof leaves the culprit standing, unconfirmed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from analysis.bisect import rule
from analysis.bisect.rule import DIFFERENT, NOT_YET, SAME, Decision

SCHEMA = 1
ENDS, PROBE, FUNCTIONS, REST = "ends", "probe", "functions", "rest"
FUNCTION_REPS = 6        # the functions step: its first run, profiled, of this many paired reps
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
    hint: int | None = None                # the commit to probe first (an index into commits)

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
            probe = self.step_for(PROBE, 0, self._pick(lo, hi))
            if probe.decision is None or not self._exhausted(probe):
                return probe
            return self._end(UNRESOLVED, probe)
        for role, base, p in ((FUNCTIONS, hi - 1, hi), (REST, hi, last)):
            if role == REST and hi == last:
                continue
            s = self.step_for(role, base, p)
            if s.decision is None or s.verdict == NOT_YET and not self._exhausted(s):
                return s
            if role == FUNCTIONS and (s.verdict == SAME or s.verdict == DIFFERENT and not self._bad_way(s)):
                return self._end(UNRESOLVED, s)
        self.status = CULPRIT
        self.why = f"culprit {self.commits[hi].sha[:12]}: the first commit shown different from the good end"
        return None

    def _pick(self, lo: int, hi: int) -> int:
        """The next probe in (lo, hi): the hint first; after the hint differed, back from it
        in doubling steps while the probes differ; else the middle."""
        h = self.hint
        if h is None or not 0 < h < len(self.commits) - 1:
            return (lo + hi) // 2
        if lo < h < hi:
            return h
        if self._verdict_at(h) != DIFFERENT:
            return (lo + hi) // 2
        j = 1
        while (p := h - (2 ** j - 1)) > lo:
            if self._verdict_at(p) != DIFFERENT:
                return p          # not probed yet, or undecided / the other way: it ends the search
            j += 1
        return (lo + hi) // 2

    def _verdict_at(self, probe: int) -> str | None:
        """The probe's verdict against the good end (None: not probed; 'other way': different
        the other way from the bad end)."""
        s = next((s for s in self.steps if s.role == PROBE and s.probe == probe and s.base == 0), None)
        if s is None or s.decision is None:
            return None
        return "other way" if s.verdict == DIFFERENT and not self._bad_way(s) else s.verdict

    def decide(self, s: Step) -> Decision:
        """The step's decision on its units so far (rule.decide): the spread pooled with the
        other steps'; a probe and the culprit against its parent test the bad end's direction."""
        others = [o.log_ratios for o in self.steps if o is not s]
        side = None
        ends = next((e for e in self.steps if e.role == ENDS), None)
        if s.role in (PROBE, FUNCTIONS) and ends is not None and ends.decision is not None:
            side = 1 if ends.decision["change"] > 0 else -1
        return rule.decide(s.log_ratios, self.min_change, self.alpha, self.looks, rule.pooled(others), side)

    def proven(self) -> bool:
        """The culprit is proven (the steps after it only add to the report)."""
        ends = next((e for e in self.steps if e.role == ENDS), None)
        if ends is None or ends.verdict != DIFFERENT:
            return False
        lo, hi = self.bounds()
        return hi is not None and hi - lo == 1

    def out_of_budget(self, spent_s: float) -> None:
        """The budget is spent before the next look: a proven culprit stands (the report's
        comparisons after it are cut short, and said), anything else is unresolved."""
        if self.proven():
            hi = self.bounds()[1]
            fn = next((s for s in self.steps if s.role == FUNCTIONS), None)
            checked = ("differs from its parent too; the rest of the range was not compared" if fn is not None
                       and fn.verdict == DIFFERENT else "not confirmed against its parent")
            self.status = CULPRIT
            self.why = (f"culprit {self.commits[hi].sha[:12]}: the first commit shown different from the "
                        f"good end, {checked} (the budget, {spent_s / 60:.0f} of {self.budget_s / 60:.0f} "
                        "min, was spent)")
        else:
            self.status, self.why = UNRESOLVED, (
                f"budget spent ({spent_s / 60:.0f} of {self.budget_s / 60:.0f} min) before the search "
                "ended; resume with a larger --budget")

    def _bad_way(self, s: Step) -> bool:
        """Does the step's change go the way the bad end's does? A probe that differs from
        the good end the other way is a second change in the range, not the first one's side."""
        ends = next((e for e in self.steps if e.role == ENDS), None)
        if ends is None or ends.decision is None or s.decision is None:
            return True
        return (ends.decision["change"] > 0) == (s.decision["change"] > 0)

    def _exhausted(self, s: Step) -> bool:
        """The step has decided or taken its last look."""
        return s.verdict != NOT_YET or len(s.log_ratios) >= self.looks[-1]

    def _end(self, status: str, step: Step) -> None:
        self.status = status
        d = step.decided()
        said = d.text() if d else "no look"
        if status == NO_CULPRIT:
            self.why = (f"no culprit: the bad end is the same as the good end within ±"
                        f"{self.min_change:.1%} ({said})")
        elif step.role == FUNCTIONS:
            self.why = (f"unresolved: {self.commits[step.probe].sha[:12]} is the first commit shown different "
                        f"from the good end, but not from its parent ({said}): the range's change is smaller "
                        f"than ±{self.min_change:.1%} or spread over several commits; a smaller --min-change "
                        "places it")
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
