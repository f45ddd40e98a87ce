"""The one table model (analysis/report/table.py): its Markdown writer, a cell that cannot
leave its cell, columns an experiment inserts as data, and the HTML render of the same
Table (analysis/report/templates/table.j2)."""
from __future__ import annotations

import pytest
from jinja2 import Environment, FileSystemLoader, select_autoescape

from analysis.report.mdtext import esc
from analysis.report.table import Cell, Column, Table, guard, markdown
from analysis.sweep.html import TABLES


def _points() -> Table:
    t = Table([Column("keys", cls="axis"), Column("Change", align="right"), Column("Verdict"),
               Column("Report")], escape=esc)
    t.add([Cell("10K"), Cell("+3.1%"), Cell("improvement", verdict="improvement"),
           Cell("p01", href="p01/report.md")], cls="point", key="p01")
    t.add([Cell("a|b_<c>"), Cell("—"), Cell("no data", cls="why"), Cell("")], cls="point", key="p02")
    return t


def test_markdown_writes_header_delimiter_and_escaped_cells():
    assert markdown(_points()) == [
        "| keys | Change | Verdict | Report |",
        "|---|--:|---|---|",
        "| 10K | +3.1% | ✅ improvement | [p01](p01/report.md) |",
        "| a\\|b\\_&lt;c&gt; | — | no data |  |"]


def test_caption_and_notes_frame_the_table():
    t = Table([Column("a")], caption="Caption:", notes=["A note."])
    t.add(["x"])
    assert markdown(t) == ["Caption:", "", "| a |", "|---|", "| x |", "", "A note."]


@pytest.mark.parametrize("cell, written", [
    ("`a|b`", "`a\\|b`"),              # a pipe in a code span still splits a GFM row
    ("a\\|b", "a\\|b"),                # escaped already: unchanged
    ("a\\\\|b", "a\\\\\\|b"),          # an escaped backslash, then a bare pipe
    ("one\ntwo\r\nthree", "one two three")])
def test_a_markdown_cell_cannot_leave_its_cell(cell, written):
    assert guard(cell) == written


def test_rows_and_inserted_columns_keep_the_shape():
    t = _points()
    with pytest.raises(ValueError, match="3 cells in a table of 4"):
        t.add([Cell("x")] * 3)
    t.insert(-1, [Column("Seed"), Column("Agrees")],
             [[Cell("+1%"), Cell("yes", cls="agree-yes")], [Cell("—"), Cell("")]])
    assert [c.head for c in t.columns] == ["keys", "Change", "Verdict", "Seed", "Agrees", "Report"]
    assert markdown(t)[2] == "| 10K | +3.1% | ✅ improvement | +1% | yes | [p01](p01/report.md) |"
    with pytest.raises(ValueError, match="1 rows of new cells"):
        t.insert(0, [Column("x")], [[Cell("y")]])


def test_a_cell_needs_an_escape_and_markdown_cells_need_none():
    t = Table([Column("a")])
    t.add([Cell("x")])
    with pytest.raises(TypeError, match="escape"):
        markdown(t)


def test_html_renders_the_same_table_autoescaped():
    env = Environment(loader=FileSystemLoader(str(TABLES)), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    page = env.from_string("{% import 'table.j2' as t %}{{ t.render(table, 'sweep-1', 'sweep') }}").render(
        table=_points())
    assert '<table class="sweep" id="sweep-1">' in page
    assert '<th class="axis">keys</th><th style="text-align: right">Change</th>' in page
    assert ('<tr class="point" data-point="p01"><td class="axis">10K</td><td style="text-align: right">'
            '+3.1%</td><td class="verdict v-improvement">improvement</td><td><a href="p01/report.md">p01</a>'
            '</td></tr>') in page
    assert '<td class="axis">a|b_&lt;c&gt;</td>' in page and '<td class="why">no data</td>' in page
