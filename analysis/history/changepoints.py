"""Regressions in a job's history, found by three signals (docs/history.md, "Regressions"):

- "change point": E-Divisive means (signal-processing-algorithms, MongoDB's detector;
  permutation test at p < 0.05) over every series of the candidate's values across runs:
  where a series shifted, not whether one run crossed a line (a TMA node's series only if
  the job's TMA series, judged together, call it shifted: tma_series.py);
- "paired": the run's own paired change (paired_signal.py): a one-sided test of each run
  against its reference, and, over the runs that share one baseline build, E-Divisive over
  the series of their in-run changes (every run compares with the same build, so that
  series is as steady as the pairs, not as the absolute level);
- "in-run": the run's own regression verdict on a series without pairs (throughput, p99
  latency): the verdicts results.json already carries;
- "function": a rise of one function's cost across runs (function_series.py: every focus
  and top function's series of the job tested together, Holm). Within a run
  of a throughput regression it is a mover of it; else a finding of its own, `ahead` of
  the throughput. An E-Divisive finding of the throughput within PLACE_RUNS runs of it (or
  the likelihood interval of its place) is placed at the function's run.

Against a pinned baseline a paired test's finding stands only if the runs after it hold
the shift (paired_signal.confirmed; provisional while fewer than 2 follow), E-Divisive's
cuts of the in-run changes are placed where one mean shift is most likely and kept only if
that shift holds (paired_signal.refine), and E-Divisive on the paired series' level speaks
only beside a paired finding. Functions' cost series are not given to E-Divisive one by
one (at p < 0.05 each, 50 of them would give a false finding in most jobs).

Findings of one series in the same direction within MERGE_RUNS runs of each other are one
shift: one finding, placed where the most exact signal put it (a paired test knows the
run, E-Divisive's place is uncertain by a run), that names every signal that found it.

Each finding carries the shift with its interval, the commit range, and the movers: the
other series (functions' CPU per operation, TMA nodes, throughput) whose values moved at
the same point - the answer to "what caused it".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


from analysis import stats
from analysis.history import function_series, paired_signal, tma_series
from analysis.history.edivisive import MIN_RUNS, change_indices
from analysis.history.store import HistoryStore, StoredRun

MOVER_MIN = 0.03       # a mover's interval excludes 0 and its shift is at least this (3%)
MERGE_RUNS = 1         # findings this close (in runs) are one shift
PLACE_RUNS = 3         # an E-Divisive finding this close to a function's rise moves to it
HEADLINE = ("throughput:", "paired:", "cpu_per_op:", "cum_per_op:", "tma:", "p99 latency:")
IN_RUN = ("throughput:", "p99 latency:")      # series whose in-run verdict is a signal
THROUGHPUT = ("paired:", "throughput:")
# Which finding places a merged one: the paired test knows its run and commit range.
PRIORITY = {"paired test": 0, "in-run": 1, "paired change point": 2, "change point": 3, "function": 4}


@dataclass(frozen=True)
class Mover:
    series: str
    shift: float                 # ratio - 1 after vs before (or cand vs base in-run)
    low: float | None
    high: float | None
    verdict: str


@dataclass
class ChangePoint:
    job: str
    series: str
    signal: str                  # "change point" | "paired" | "in-run"
    first_run: StoredRun         # the first run after the shift (in-run: the run itself)
    last_before: StoredRun | None   # None: the shift is the run's change vs its own baseline
    shift: float | None
    shift_low: float | None
    shift_high: float | None
    direction: str               # regression | improvement
    unit: str = ""
    movers: list[Mover] = field(default_factory=list)
    how: str = ""                # the rule that found it, in words
    p_value: float | None = None     # the paired test's one-sided p-value
    also: list["ChangePoint"] = field(default_factory=list)   # other signals' findings of it
    mark: str | None = None
    note: str = ""
    id: int | None = None
    ahead: str = ""              # a function's rise the throughput has not shown (yet): how far ahead
    places: frozenset[int] = frozenset()   # run ids where the shift may be (95% likelihood interval)

    @property
    def signals(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([self.signal, *(a.signal for a in self.also)]))

    @property
    def kind(self) -> str:
        """What the store keeps: the signals that found it, joined by '+'."""
        return "+".join(self.signals)

    @property
    def commit_range(self) -> tuple[str, str]:
        if self.last_before is None:
            return (self.first_run.commit("base"), self.first_run.commit("cand"))
        return (self.last_before.commit("cand"), self.first_run.commit("cand"))


def _shift(before: list[float], after: list[float], hib: bool) -> tuple[float | None, float | None, float | None, str]:
    ch = stats.compare(before, after, higher_is_better=hib, noise=MOVER_MIN)
    return ch.rel, ch.rel_ci_low, ch.rel_ci_high, ch.verdict


def _movers(series: dict, name: str, split_run: int, lo: int, hi: int) -> list[Mover]:
    """Other series whose values moved between runs [lo, split) and [split, hi)."""
    out = []
    for other, pts in series.items():
        if other == name or not other.startswith(HEADLINE):
            continue
        ids = [r.id for r, _ in pts]
        if split_run not in ids:
            continue
        k = ids.index(split_run)
        before = [p["value"] for r, p in pts[:k] if r.id >= lo]
        after = [p["value"] for r, p in pts[k:] if r.id < hi]
        if len(before) < 2 or len(after) < 2:
            continue
        rel, low, high, verdict = _shift(before, after, pts[0][1]["higher_is_better"])
        if rel is not None and low is not None and (low > 0 or high < 0) and abs(rel) >= MOVER_MIN:
            out.append(Mover(other, rel, low, high, verdict))
    return sorted(out, key=lambda m: -abs(m.shift))[:8]


def _cuts(job: str, name: str, pts: list, values: list[float], hib: bool, signal: str,
          how: str, series: dict, refine: bool = False) -> list[ChangePoint]:
    """E-Divisive's change points of one sequence of values (one per run of pts), each with
    its shift (runs after vs before, up to the neighbouring change points) and movers.
    refine: each placed where one shift of the mean between its neighbours is most likely
    (E-Divisive's energy statistic places a small shift a run or two off as often as not),
    and kept only if that shift holds (paired_signal.refine)."""
    cuts = change_indices(values)
    bounds = [0] + cuts + [len(values)]
    places: dict[int, list[int]] = {}
    if refine:
        places = paired_signal.refine([math.log(v) for v in values], cuts)
        cuts = list(places)
        bounds = [0] + cuts + [len(values)]
    found = []
    for j, i in enumerate(cuts):
        rel, low, high, _ = _shift(values[bounds[j]:i], values[i:bounds[j + 2]], hib)
        if rel is None:
            continue
        first, prev = pts[i][0], pts[i - 1][0]
        hi_id = pts[bounds[j + 2] - 1][0].id + 1
        found.append(ChangePoint(job, name, signal, first, prev, rel, low, high,
                                 "regression" if (rel < 0) == hib else "improvement",
                                 pts[0][1]["unit"], _movers(series, name, first.id, pts[bounds[j]][0].id, hi_id),
                                 how, places=frozenset(pts[k][0].id for k in places.get(i, []))))
    return found


def _in_run_movers(store: HistoryStore, run: StoredRun) -> list[Mover]:
    """The run's own decided changes of functions' CPU per operation and TMA nodes, and the
    functions it calls new in the candidate or gone (extract.one_sided)."""
    movers = [Mover(c["series"], c["rel"], c["rel_low"], c["rel_high"], c["verdict"])
              for c in store.changes(run.id)
              if (c["series"].startswith(("cpu_per_op:", "cum_per_op:", "tma:"))
                  and c["verdict"] in ("regression", "improvement")
                  or c["series"].startswith(("new:", "gone:"))) and c["rel"] is not None]
    return sorted(movers, key=lambda m: -abs(m.shift))[:8]


def in_run(store: HistoryStore, run: StoredRun) -> list[ChangePoint]:
    """The run's own regression verdicts on series without pairs (candidate vs baseline in
    the same run), with the focus functions' in-run CPU-per-operation moves as movers."""
    movers = _in_run_movers(store, run)
    return [ChangePoint(run.job, c["series"], "in-run", run, None, c["rel"], c["rel_low"], c["rel_high"],
                        "regression", movers=movers, how="the run's regression verdict vs its baseline")
            for c in store.changes(run.id)
            if c["verdict"] == "regression" and c["series"].startswith(IN_RUN)]


def _stretches(ratios: list) -> list[tuple[int, int]]:
    """[start, end) of each run of at least MIN_RUNS runs in a row against one known
    baseline build (a pinned or last-good baseline)."""
    out, start = [], 0
    for k in range(1, len(ratios) + 1):
        if k < len(ratios) and ratios[k].run.commit("base") == ratios[start].run.commit("base"):
            continue
        if k - start >= MIN_RUNS and ratios[start].run.commit("base"):
            out.append((start, k))
        start = k
    return out


def _confirm(t, ratios: list, k: int, stretches: list, cut_at: set[int], hib: bool) -> str | None:
    """How a pinned-baseline paired test at ratios[k] stands with the runs after it
    (paired_signal.confirmed, between the neighbouring change points of its stretch):
    the words to add to its `how`, or None to drop it. A test against the run's own
    baseline is kept as it is, but for the first run of a stretch (the runs after must
    hold its change from 0); outside a stretch, there is nothing to hold it against."""
    lo, hi = next(((a, b) for a, b in stretches if a <= k < b), (None, len(ratios)))
    if t.reference is None and lo != k:
        return ""
    if lo is None:
        return "; provisional: fewer than 2 runs after it" if hi - k - 1 < 2 else ""
    lo = max([c for c in cut_at if c < k - MERGE_RUNS] + [lo])
    hi = min([c for c in cut_at if c > k + MERGE_RUNS] + [hi])
    ok = paired_signal.confirmed(ratios, k, lo, hi, hib)
    if ok is None:
        return "; provisional: fewer than 2 runs after it"
    return f"; held by the {hi - k - 1} runs after it" if ok else None


def _paired_tests(store: HistoryStore, job: str, name: str, ratios: list, hib: bool, unit: str,
                  stretches: list, cut_at: set[int]) -> list[ChangePoint]:
    """Each run whose paired test says regression (against a pinned baseline: and the runs
    after it hold the shift, between neighbouring cuts and tests), with what moved with it."""
    found = []
    index = {r.run.id: k for k, r in enumerate(ratios)}
    tests = paired_signal.regressions(ratios, hib)
    for t in tests:
        held = _confirm(t, ratios, index[t.run.id], stretches, cut_at | {index[u.run.id] for u in tests}, hib)
        if held is None:
            continue
        # with the previous run's candidate as baseline, both ranges are the same commits
        prev = t.previous
        before = t.reference or (prev if prev and prev.commit("cand") == t.run.commit("base") else None)
        movers = _in_run_movers(store, t.run)
        if t.reference is not None:       # a pinned baseline: what moved at this run, not before
            old = {(m.series, m.verdict) for m in _in_run_movers(store, t.reference)}
            movers = [m for m in movers if (m.series, m.verdict) not in old]
        ref = "its baseline" if t.reference is None else "the run before it (same baseline)"
        found.append(ChangePoint(job, name, "paired", t.run, before, t.shift, t.low, t.high, "regression",
                                 unit, movers, f"paired test vs {ref}, one-sided p = {t.p_value:.2g}{held}",
                                 t.p_value))
    return found


def _paired_cuts(job: str, name: str, ratios: list, hib: bool, unit: str, series: dict,
                 stretches: list) -> list[ChangePoint]:
    """E-Divisive over the in-run changes of every stretch of runs against one baseline."""
    found = []
    for start, end in stretches:
        stretch = ratios[start:end]
        found += _cuts(job, name, [(r.run, {"unit": unit}) for r in stretch],
                       [math.exp(r.mean) for r in stretch], hib, "paired",
                       "E-Divisive over the in-run changes, runs after vs before", series, refine=True)
    return found


def _paired(store: HistoryStore, job: str, name: str, cand: list, base: list, series: dict
            ) -> tuple[list[ChangePoint], set[int]]:
    """The paired signal on one paired series (paired_signal.py): E-Divisive over the
    in-run changes against one baseline build, and each run's test; and the ids of the
    runs those stretches cover."""
    ratios = paired_signal.run_ratios(cand, base)
    if not ratios:
        return [], set()
    hib, unit = bool(cand[0][1]["higher_is_better"]), cand[0][1]["unit"]
    stretches = _stretches(ratios)
    cuts = _paired_cuts(job, name, ratios, hib, unit, series, stretches)
    index = {r.run.id: k for k, r in enumerate(ratios)}
    tests = _paired_tests(store, job, name, ratios, hib, unit, stretches, {index[c.first_run.id] for c in cuts})
    return tests + cuts, {r.run.id for a, b in stretches for r in ratios[a:b]}


def _rank(c: ChangePoint) -> int:
    if c.signal == "paired":
        return PRIORITY["paired test" if c.p_value is not None else "paired change point"]
    return PRIORITY[c.signal]


def merge(found: list[ChangePoint], positions: dict[int, int]) -> list[ChangePoint]:
    """One finding per shift: findings of a series in the same direction within MERGE_RUNS
    runs (positions: run id -> index among the job's runs) join the most exact one."""
    out: list[ChangePoint] = []
    for c in sorted(found, key=lambda c: (_rank(c), positions[c.first_run.id])):
        home = next((m for m in out if m.series == c.series and m.direction == c.direction
                     and abs(positions[m.first_run.id] - positions[c.first_run.id]) <= MERGE_RUNS), None)
        if home is None:
            out.append(c)
            continue
        home.also.append(c)
        have = {m.series for m in home.movers}
        home.movers = sorted(home.movers + [m for m in c.movers if m.series not in have],
                             key=lambda m: -abs(m.shift))[:8]
    return sorted(out, key=lambda c: (positions[c.first_run.id], c.series))


def _is_function(name: str) -> bool:
    return name.startswith(("cpu_per_op:", "cum_per_op:")) and name not in ("cpu_per_op:all", "cum_per_op:all")


def _function_finding(job: str, f, m: int, series: dict) -> ChangePoint:
    first, prev = f.runs[f.at], f.runs[f.at - 1]
    name = f"cpu_per_op:{f.function}"
    shift, low, high = f.shift, f.low, f.high
    if shift is None:                 # no cost per operation stored: the share's change
        shift, low, high = f.share_after / f.share_before - 1, None, None
    hi = f.runs[-1].id + 1
    return ChangePoint(job, name, "function", first, prev, shift, low, high, "regression", "ns/op",
                       _movers(series, name, first.id, f.runs[0].id, hi),
                       f"its share of the CPU {f.share_before:.2g}% -> {f.share_after:.2g}%: the largest t "
                       f"over the runs' splits, permutation p = {f.p_value:.2g}, Holm over "
                       f"{m} function series (level {f.level:.2g})", f.p_value)


def _functions(job: str, series: dict, found: list[ChangePoint], positions: dict[int, int]) -> list[ChangePoint]:
    """The function series' rises (function_series.py): one within MERGE_RUNS of a
    throughput regression is a mover of it (what moved at that point, now by a test of
    its own); any other is a finding, `ahead` saying that the throughput has not shown it
    there (a function holding a small share moves the throughput by share x growth)."""
    shifts, m = function_series.detect(series)
    tput = [c for c in found if c.series.startswith(THROUGHPUT) and c.direction == "regression"]
    out = []
    for f in shifts:
        c = _function_finding(job, f, m, series)
        at = positions[c.first_run.id]
        for t in tput:
            # E-Divisive's place for a small shift is uncertain by a few runs (or within the
            # likelihood interval of a cut of the in-run changes); the rise of the function that
            # caused it is several times its size against its own noise: the sharper place
            off = abs(positions[t.first_run.id] - at)
            if t.p_value is None and t.signal != "in-run" and 0 < off and (
                    off <= PLACE_RUNS or c.first_run.id in t.places):
                t.how += f"; placed where {c.series} rose (E-Divisive: run {t.first_run.run_id})"
                t.first_run, t.last_before = c.first_run, c.last_before
        home = min(tput, key=lambda t: abs(positions[t.first_run.id] - at), default=None)
        if home is not None and abs(positions[home.first_run.id] - at) <= MERGE_RUNS:
            home.movers = sorted([mv for mv in home.movers if mv.series != c.series]
                                 + [Mover(c.series, c.shift, c.shift_low, c.shift_high, "function series")],
                                 key=lambda mv: -abs(mv.shift))[:8]
            continue
        later = sorted(((positions[t.first_run.id], t) for t in tput if positions[t.first_run.id] > at),
                       key=lambda pt: pt[0])
        implied = f"; it implies about {100 * f.implied:+.1f}% throughput" if f.implied is not None else ""
        c.ahead = ("ahead of throughput: no throughput finding" if not later else
                   f"ahead of throughput by {later[0][0] - at} runs "
                   f"(its finding at run {later[0][1].first_run.run_id})") + implied
        out.append(c)
    return out


def detect(store: HistoryStore, job: str, series_prefix: tuple[str, ...] = HEADLINE,
           functions: bool = True) -> list[ChangePoint]:
    """Every finding of the job (each signal's, merged per shift), stored with their movers
    and the marks made earlier attached again. functions: test the function series too
    (function_series.py; they are not tested one by one at p < 0.05 as other series are)."""
    series, base = store.series(job, "cand"), store.series(job, "base")
    runs = store.runs(job)
    positions = {r.id: i for i, r in enumerate(runs)}
    found = [c for run in runs for c in in_run(store, run) if c.series.startswith(series_prefix)]
    # TMA nodes are one family: only those it calls shifted (of the series asked for)
    tma = tma_series.shifted({n: p for n, p in series.items() if n.startswith(series_prefix)})
    for name, pts in sorted(series.items()):
        if not name.startswith(series_prefix) or _is_function(name) or (
                name.startswith(tma_series.PREFIX) and name not in tma):
            continue
        cuts = _cuts(job, name, pts, [p["value"] for _, p in pts], bool(pts[0][1]["higher_is_better"]),
                     "change point", "the candidate's values, runs after vs before", series)
        if name.startswith("paired:"):
            paired, covered = _paired(store, job, name, pts, base.get(name, []), series)
            # where the in-run changes against one baseline cover a run, they are the
            # sharper test of the same question (a run's change has sd ~1%, its level
            # ~6%): the level's change point stands there only beside one of theirs
            cuts = [c for c in cuts if c.first_run.id not in covered or any(
                abs(positions[p.first_run.id] - positions[c.first_run.id]) <= MERGE_RUNS for p in paired)]
            found += paired
        found += cuts
    if functions:
        found += _functions(job, series, found, positions)
    merged = merge(found, positions)
    marks = store.marks(job)
    for c in merged:
        c.mark, c.note = marks.get((c.series, c.first_run.id), (None, ""))
    store.save_change_points(job, merged)
    return merged


def at_run(store: HistoryStore, job: str, run: StoredRun) -> list[ChangePoint]:
    """The findings whose shift is placed at `run` (detected over the job's whole stored
    history); a scheduled run alerts these and the earlier ones not alerted yet (alert_due)."""
    return [c for c in detect(store, job) if c.first_run.id == run.id]
