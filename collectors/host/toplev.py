"""Where toplev (pmu-tools) is, and which pmu-tools release it comes from.

Looked for in this order:

1. `$TOPLEV` (a path, or a name looked up on PATH). When it is set it is the only
   candidate: a wrong path is reported as not found, never silently replaced.
2. `toplev` or `toplev.py` on PATH (a checkout put there, a distribution's package).
3. The pmu-tools `make setup` installs into the venv (requirements.txt pins it). Its wheel
   puts toplev.py at the top of site-packages, not on PATH, so it is found through the
   package's metadata in this Python, else in the checkout's `.venv` (a command run by
   another Python, e.g. `python3 -m commands doctor`), and run with that venv's Python.

The version is pmu-tools' own (`2026.7.24.0`): the installed package's metadata, a
`pmu_tools-*.dist-info` beside the file (a wheel in another venv), or the `pyproject.toml`
of a checkout. toplev itself has no version option that works offline (its `--version`
first loads the CPU's event list, which it downloads).
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from analysis.errors import Failed
from collectors.host import procs

TOPLEV_ENV = "TOPLEV"
DIST = "pmu_tools"
REPO = Path(__file__).resolve().parents[2]


def _command(path: str, python: str | None = None) -> list[str]:
    """How to run a toplev file: as is when executable, else with a Python (a checkout's
    toplev.py may lack the exec bit); the installed one always with its venv's Python."""
    if python is None and os.access(path, os.X_OK):
        return [path]
    return [python or shutil.which("python3") or sys.executable, path]


def _dist_toplev() -> Path | None:
    """toplev.py of the pmu-tools installed in the Python running this code."""
    try:
        dist = importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("toplev.py")))
    return path if path.is_file() else None


def _venv_toplev(venv: Path = REPO / ".venv") -> tuple[Path, Path] | None:
    """(toplev.py, python) of the pmu-tools in the checkout's venv, for a command that runs
    under another Python."""
    python = venv / "bin" / "python"
    for path in sorted(venv.glob("lib/python3*/site-packages/toplev.py")):
        if python.exists() and any(path.parent.glob(f"{DIST}-*.dist-info")):
            return path, python
    return None


def installed_toplev() -> list[str] | None:
    """The command of the pmu-tools toplev `make setup` installed, or None."""
    here = _dist_toplev()
    if here is not None:
        return [sys.executable, str(here)]
    found = _venv_toplev()
    return [str(found[1]), str(found[0])] if found else None


def find_toplev(*, installed: bool = True) -> list[str] | None:
    """toplev's command prefix: $TOPLEV, else toplev / toplev.py on PATH, else (installed=True)
    the pmu-tools in the venv; None when there is none."""
    want = os.environ.get(TOPLEV_ENV)
    for name in ([want] if want else ["toplev", "toplev.py"]):
        path = shutil.which(name) or (name if os.path.isfile(name) else None)
        if path:
            return _command(path)
    if want or not installed:
        return None
    return installed_toplev()


def missing() -> str:
    """Why no toplev was found: a $TOPLEV that names nothing, or none anywhere."""
    want = os.environ.get(TOPLEV_ENV)
    if want:
        return f"toplev not found: $TOPLEV={want} is no file and no command on PATH"
    return "toplev not found (no $TOPLEV, not on PATH, pmu-tools not installed in the venv)"


def _metadata_version(folder: Path) -> str | None:
    for meta in sorted(folder.glob(f"{DIST}-*.dist-info/METADATA")):
        m = re.search(r"^Version:\s*(\S+)", meta.read_text(errors="replace"), re.M)
        if m:
            return m.group(1)
    return None


def _pyproject_version(folder: Path) -> str | None:
    """A pmu-tools checkout's release: the `version` of its pyproject.toml's [project]."""
    import tomllib
    try:
        doc = tomllib.loads((folder / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    project = doc.get("project", {})
    return str(project["version"]) if project.get("name") in (DIST, "pmu-tools") \
        and "version" in project else None


def toplev_version(command: list[str]) -> str | None:
    """The pmu-tools release of a toplev command (its last word is the toplev file), or
    None when nothing beside the file says it."""
    path = Path(command[-1]).resolve()
    here = _dist_toplev()
    if here is not None and here.resolve() == path:
        return importlib.metadata.version(DIST)
    return _metadata_version(path.parent) or _pyproject_version(path.parent)


def describe(command: list[str]) -> str:
    """`toplev (pmu-tools 2026.7.24.0) at <command>` for doctor and the preflight."""
    version = toplev_version(command)
    what = f"toplev (pmu-tools {version})" if version else "toplev (version unknown)"
    return f"{what} at {' '.join(command)}"


class ToplevError(Failed):
    """toplev could not list its model's nodes; the message quotes its last words."""


def listing(command: list[str], cpu_key: str, *what: str, timeout_s: float = 60) -> dict[str, str]:
    """What toplev's model for a CPU key (`spr`, `icx` ...) lists, node -> description, in
    toplev's order: `--list-nodes -l6` (every node) or `--describe PREFIX` (full texts).
    This is what toplev can do with no PMU and no network: it is given an empty event list
    ($EVENTMAP and $UNCORE name a file holding `[]`), so it neither downloads the CPU's list
    nor needs this CPU's events (the nodes do not depend on them), and a HOME of its own
    (its download cache)."""
    with tempfile.TemporaryDirectory(prefix="stallscope-toplev-") as d:
        empty = Path(d) / "no-events.json"
        empty.write_text("[]\n")
        env = dict(os.environ, EVENTMAP=str(empty), UNCORE=str(empty), HOME=d)
        argv = [*command, "--force-cpu", cpu_key, *(what or ("--list-nodes", "-l6"))]
        try:
            p = procs.run_capture(argv, timeout_s=timeout_s, env=env)
        except (OSError, subprocess.TimeoutExpired, procs.ToolNotFound) as e:
            raise ToplevError(f"`{' '.join(argv)}` could not run: {e}") from None
    nodes: dict[str, list[str]] = {}
    for line in p.stdout.splitlines():
        if line.strip() and line[0].isspace() and nodes:      # a description line
            nodes[next(reversed(nodes))].append(line.strip())
        elif line.strip() and line.strip() != "Nodes:":
            nodes[line.strip()] = []
    if p.returncode != 0 or not nodes:
        last = next((l.strip() for l in reversed((p.stderr + p.stdout).splitlines()) if l.strip()),
                    f"exit code {p.returncode}")
        raise ToplevError(f"`{' '.join(argv)}` listed no nodes (exit code {p.returncode}): {last}")
    return {name: " ".join(desc) for name, desc in nodes.items()}
