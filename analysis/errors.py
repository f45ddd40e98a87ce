"""The one base of every error a stallscope command can end with, and its exit status.

    1  FAILED: it ran, but something it ran failed (a build, the server, the load
       generator, perf, a Parca or GitHub call)
    2  BAD_INPUT: something the user can fix before running again (a file, a flag, a
       value, a missing tool or permission); the message names it and how to fix it

Each error class derives from `UserError` (2) or `Failed` (1), so the same error ends
every command with the same status (analysis/command_end.py reads `status` off the
exception; no command keeps its own list). `hint`, when given, is printed on a line of its
own after the message: what to do next. docs/errors.md lists the statuses and the classes.
"""
from __future__ import annotations

DONE, FAILED, BAD_INPUT, INTERRUPTED = 0, 1, 2, 130


class StallscopeError(Exception):
    """Base of every error the library raises for a command to report."""

    status: int = BAD_INPUT
    hint: str = ""

    def __init__(self, *args: object, hint: str = "") -> None:
        super().__init__(*args)
        if hint:
            self.hint = hint


class UserError(StallscopeError):
    """Bad input: a file, flag, value, tool or permission to fix; exit status 2."""

    status = BAD_INPUT


class Failed(StallscopeError):
    """The command ran but something it ran failed; exit status 1."""

    status = FAILED
