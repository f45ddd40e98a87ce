"""How every stallscope command ends: its exit status and one line on stderr.

    0    done
    1    it ran, but something it ran failed (a build, a Parca query, a point of a sweep)
    2    bad input: "PROG: error: ..." naming the file, flag or value to fix; also any
         unexpected error, as "PROG: error: TYPE: message" (a traceback adds nothing for
         the user; STALLSCOPE_DEBUG=1 shows it)
    130  Ctrl-C (or SIGTERM for the collecting commands): "PROG: interrupted ...", with
         what was kept

PROG is the full command, e.g. "stallscope compare". Analysis commands end through
`end_command` here; the collecting ones through collectors/command.py, which adds killing
every child process (analysis never imports collectors).
"""
from __future__ import annotations

import os
import sys
from typing import Callable

DONE, FAILED, USER_ERROR, INTERRUPTED = 0, 1, 2, 130


class UserError(Exception):
    """Bad input a command found itself (beside argparse's): exit 2 with this message."""


class Failed(Exception):
    """The command ran but something it ran failed: exit 1 with this message."""


def end_command(prog: str, body: Callable[[], int | None],
                known: tuple[type[BaseException], ...] = (),
                failed: tuple[type[BaseException], ...] = (),
                interrupted: str = "",
                interrupts: tuple[type[BaseException], ...] = (KeyboardInterrupt,),
                on_interrupt: Callable[[], None] | None = None) -> int:
    """body()'s exit status, or the one-line message and its status. `known`: exception
    types that are bad input (2); `failed`: types that mean "ran, but failed" (1);
    `interrupted` ends the sentence "PROG: interrupted ..." (what was kept);
    `interrupts`/`on_interrupt`: what counts as Ctrl-C and what to clean up first."""
    try:
        return int(body() or 0)
    except (Failed, *failed) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return FAILED
    except (UserError, *known) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return USER_ERROR
    except interrupts as e:
        if on_interrupt is not None:
            on_interrupt()
        said = str(e) or "interrupted"
        print(f"{prog}: {said}{' ' + interrupted if interrupted else ''}", file=sys.stderr)
        return INTERRUPTED
    except Exception as e:
        # Loader and plugin errors (CaseError, DatasetError, BuildError ...) carry their own
        # file:line messages; their type says which stage spoke.
        if os.environ.get("STALLSCOPE_DEBUG"):
            raise
        print(f"{prog}: error: {type(e).__name__}: {e}", file=sys.stderr)
        return USER_ERROR
