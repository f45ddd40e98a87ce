"""How every stallscope command ends: its exit status and one line on stderr.

    0    done
    1    it ran, but something it ran failed (a build, a Parca query, a point of a sweep)
    2    bad input: "PROG: error: ..." naming the file, flag or value to fix; also any
         unexpected error, as "PROG: error: TYPE: message" (a traceback adds nothing for
         the user; STALLSCOPE_DEBUG=1 shows it)
    130  Ctrl-C (or SIGTERM for the collecting commands): "PROG: interrupted ...", with
         what was kept

The status of an error is its own (analysis/errors.py: every error class derives from
UserError, 2, or Failed, 1), so the same error ends every command the same way and no
command keeps a list of its own. PROG is the full command, e.g. "stallscope compare".
Analysis commands end through `end_command` here; the collecting ones through
collectors/command.py, which adds killing every child process (analysis never imports
collectors). docs/errors.md lists the statuses and which error has which.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

from analysis.errors import BAD_INPUT, DONE, FAILED, INTERRUPTED, Failed, StallscopeError, UserError

__all__ = ["DONE", "FAILED", "BAD_INPUT", "INTERRUPTED", "Failed", "UserError", "end_command"]


def _say(prog: str, message: str, hint: str = "") -> None:
    print(f"{prog}: error: {message}", file=sys.stderr)
    if hint:
        print(f"{prog}: hint: {hint}", file=sys.stderr)


def end_command(prog: str, body: Callable[[], int | None], interrupted: str = "",
                interrupts: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
                on_interrupt: Callable[[], None] | None = None) -> int:
    """body()'s exit status, or the one-line message and its status. `interrupted` ends
    the sentence "PROG: interrupted ..." (what was kept); `interrupts`/`on_interrupt`:
    what counts as Ctrl-C and what to clean up first."""
    try:
        return int(body() or 0)
    except StallscopeError as e:
        _say(prog, str(e), e.hint)
        return e.status
    except interrupts as e:
        if on_interrupt is not None:
            on_interrupt()
        said = str(e) or "interrupted"
        print(f"{prog}: {said}{' ' + interrupted if interrupted else ''}", file=sys.stderr)
        return INTERRUPTED
    except ValueError as e:
        # A value the standard library refused (a number, a date, a spec) while reading
        # the user's input: bad input, and the message names the value.
        if os.environ.get("STALLSCOPE_DEBUG"):
            raise
        _say(prog, str(e))
        return BAD_INPUT
    except Exception as e:
        if os.environ.get("STALLSCOPE_DEBUG"):
            raise
        _say(prog, f"{type(e).__name__}: {e}")
        return BAD_INPUT
