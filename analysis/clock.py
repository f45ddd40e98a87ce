"""The one clock format of stallscope's files: UTC to the second, `2026-11-21T23:55:00Z`
(manifests, rep.json, sweep.json, the noise store, build.json, the history database), and
the local `20261121-235500` stamp that run, sweep and experiment ids start with.
Collectors and analysis both write times, so this lives below both (analysis imports no
collector)."""
from __future__ import annotations

from datetime import datetime, timezone

ISO_SECONDS = "%Y-%m-%dT%H:%M:%SZ"
ID_STAMP = "%Y%m%d-%H%M%S"


def now_iso() -> str:
    """Now, in UTC, to the second: 2026-11-21T23:55:00Z."""
    return datetime.now(timezone.utc).strftime(ISO_SECONDS)


def parse_iso(text: str | None) -> datetime | None:
    """A now_iso() string back to a (naive, UTC) datetime; None when it is not one."""
    try:
        return datetime.strptime(text or "", ISO_SECONDS)
    except ValueError:
        return None


def id_stamp() -> str:
    """Local time for a new directory's id: 20261121-235500 (sorts by when it started)."""
    return datetime.now().strftime(ID_STAMP)
