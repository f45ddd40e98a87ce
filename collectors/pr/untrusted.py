"""The PR workflow's artifact is written by a job that ran the pull request's code, so every
byte of it is the PR author's: read it with caps, never through a symbolic link, and post
its Markdown only after neutralising what would act beyond the comment itself.

- `read_capped`: a regular file (no symbolic link: the comment job's environment holds its
  token, /proc/self/environ is a file too), at most `cap` bytes, decoded leniently.
- `neutralise`: report.md as inert GitHub Markdown. Raw HTML: every `<` becomes `&lt;`
  except on the lines report.md folds details with (`<details>`, `</details>`,
  `<summary>TITLE</summary>`, the title escaped too), and a `<details>` without its
  `</details>` (or the reverse) is escaped as well, so no report can fold the rest of the
  comment into itself. @mentions: a zero-width space after every `@` that GitHub would read
  as a mention (also written as `&#64;`, `&#x40;` or `&commat;`), so no user or team is
  notified by a report. Everywhere, code included: deciding "this is code" the way GitHub's
  parser does is what an attacker would aim at, and a `<` shown as `&lt;` in a command is
  the whole cost. A fence still open at the end is closed.
Standard library only (the comment job runs it with nothing installed)."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

KIB, MIB = 1024, 1024 * 1024
ZWSP = "\u200b"           # zero-width space: breaks a mention, shows nothing

_DETAILS_OPEN, _DETAILS_CLOSE = "<details>", "</details>"
_SUMMARY = re.compile(r"<summary>(.*)</summary>")
# GitHub's mention: an @ at the start or after a character that is not a word character,
# then a letter or digit (users, organisations, org/team). Entity forms decode to the same @.
_MENTION = re.compile(r"(?:(?<![A-Za-z0-9_])@|&#0*64;|&#[xX]0*40;|&commat;)(?=[A-Za-z0-9])")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class Unreadable(Exception):
    """A file of the artifact that is not read: a link, not a regular file, over its cap."""


def read_capped(path: Path, cap: int) -> str:
    """The text of regular file `path` (not a symbolic link), at most `cap` bytes; invalid
    UTF-8 and NUL characters become U+FFFD."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        if path.is_symlink():
            raise Unreadable(f"{path}: a symbolic link: not followed") from None
        raise Unreadable(f"{path}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"{path}: not a regular file")
        if st.st_size > cap:
            raise Unreadable(f"{path}: {st.st_size:,} bytes, over the {cap:,} bytes read from an artifact")
        data = f.read(cap + 1)
    if len(data) > cap:                    # grew while being read
        raise Unreadable(f"{path}: over the {cap:,} bytes read from an artifact")
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def inert(text: str) -> str:
    """A line (or a title) with no HTML and no mention."""
    return _MENTION.sub("@" + ZWSP, text.replace("<", "&lt;"))


def fence_marker(line: str) -> str | None:
    """The fence run (``` or ~~~, 3 or more) a line opens or closes a fenced block with."""
    m = _FENCE.match(line)
    return m.group(1) if m else None


def closes(line: str, opened: str) -> bool:
    """Whether `line` closes a fence opened with `opened` (CommonMark: the same character,
    at least as many, nothing after it but spaces)."""
    m = fence_marker(line)
    return bool(m) and m[0] == opened[0] and len(m) >= len(opened) and not line.strip().strip(m[0])


def neutralise(text: str) -> str:
    """`text` (report.md) as inert Markdown (the module's docstring says what changes)."""
    lines = text.split("\n")
    out: list[str] = []
    opened: list[int] = []        # indices in `out` of <details> lines not closed yet
    after_details = False
    for line in lines:
        bare = line.rstrip("\r")
        if bare == _DETAILS_OPEN:
            opened.append(len(out))
            out.append(bare)
        elif bare == _DETAILS_CLOSE and opened:
            opened.pop()
            out.append(bare)
        elif after_details and (m := _SUMMARY.fullmatch(bare)):
            out.append(f"<summary>{inert(m.group(1))}</summary>")
        else:
            out.append(inert(line))
        after_details = bare == _DETAILS_OPEN
    for i in opened:                # never closed: text, not a fold
        out[i] = inert(out[i])
    result = "\n".join(out)
    fence = open_fence(result)
    if fence is None:
        return result
    return result + ("" if result.endswith("\n") else "\n") + fence + "\n"


def open_fence(text: str) -> str | None:
    """The fence run still open at the end of `text` (None when every fence is closed)."""
    opened: str | None = None
    for line in text.split("\n"):
        if opened is None:
            opened = fence_marker(line)
        elif closes(line, opened):
            opened = None
    return opened
