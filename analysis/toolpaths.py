"""Where the external tools are: the one lookup every stage uses.

- `which_tool(name)`: PATH first, then $CARGO_HOME/bin (where `make setup` installs
  inferno); a bare shell (cron, systemd, CI) may not have cargo's bin directory on PATH.
- `perf_binary()`: $PERF when set (a path, or a name looked up like any tool), else
  `perf`. Profiles, TMA and the doctor all run this one, so `PERF=/opt/perf-6.13/perf`
  switches every perf invocation at once.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

PERF_ENV = "PERF"


def cargo_home() -> Path:
    """Where `cargo install` puts binaries and its install ledger ($CARGO_HOME, as
    scripts/setup.sh uses it, else ~/.cargo)."""
    return Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")


def which_tool(name: str) -> str | None:
    """An executable by name or path: PATH, then $CARGO_HOME/bin; None when missing."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name) or shutil.which(name, path=str(cargo_home() / "bin"))


def perf_binary() -> str | None:
    """The perf to run: $PERF if set, else `perf` (None when not installed)."""
    return which_tool(os.environ.get(PERF_ENV) or "perf")
