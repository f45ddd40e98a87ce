"""How a long stallscope command ends: its exit status and a one-line message.

`stallscope run`, `sweep` and `experiment` share these rules (README, "exit status"):
a known error (bad case, missing binary, port, plan that does not fit ...) prints
"PROG: error: ..." and exits 2; Ctrl-C / SIGTERM kills every child (servers, load
generators, perf) and exits 130, finished work kept; anything else exits 2 with its type
and message (a traceback adds nothing for the user), unless STALLSCOPE_DEBUG is set.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

from collectors.host import procs


def run_command(prog: str, body: Callable[[], int], known: tuple[type[BaseException], ...],
                interrupted: str) -> int:
    """body()'s exit status, or 2 / 130 with the one-line message. `interrupted` ends the
    sentence "PROG: interrupted ..." (what was kept)."""
    try:
        return body()
    except known as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except procs.Interrupted as e:
        procs.kill_all()
        print(f"{prog}: {e} {interrupted}", file=sys.stderr)
        return 130
    except Exception as e:
        # Loader and plugin errors (CaseError, DatasetError, BuildError, ParcaError ...) carry
        # their own file:line messages.
        if os.environ.get("STALLSCOPE_DEBUG"):
            raise
        print(f"{prog}: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
