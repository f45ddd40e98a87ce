"""Markdown cut to a length, never leaving a fenced code block or a `<details>` open.

- `shorten(text, limit)`: report.md's folded `<details>` blocks go first, largest first, then
  the tail; a closing line says what was left out. One pass over the lines finds the blocks,
  one sort orders them, the note's length is kept as a sum, the text is assembled once: work
  linear in the text (plus k log k for k blocks). It was quadratic: every block dropped
  searched the whole text again (4,000 blocks took 26 s; bench/pr_shorten.py, make bench).
- `cut(text, keep)`: the longest run of whole lines, at most `keep` characters, after which
  no fence and no `<details>` is open.
- `Fences`: where fenced code blocks open and close, line by line, as CommonMark says (and
  GitHub reads them): a run of 3 or more ` or ~ after at most 3 spaces; a backtick fence's
  info string holds no backtick (else the line is text); the closing line is a run of the
  same character, at least as long, and nothing after it but spaces and tabs. Lines end at
  "\n" only: collectors/pr/untrusted.neutralise turns "\r\n" and "\r" into "\n" first,
  and Python's splitlines() would also break at characters GitHub does not (U+2028, \x85).
  neutralise uses it too, so the two read fences the same way.
Standard library only (the comment job runs it with nothing installed)."""
from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_CLOSING = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_SUMMARY = re.compile(r"<summary>(.*)</summary>")
_NOTE = ("\n> Shortened to fit a GitHub comment: left out {what}; report.html and results.json "
         "(the PR workflow's artifact) have everything.\n")
END = "the end of the report"
SHOWN = 12          # titles the closing line names; the others are counted
TITLE = 80          # characters of a title it names


@dataclass(frozen=True)
class Block:
    start: int          # offset of its <details> line
    end: int            # offset after its </details> line (newline included)
    title: str


def fence_marker(line: str) -> str | None:
    """The run (``` or ~~~, 3 or more) that `line` opens a fenced code block with, or None."""
    m = _FENCE.fullmatch(line)
    if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return m.group(1)


def closes(line: str, opened: str) -> bool:
    """Whether `line` closes a fence opened with `opened`."""
    m = _CLOSING.fullmatch(line)
    return bool(m) and m.group(1)[0] == opened[0] and len(m.group(1)) >= len(opened)


def lines(text: str) -> list[str]:
    """The lines of `text`, each with its "\n" (the last without one if `text` has none)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


class Fences:
    """Which fence a line-by-line reading is inside."""

    def __init__(self) -> None:
        self.fence: str | None = None

    def read(self, bare: str) -> str:
        """Take one line (without its newline): 'opens' or 'closes' a fence, 'code' inside
        one, or 'out'side every fence."""
        if self.fence is not None:
            if closes(bare, self.fence):
                self.fence = None
                return "closes"
            return "code"
        if (m := fence_marker(bare)) is not None:
            self.fence = m
            return "opens"
        return "out"


def open_fence(text: str) -> str | None:
    """The fence run still open at the end of `text` (None when every fence is closed)."""
    f = Fences()
    for line in text.split("\n"):
        f.read(line)
    return f.fence


class _Shape(Fences):
    """Where a line-by-line reading is: inside which fence, how many <details> deep."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0

    def read(self, bare: str) -> str:
        """Take one line (without its newline); what it was: fence, open, close or text."""
        if super().read(bare) != "out":
            return "fence"
        if bare == "<details>":
            self.depth += 1
            return "open"
        if bare == "</details>" and self.depth:
            self.depth -= 1
            return "close"
        return "text"

    @property
    def closed(self) -> bool:
        return self.fence is None and self.depth == 0


def blocks(text: str) -> list[Block]:
    """The outermost <details> ... </details> blocks of `text`, in order, one pass."""
    out: list[Block] = []
    shape, pos, start, title, after_open = _Shape(), 0, 0, "", False
    for line in lines(text):
        kind = shape.read(line.rstrip("\n"))
        if kind == "open" and shape.depth == 1:
            start, title = pos, ""
        elif after_open and shape.depth == 1 and (m := _SUMMARY.fullmatch(line.rstrip("\n"))):
            title = m.group(1)
        elif kind == "close" and shape.depth == 0:
            out.append(Block(start, pos + len(line), title or "details"))
        after_open = kind == "open"
        pos += len(line)
    return out


def cut(text: str, keep: int) -> str:
    """The longest prefix of whole lines of `text`, at most `keep` characters, that leaves
    no fence and no <details> open (`text` itself when it fits)."""
    if len(text) <= keep:
        return text
    shape, pos, safe = _Shape(), 0, 0
    for line in lines(text):
        if pos + len(line) > keep:
            break
        shape.read(line.rstrip("\n"))
        pos += len(line)
        if shape.closed:
            safe = pos
    return text[:safe]


def note(titles: list[str], end: bool = False) -> str:
    """The closing line: the first SHOWN titles left out (each at most TITLE characters),
    how many more, and whether the end of the report went too. Bounded, whatever a report
    holds (a report of 10,000 folds must not need a 100,000-character closing line)."""
    parts = [t if len(t) <= TITLE else t[:TITLE - 1] + "…" for t in titles[:SHOWN]]
    if len(titles) > SHOWN:
        parts.append(f"{len(titles) - SHOWN:,} more folded sections")
    if end or not titles:
        parts.append(END)
    return _NOTE.format(what=", ".join(parts))


def _title(raw: str) -> str:
    return re.sub(r"<[^>]+>", "", raw) or "details"


def shorten(text: str, limit: int) -> str:
    """report.md cut to `limit` characters: the folded details go first, largest first,
    then the tail; a closing line says what was left out."""
    if len(text) <= limit:
        return text
    found = blocks(text)
    order = sorted(range(len(found)), key=lambda i: (found[i].start - found[i].end, i))
    size = len(text.rstrip("\n")) + 1          # the assembled length, without the note: a sum
    titles: list[str] = []
    drop: set[int] = set()
    for i in order:
        if size + len(note(titles)) <= limit:
            break
        titles.append(_title(found[i].title))
        size -= found[i].end - found[i].start
        drop.add(i)
    kept, pos = [], 0
    for i, b in enumerate(found):
        if i in drop:
            kept.append(text[pos:b.start])
            pos = b.end
    body = "".join(kept) + text[pos:]
    end = len(body.rstrip("\n")) + 1 + len(note(titles)) > limit
    if end:
        body = cut(body, max(0, limit - len(note(titles, True)) - 1))
    out = body.rstrip("\n") + "\n" + note(titles, end)
    return out if len(out) <= limit else cut(text, limit)     # a limit too small for the closing line
