"""One table model for the reports, and its Markdown writer.

A Table is its columns (a header, an alignment, an HTML class), rows of cells, and an
optional caption and notes. Every Markdown table of the reports (report.md, the sweep's and
the experiment's report.md, the TMA funnel, the history alert, the PR comment's case table)
is written by `markdown()`; where report.html shows the same table (the sweep table, the
hosts table), its template renders the same Table (analysis/report/templates/table.j2), so
the two cannot drift and an experiment adds its columns as data (`Table.insert`).

Cells come in two kinds, one per kind of table:
- `Cell`: plain text, escaped by each renderer (`Table.escape` here, Jinja's autoescaping
  in HTML) unless it is `literal` (our own numbers, which Markdown gets as they are), with an
  optional link, note, tooltip and the verdict it states (the mark in Markdown, the colour in
  HTML). Tables that HTML also renders hold only these.
- `str`: a cell its Markdown-only table already wrote as Markdown (escaped names, code spans,
  verdict marks), for tables whose `escape` is None; written as it is, but guarded.

Why a writer of our own rather than tabulate's "github" format: the PR comment job imports
this module with the standard library only (`python3 -S`, nothing installed;
tests/test_pr_workflow.py checks what it loads); tabulate pads every cell to its column's
width, which would change every byte of the reports and spend the comment's 65,536
characters on spaces; and its cells are Markdown that it would not guard, where an
unescaped `|` (inside a code span too) still splits a GFM cell.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Union

from analysis.report.mdtext import verdict

ALIGN = {"": "---", "left": ":--", "right": "--:", "center": ":-:"}
_PIPE = re.compile(r"(\\*)\|")


@dataclass(frozen=True)
class Column:
    head: str
    align: str = ""          # a key of ALIGN; "": the renderer's default
    cls: str = ""            # the HTML class of its header and cells ("axis": names)


@dataclass(frozen=True)
class Cell:
    text: str
    cls: str = ""            # the HTML class ("why", "agree-yes"), beside the column's
    href: str = ""           # a link around the text
    verdict: str = ""        # the verdict the text states (stats.VERDICTS)
    note: str = ""           # a quieter part after the text: "(CV 1.2%, n=5)"
    title: str = ""          # HTML: what hovering the cell shows (a verdict's reason)
    # text stallscope composed from its own numbers (a share, an interval): Markdown gets it
    # as it is, where text from the run is escaped; guarded either way
    literal: bool = False


CellLike = Union[Cell, str]


@dataclass
class Row:
    cells: list[CellLike]
    cls: str = ""            # HTML: the row's class ("point")
    key: str = ""            # HTML: its data-point (what a test or a script finds it by)


@dataclass
class Table:
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    caption: str = ""        # Markdown: the line above the table
    notes: list[str] = field(default_factory=list)   # Markdown: lines under it
    # how plain text becomes Markdown (mdtext.esc); None: the cells are Markdown already
    escape: Callable[[str], str] | None = None

    def add(self, cells: list[CellLike], cls: str = "", key: str = "") -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.columns)} columns")
        self.rows.append(Row(list(cells), cls, key))

    def insert(self, at: int, columns: list[Column], cells: list[list[CellLike]]) -> None:
        """Columns added before column `at` (negative: from the end), `cells[i]` the new
        cells of row i: how an experiment puts the seed's numbers beside a sweep's rows."""
        if len(cells) != len(self.rows):
            raise ValueError(f"{len(cells)} rows of new cells for a table of {len(self.rows)} rows")
        at = len(self.columns) + at if at < 0 else at
        self.columns[at:at] = columns
        for row, new in zip(self.rows, cells):
            row.cells[at:at] = new


def guard(md: str) -> str:
    """Markdown that cannot leave its cell: one line, and every `|` escaped (GFM splits a row
    at an unescaped `|` even inside a code span, where `\\|` shows as `|`)."""
    one = md.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return _PIPE.sub(lambda m: m.group(0) if len(m.group(1)) % 2 else m.group(1) + "\\|", one)


def _md_cell(c: CellLike, escape: Callable[[str], str] | None) -> str:
    if isinstance(c, str):
        return c
    if escape is None:
        raise TypeError("a Cell in a table without an escape: give Table.escape")
    if c.verdict:
        return verdict(c.verdict, c.text)
    text, note = (c.text, c.note) if c.literal else (escape(c.text), escape(c.note))
    text += f" {note}" if note else ""
    return f"[{text}]({c.href})" if c.href else text


def markdown(t: Table) -> list[str]:
    """The table as GitHub-flavoured Markdown lines: the caption and a blank line, the
    header, the delimiter row, the rows, then the notes after a blank line."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(guard(c) for c in cells) + " |"
    head = [c.head if t.escape is None else t.escape(c.head) for c in t.columns]
    out = [t.caption, ""] if t.caption else []
    out += [line(head), "|" + "".join(ALIGN[c.align] + "|" for c in t.columns)]
    out += [line([_md_cell(c, t.escape) for c in r.cells]) for r in t.rows]
    return out + ([""] + t.notes if t.notes else [])


def md_table(heads: list[str], rows: Iterable[list[str]]) -> list[str]:
    """The lines of a Markdown-only table whose header and cells are Markdown already."""
    t = Table([Column(h) for h in heads])
    for r in rows:
        t.add(r)
    return markdown(t)
