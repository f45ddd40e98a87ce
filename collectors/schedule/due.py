"""When a job is due: its cron expression's most recent fire time, compared with the time
its last recorded run started (croniter reads the expression; times are UTC)."""
from __future__ import annotations

from datetime import datetime, timezone

from croniter import croniter


def last_fire(cron: str, now: datetime) -> datetime:
    """The latest time at or before `now` the expression fires."""
    it = croniter(cron, now)
    nxt = it.get_next(datetime)
    prev = croniter(cron, nxt).get_prev(datetime)
    # croniter's get_prev from `now` skips `now` itself when it fires exactly then.
    return prev if prev <= now else croniter(cron, now).get_prev(datetime)


def next_fire(cron: str, now: datetime) -> datetime:
    return croniter(cron, now).get_next(datetime)


def is_due(cron: str, last_run: datetime | None, now: datetime | None = None) -> bool:
    """Due when it never ran, or when the expression fired since the last run started."""
    now = now or datetime.now(timezone.utc)
    if last_run is None:
        return True
    if last_run.tzinfo is None:
        last_run = last_run.replace(tzinfo=timezone.utc)
    return last_fire(cron, now) > last_run
