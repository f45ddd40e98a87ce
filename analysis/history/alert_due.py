"""Which findings a scheduled run alerts (docs/schedule.md, "What a run alerts").

The findings placed at the run itself, as before, and those placed at an earlier run that no
run of the job has alerted yet. E-Divisive places a shift at the run where the series moved
but can only see it runs later, when the alert of that run has gone out without it: alerting
only the findings placed at the newest run left such a shift in `history changes` and never
in an alert (and never bisected).

A finding counts as alerted when a run alerted one of the same series and direction within
MERGE_RUNS runs of it: a shift's place moves by a run as runs arrive, and one shift is one
alert. Each scheduled run keeps what it alerted on its stored run (meta `alerted`), so a
finding marked later, or one another command showed, changes nothing here. Only findings
placed at or after the job's first run that kept its alerts count: a history stored before
runs kept them does not send all of its past at once.
"""
from __future__ import annotations

from analysis.history.changepoints import MERGE_RUNS, ChangePoint, detect
from analysis.history.store import HistoryStore, StoredRun

ALERTED = "alerted"      # stored run meta: [[series, direction, first run id], ...]


def due(store: HistoryStore, job: str, run: StoredRun) -> list[ChangePoint]:
    """The findings `run` alerts: placed at it, or placed earlier and not alerted yet."""
    found = detect(store, job)
    runs = store.runs(job)
    pos = {r.id: i for i, r in enumerate(runs)}
    kept = [r for r in runs if r.id != run.id and ALERTED in (r.meta or {})]
    if not kept:
        return [c for c in found if c.first_run.id == run.id]
    start = pos[kept[0].id]
    sent = [(s, d, pos[f]) for r in kept for s, d, f in r.meta[ALERTED] if f in pos]

    def alerted(c: ChangePoint) -> bool:
        at = pos[c.first_run.id]
        return any(s == c.series and d == c.direction and abs(p - at) <= MERGE_RUNS for s, d, p in sent)

    return [c for c in found if c.first_run.id == run.id
            or (pos[c.first_run.id] >= start and not alerted(c))]


def record(store: HistoryStore, run: StoredRun, alerted: list[ChangePoint]) -> None:
    """Keep on `run` what it alerted (an empty list too: from this run on, late findings
    are alerted)."""
    store.set_meta(run.id, ALERTED, [[c.series, c.direction, c.first_run.id] for c in alerted])
