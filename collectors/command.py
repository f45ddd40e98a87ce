"""How a collecting stallscope command ends: analysis/command_end.py's rules (0 done,
1 ran but something failed, 2 bad input with "PROG: error: ...", 130 interrupted; the
status is the error's own), plus what only a collector has to do: SIGINT/SIGTERM
(procs.Interrupted) and Ctrl-C kill every child (servers, load generators, perf) before
the one line, finished work kept.
"""
from __future__ import annotations

from typing import Callable

from analysis.command_end import end_command
from collectors.host import procs


def run_command(prog: str, body: Callable[[], int | None], interrupted: str = "") -> int:
    """body()'s exit status, or 1 / 2 / 130 with the one-line message. `interrupted` ends
    the sentence "PROG: interrupted ..." (what was kept)."""
    try:
        return end_command(prog, body, interrupted,
                           interrupts=(procs.Interrupted, KeyboardInterrupt), on_interrupt=procs.kill_all)
    finally:
        procs.restore_signal_handlers()
