"""Flame graphs with the real inferno on real recorded folded stacks."""
from pathlib import Path

import pytest

from analysis.report.flamegraph import (FlameGraphError, diff_flamegraph_svg, find_inferno,
                                        flamegraph_svg)

DATA = Path(__file__).parent / "data" / "profile"


def test_flamegraph_svg(tmp_path):
    out = flamegraph_svg(DATA / "redis-main.inferno.folded", tmp_path / "f.svg", title="redis main")
    svg = out.read_text()
    assert svg.startswith("<?xml") and "</svg>" in svg
    assert "redis main" in svg
    assert "dictFind" in svg and "lookupKey" in svg


def test_diff_flamegraph_svg(tmp_path):
    out = diff_flamegraph_svg(DATA / "redis-main.inferno.folded", DATA / "redis-io.inferno.folded",
                              tmp_path / "d.svg")
    svg = out.read_text()
    assert "</svg>" in svg and "IOThreadMain" in svg      # shape of the candidate
    # differential titles carry the change in percent for each frame
    assert "%)" in svg and ("+" in svg or "-" in svg)


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
