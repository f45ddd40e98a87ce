"""From the change points at a run to delivered alerts: the Markdown comes from
analysis.history.alert_md (the history side's renderer), the webhook JSON carries the same
facts as data, and every alert of the job is tried (one failing does not stop the others)."""
from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any, Callable

from collectors.schedule.deliver import Delivered, deliver
from collectors.schedule.model import Job, ScheduleError


def payload(job: Job, changes: list[Any], run: Any) -> dict:
    return {"event": "stallscope.change_points", "job": getattr(run, "job", job.name),
            "run_id": getattr(run, "run_id", None), "commits": getattr(run, "commits", {}),
            "report": getattr(run, "report", None) or None,
            "changes": [_plain(c) for c in changes]}


def _plain(change: Any) -> dict:
    d = asdict(change) if is_dataclass(change) else dict(vars(change))
    if hasattr(change, "commit_range"):
        d["commit_range"] = list(change.commit_range)
    first = getattr(change, "first_run", None)
    if first is not None:
        d["first_run"] = {"id": getattr(first, "id", None), "run_id": getattr(first, "run_id", None),
                          "commits": getattr(first, "commits", {})}
    return _jsonable(d)


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def make_deliverer(log: Callable[[str], None]) -> Callable[[Job, list, Any], list[Delivered]]:
    def send(job: Job, changes: list, run: Any) -> list[Delivered]:
        from analysis.history.alert_md import render_alert
        md = render_alert(changes, run, report_url=getattr(run, "report", "") or "")
        out = []
        for alert in job.alerts:
            try:
                d = deliver(alert, md, payload(job, changes, run))
                log(f"schedule: alert delivered ({d.kind}): {d.where}")
                out.append(d)
            except ScheduleError as e:
                log(f"schedule: alert to {alert.kind} {alert.target} failed: {e}")
        return out
    return send
