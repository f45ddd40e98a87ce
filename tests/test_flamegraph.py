"""Flame graphs with the real inferno on real recorded folded stacks.

The SVGs are checked against what their input implies: every frame's weight (inferno
writes it exactly, fg:w) and share against the folded file, and in the differential graph
the direction of named frames against the change of their self weight between the two
files. Each check is shown failing once on a wrong SVG.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis.report.flamegraph import (FlameGraphError, diff_flamegraph_svg, find_inferno,
                                        flamegraph_svg)

DATA = Path(__file__).parent / "data" / "profile"
MAIN = DATA / "redis-main.inferno.folded"     # one thread does everything
IO = DATA / "redis-io.inferno.folded"         # the same load with an io-thread
NAMED = ("redis-server", "processCommand", "lookupKey", "dictFind")

_FRAME = re.compile(
    r'<g><title>(?P<name>.*?) \((?P<n>[\d,]+) samples, (?P<pct>[\d.]+)%(?:; (?P<d>[+-]?[\d.]+)%)?\)'
    r'</title><rect [^>]*fill="rgb\((?P<r>\d+),(?P<g>\d+),(?P<b>\d+)\)"[^>]* fg:w="(?P<w>\d+)"')


def frames(svg: str) -> list[dict]:
    """Each drawn frame: name, weight (fg:w), printed count and %, differential % and fill."""
    out = []
    for m in _FRAME.finditer(svg):
        out.append({"name": m["name"], "w": int(m["w"]), "n": int(m["n"].replace(",", "")),
                    "pct": float(m["pct"]), "delta": float(m["d"]) if m["d"] else None,
                    "rgb": (int(m["r"]), int(m["g"]), int(m["b"]))})
    return out


def folded(path: Path) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for line in path.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        key = tuple(stack.split(";"))
        out[key] = out.get(key, 0.0) + float(count)
    return out


def check_flamegraph(svg: str, src: Path, names=NAMED) -> None:
    """The root holds every sample of the file; each named function's frames hold the
    weight of the stacks it is on (once per occurrence), with the share printed."""
    stacks = folded(src)
    total = sum(stacks.values())
    fr = frames(svg)
    root = [f for f in fr if f["name"] == "all"]
    assert len(root) == 1 and root[0]["w"] == root[0]["n"] == total, root
    for name in names:
        want = sum(w * s.count(name) for s, w in stacks.items())
        mine = [f for f in fr if f["name"] == name]
        assert want > 0 and sum(f["w"] for f in mine) == want, name
        for f in mine:
            assert f["n"] == f["w"] and f["pct"] == pytest.approx(100 * f["w"] / total, abs=0.006)


def self_change(base: Path, cand: Path) -> dict[str, float]:
    """Change of each function's self weight, in % of the candidate's samples, over the
    stacks drawn in the candidate's shape (inferno-diff-folded --normalize: base scaled to
    the candidate's total)."""
    b, c = folded(base), folded(cand)
    scale, total = sum(c.values()) / sum(b.values()), sum(c.values())
    out: dict[str, float] = {}
    for s, w in c.items():
        out[s[-1]] = out.get(s[-1], 0.0) + 100 * (w - b.get(s, 0.0) * scale) / total
    return out


def check_diff(svg: str, base: Path, cand: Path, grew: tuple[str, ...], shrank: tuple[str, ...]
               ) -> None:
    """Named frames move the way the files say: the summed differential % of their frames
    matches the change of their self weight, and they are red when they grew, blue when
    they shrank."""
    want = self_change(base, cand)
    fr = frames(svg)
    for name, up in [(n, True) for n in grew] + [(n, False) for n in shrank]:
        assert (want[name] > 1.0) if up else (want[name] < -1.0), (name, want[name])
        mine = [f for f in fr if f["name"] == name]
        assert mine and all(f["delta"] is not None for f in mine), f"{name}: no differential frame"
        assert sum(f["delta"] for f in mine) == pytest.approx(want[name], abs=0.5), name
        r, g, b = max(mine, key=lambda f: abs(f["delta"]))["rgb"]
        assert (r > b) if up else (b > r), (name, (r, g, b))


def test_flamegraph_svg(tmp_path):
    out = flamegraph_svg(MAIN, tmp_path / "f.svg", title="redis main")
    svg = out.read_text()
    assert svg.startswith("<?xml") and "</svg>" in svg and "redis main" in svg
    check_flamegraph(svg, MAIN)


def test_diff_flamegraph_svg(tmp_path):
    svg = diff_flamegraph_svg(MAIN, IO, tmp_path / "d.svg").read_text()
    # the shape is the candidate's: its io-thread and the main thread's busy-wait for it
    # grew, the main thread's own key lookups shrank (they moved to the io-thread's time)
    check_diff(svg, MAIN, IO, grew=("IOThreadMain", "handleClientsWithPendingWritesUsingThreads"),
               shrank=("dictFind",))
    check_flamegraph(svg, IO, names=("IOThreadMain", "dictFind"))


def test_the_checks_fail_on_a_wrong_svg(tmp_path):
    """Each check can fail: the graph of another file, a differential graph of the swapped
    pair, one with every direction flipped, a plain graph where a differential one belongs,
    and an SVG that the old check (any "%)" and any sign) accepted."""
    other = flamegraph_svg(IO, tmp_path / "io.svg").read_text()
    with pytest.raises(AssertionError):
        check_flamegraph(other, MAIN)
    swapped = diff_flamegraph_svg(IO, MAIN, tmp_path / "swapped.svg").read_text()
    with pytest.raises(AssertionError):
        check_diff(swapped, MAIN, IO, grew=("IOThreadMain",), shrank=("dictFind",))
    right = diff_flamegraph_svg(MAIN, IO, tmp_path / "d.svg").read_text()
    flipped = re.sub(r"; ([+-])", lambda m: "; " + ("-" if m[1] == "+" else "+"), right)
    with pytest.raises(AssertionError):
        check_diff(flipped, MAIN, IO, grew=("IOThreadMain",), shrank=("dictFind",))
    with pytest.raises(AssertionError):
        check_diff(other, MAIN, IO, grew=("IOThreadMain",), shrank=())
    junk = '<svg><g><title>all (1 samples, 100%; +1.00%)</title></g></svg>'
    assert "%)" in junk and "+" in junk                   # what the old test asked for
    with pytest.raises(AssertionError):
        check_flamegraph(junk, MAIN)
    with pytest.raises(AssertionError):
        check_diff(junk, MAIN, IO, grew=("IOThreadMain",), shrank=())


def test_errors(tmp_path, monkeypatch):
    empty = tmp_path / "e.folded"
    empty.write_text("")
    with pytest.raises(FlameGraphError, match="empty folded-stacks file"):
        flamegraph_svg(empty, tmp_path / "x.svg")
    with pytest.raises(FlameGraphError, match="no such folded-stacks file"):
        flamegraph_svg(tmp_path / "missing", tmp_path / "x.svg")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(FlameGraphError, match="inferno-flamegraph not found.*make setup"):
        find_inferno("inferno-flamegraph")
