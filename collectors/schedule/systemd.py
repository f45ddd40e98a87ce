"""`stallscope schedule install`: a systemd service + timer for a single box. The timer is
the tick (every few minutes, Persistent so a missed tick runs after boot); the schedule
file's cron expressions decide what is due, so one pair of units serves every job."""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Units:
    service: str
    timer: str


def render(name: str, schedule: Path, workdir: Path, exe: str, history: str | None,
           every: str, user: str | None) -> Units:
    cmd = [exe, "schedule", "run", str(schedule), "--once"]
    if history:
        cmd += ["--history", history]
    service = [
        "[Unit]",
        f"Description=stallscope scheduled profiling ({schedule.name})",
        "Documentation=https://github.com/stallscope/stallscope/blob/main/docs/schedule.md",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=oneshot",
        f"WorkingDirectory={workdir}",
        f"ExecStart={' '.join(shlex.quote(c) for c in cmd)}",
        # The runner owns its children (own process group): stop them all with the unit.
        "KillMode=control-group",
        "TimeoutStopSec=60",
        "Nice=0",
    ]
    if user:
        service.append(f"User={user}")
    timer = [
        "[Unit]",
        f"Description=tick for {name}.service (the schedule file's cron decides what is due)",
        "",
        "[Timer]",
        f"OnCalendar={every}",
        "Persistent=true",
        f"Unit={name}.service",
        "",
        "[Install]",
        "WantedBy=timers.target",
    ]
    return Units("\n".join(service) + "\n", "\n".join(timer) + "\n")


def write(units: Units, name: str, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.service", out_dir / f"{name}.timer"]
    paths[0].write_text(units.service)
    paths[1].write_text(units.timer)
    return paths
