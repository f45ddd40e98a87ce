"""Flame graphs, rendered by inferno: a pure file transformation, nothing is measured.

`flamegraph_svg` runs inferno-flamegraph on a folded file; `diff_flamegraph_svg` runs
inferno-diff-folded (normalised by default, so two profiles with different sample
counts compare by share) piped into inferno-flamegraph. Colours in a differential
graph: red = grew in the candidate, blue = shrank (inferno's convention).
inferno is looked up on PATH, then in ~/.cargo/bin (where `make setup` installs it).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from analysis.errors import Failed
from analysis.toolpaths import cargo_home, which_tool


class FlameGraphError(Failed, RuntimeError):
    """inferno missing or failing; the message says what and how to fix."""


def find_inferno(tool: str) -> str:
    """Path of an inferno binary, or a clear error."""
    found = which_tool(tool)
    if found:
        return found
    raise FlameGraphError(f"{tool} not found on PATH or in {cargo_home() / 'bin'}; install it "
                          "with `make setup` (or `cargo install inferno`)")


def _check_input(p: Path) -> None:
    if not p.is_file():
        raise FlameGraphError(f"{p}: no such folded-stacks file")
    if p.stat().st_size == 0:
        raise FlameGraphError(f"{p}: empty folded-stacks file (no samples were recorded?)")


def _run(cmd: list[str], stdin: bytes | None, what: str) -> bytes:
    r = subprocess.run(cmd, input=stdin, capture_output=True)
    if r.returncode != 0:
        raise FlameGraphError(f"{what}: {' '.join(cmd)} failed (exit {r.returncode}): "
                              f"{r.stderr.decode(errors='replace').strip()[:500]}")
    return r.stdout


def flamegraph_svg(folded_path: str | Path, out_svg: str | Path, title: str = "CPU flame graph",
                   *, colors: str = "hot", count_name: str = "samples",
                   subtitle: str | None = None) -> Path:
    """Render one folded file to an SVG; returns the SVG path."""
    src, out = Path(folded_path), Path(out_svg)
    _check_input(src)
    cmd = [find_inferno("inferno-flamegraph"), "--title", title, "--colors", colors,
           "--countname", count_name]
    if subtitle:
        cmd += ["--subtitle", subtitle]
    cmd.append(str(src))
    out.write_bytes(_run(cmd, None, str(src)))
    return out


def diff_flamegraph_svg(base_folded: str | Path, cand_folded: str | Path, out_svg: str | Path,
                        *, normalize: bool = True, title: str = "Differential flame graph (cand vs base)",
                        count_name: str = "samples") -> Path:
    """Differential flame graph of cand against base (shape = cand; red grew, blue shrank)."""
    base, cand, out = Path(base_folded), Path(cand_folded), Path(out_svg)
    _check_input(base)
    _check_input(cand)
    diff_cmd = [find_inferno("inferno-diff-folded")]
    if normalize:
        diff_cmd.append("--normalize")
    diff_cmd += [str(base), str(cand)]
    diffed = _run(diff_cmd, None, f"{base} vs {cand}")
    fg = [find_inferno("inferno-flamegraph"), "--title", title, "--countname", count_name]
    out.write_bytes(_run(fg, diffed, f"{base} vs {cand}"))
    return out
