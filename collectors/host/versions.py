"""Tool versions for the manifest ("tools", the host's compiler) and the doctor: every
version probe of stallscope is here. A version that cannot be read is None, never a guess.
"""
from __future__ import annotations

import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from analysis.toolpaths import cargo_home, perf_binary, which_tool
from collectors.host import procs

NUMBER = r"\d+\.\d+(?:\.\d+)*"


@dataclass(frozen=True)
class VersionOutput:
    """What a tool printed when asked for its version."""
    text: str = ""                  # stdout + stderr
    returncode: int | None = None
    error: str | None = None        # why it could not run: missing, not executable, hung


def version_output(argv: list[str], timeout_s: float = 20) -> VersionOutput:
    """The one way a version is asked for: argv run through procs (tracked, killed with
    the run), never raising; `error` says why when the tool could not run."""
    try:
        r = procs.run_capture(argv, timeout_s=timeout_s)
    except procs.ToolNotFound as e:
        return VersionOutput(error=str(e))
    except subprocess.TimeoutExpired:
        return VersionOutput(error=f"{argv[0]}: no answer within {timeout_s:g} s")
    except OSError as e:
        return VersionOutput(error=f"{argv[0]}: {e.strerror or e}")
    return VersionOutput(r.stdout + r.stderr, r.returncode)


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """The first version number in text, as a tuple to compare: 'perf version 6.1.187' ->
    (6, 1, 187), 'v=8.0.6' -> (8, 0, 6); at most three parts; None when there is none."""
    m = re.search(r"\d+(?:\.\d+)*", text or "")
    return tuple(int(x) for x in m.group(0).split(".")[:3]) if m else None


def _output(argv: list[str], timeout_s: float = 20) -> str | None:
    """stdout + stderr of a short version query; None when the tool cannot run."""
    out = version_output(argv, timeout_s)
    return None if out.error else out.text


def version_number(argv: list[str], pattern: str = NUMBER) -> str | None:
    """The first match of `pattern` (its last group, if it has groups) in the output of argv,
    e.g. version_number(["make", "--version"]) -> "4.3"."""
    text = _output(argv)
    m = re.search(pattern, text or "")
    return m.group(m.lastindex or 0) if m else None


def perf_version(perf: str | None = None) -> tuple[int, ...] | None:
    """(6, 1, 187) from `perf version`; None when perf is missing or says no version."""
    perf = perf or perf_binary()
    return version_tuple(_output([perf, "version"], timeout_s=10)) if perf else None


def version_line(binary: str) -> str | None:
    """The first line `binary --version` prints, as the tool words it."""
    lines = (_output([binary, "--version"], timeout_s=10) or "").strip().splitlines()
    return lines[0] if lines else None


def compiler() -> str | None:
    """'gcc 12.2.0' / 'clang 16.0.6' for the cc a build would use."""
    for cc in ("cc", "gcc", "clang"):
        text = _output([cc, "--version"], timeout_s=10)
        if text is None:
            continue
        first = (text.splitlines() or [""])[0]
        m = re.search(r"(gcc|clang)[^\d]*(\d+\.\d+(?:\.\d+)?)", first, re.I) or \
            re.search(r"\((Debian|Ubuntu)[^)]*\)\s*(\d+\.\d+(?:\.\d+)?)", first)
        if m:
            name = m.group(1).lower()
            return f"{'gcc' if name in ('debian', 'ubuntu') else name} {m.group(2)}"
        return first or None
    return None


def inferno_version() -> str | None:
    """inferno's tools have no --version; cargo records what it installed."""
    for f in (cargo_home() / ".crates.toml", cargo_home() / ".crates2.json"):
        try:
            text = Path(f).read_text()
        except OSError:
            continue
        m = re.search(r'"inferno (\d+\.\d+\.\d+)', text)
        if m:
            return m.group(1)
    return None


def tool_versions(benchmark_bins: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """perf, inferno, python, memtier and each variant's load generator (name -> path)."""
    perf_v = perf_version()
    out: dict[str, str | None] = {"python": platform.python_version(),
                           "perf": ".".join(map(str, perf_v)) if perf_v else None}
    out["inferno"] = inferno_version() if which_tool("inferno-collapse-perf") else None
    memtier = which_tool("memtier_benchmark")
    out["memtier_benchmark"] = version_number([memtier, "--version"]) if memtier else None
    for name, path in (benchmark_bins or {}).items():
        out[f"benchmark[{name}]"] = version_number([path, "--version"]) if path else None
    out["python_executable"] = sys.executable
    return out
