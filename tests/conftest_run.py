"""Helpers shared by the run-pipeline tests: the real Redis builds, running the CLI as a
subprocess, and finding processes that belong to a run (to prove cleanup)."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO

BASE_SPEC = "debsrc:redis@8.0"
CAND_SPEC = "debsrc:redis@8.0+patch=cases/patches/mset-bucket-prefetch.patch"


@functools.lru_cache(maxsize=None)
def built(name: str, spec: str):
    """build_variant from the build cache (the first call in a fresh cache builds: minutes)."""
    from collectors.variants.builder import build_variant
    from collectors.variants.spec import parse_variant
    cwd = os.getcwd()
    os.chdir(REPO)  # patch paths in specs are relative to the repository
    try:
        return build_variant(parse_variant(f"{name}={spec}"), log=lambda m: print(m, file=sys.stderr))
    finally:
        os.chdir(cwd)


def base_variant():
    return built("base", BASE_SPEC)


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env["PATH"] = f"{Path.home() / '.cargo' / 'bin'}:{env.get('PATH', '')}"
    return env


def start_cli(args: list[str], log: Path) -> subprocess.Popen:
    """`python -m collectors run ARGS` in its own process group (so a test can signal it)."""
    f = open(log, "wb")
    return subprocess.Popen([sys.executable, "-m", "collectors", "run", "--no-progress", *args],
                            cwd=REPO, env=cli_env(), stdout=f, stderr=subprocess.STDOUT,
                            start_new_session=True)


def proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, starttime, cmdline) for every process now."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue  # a zombie is dead already (waiting to be reaped)
        out[int(d.name)] = (int(fields[1]), fields[19], cmd)
    return out


def descendants(pid: int) -> dict[int, tuple[str, str]]:
    """Every living descendant of pid: pid -> (starttime, cmdline)."""
    table = proc_table()
    found, frontier = {}, {pid}
    while frontier:
        nxt = set()
        for p, (ppid, st, cmd) in table.items():
            if ppid in frontier and p not in found:
                found[p] = (st, cmd)
                nxt.add(p)
        frontier = nxt
    return found


def still_alive(snapshot: dict[int, tuple[str, str]]) -> list[str]:
    """Which of a descendants() snapshot still run (same pid AND same start time)."""
    table = proc_table()
    return [f"{p}: {cmd}" for p, (st, cmd) in snapshot.items()
            if p in table and table[p][1] == st]


def mentioning(marker: str) -> list[str]:
    """Processes whose command line mentions marker (servers: --dir/--logfile; perf: -o)."""
    me = os.getpid()
    return [f"{p}: {cmd}" for p, (_, _, cmd) in proc_table().items()
            if marker in cmd and p != me and "pytest" not in cmd]


def wait_for(pred, timeout_s: float, what: str, poll_s: float = 0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
