"""The PR workflow's artifact is written by a job that ran the pull request's code, so every
byte of it is the PR author's: read it with caps, never through a symbolic link, and post
its Markdown only after neutralising what would act beyond the comment itself.

- `read_capped`: a regular file (no symbolic link: the comment job's environment holds its
  token, /proc/self/environ is a file too), at most `cap` bytes, decoded leniently.
- `neutralise`: report.md as inert GitHub Markdown. Lines end at "\n", "\r\n" or "\r" (as
  GitHub reads them): the last two become "\n" first. Raw HTML: every `<` becomes `&lt;`
  except on the three tag lines of a fold of exactly report.md's shape, outside fenced code
  (`<details>`, `<summary>TITLE</summary>` with the title escaped, a blank line, the body, a
  blank line, `</details>`, with blank lines around it: `_folds`), so that GitHub reads
  each tag line as an HTML block ending at its blank line, swallowing no line. Anything
  else, a fold whose closing line is code, one never closed, its summary line too, is
  escaped text: no report can fold or hide the rest of the comment. Fences are read by
  collectors/pr/fitting.Fences (what fitting cuts by, too); a line that opens or closes
  one is moved to the margin, where no list item or quote can hold it (GitHub would end
  such a fence with its container, where a line-by-line reading would not), and a fence
  still open at the end is closed. Every line, and every title, goes through `inert`.
- `inert`: a line that links, shows, alerts, notifies and references nothing (the rules
  below, from the GitHub Flavored Markdown spec and GitHub's "Autolinked references and
  URLs"; tests/test_pr_neutralise.py renders the result with cmark-gfm, GitHub's parser):
  - entity references: `&` of any but `&amp;` `&lt;` `&gt;` `&quot;` `&nbsp;` becomes
    `&amp;`, so no reference decodes to a character the rules below look for (`&#64;`,
    `&commat;` for @, `&#91;` for [, `&#x202E;`, `&colon;`): it shows as written;
  - raw HTML: `<` as `&lt;`;
  - links, images, footnotes, reference definitions, task lists and alerts all start at a
    `[` that is not backslash-escaped: every such `[` is escaped (`\\[`), and a `[!` gets a
    zero-width space between its two characters (`> [!CAUTION]` is no alert, however
    GitHub finds them);
  - URLs that GitHub links by themselves (GFM's extended autolinks: `https://`, `http://`,
    `www.`, e-mail addresses) and `<...>` autolinks: a zero-width space after the scheme's
    `:` and after `www` (the `<` is text already; an e-mail address has an `@`, below);
  - @mentions: a zero-width space after every `@`, whatever is around it (GitHub's own
    rules for what starts a mention, after emphasis or an entity, are what an attacker
    would aim at);
  - references: a zero-width space between `#` or `GH-` and a digit (`#12`,
    `owner/repo#12`, `GH-12`), and in every run of 7 or more hex digits after each 6 (a
    commit SHA, `owner/repo@SHA`);
  - bidi controls (U+061C, U+200E/F, U+202A-E, U+2066-9), which reorder what a reader
    sees: shown as `[U+202E]`.
  Everywhere, code included: deciding "this is code" the way GitHub's parser does is what
  an attacker would aim at, and a `<` shown as `&lt;` (or a `\\[`) in a command is the
  whole cost. A repository's own custom autolinks (Settings → Autolink references, e.g.
  `JIRA-12`) are its maintainers' choice and are not broken.
Standard library only (the comment job runs it with nothing installed)."""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from analysis.errors import UserError
from collectors.pr.fitting import Fences

KIB, MIB = 1024, 1024 * 1024
ZWSP = "\u200b"           # zero-width space: breaks a mention, shows nothing

_DETAILS_OPEN, _DETAILS_CLOSE = "<details>", "</details>"
_SUMMARY = re.compile(r"<summary>(.*)</summary>")
# Entity references as CommonMark decodes them (HTML5's names, numeric ones); the few that
# decode to nothing inert's rules look for stay references.
_ENTITY = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|([A-Za-z][A-Za-z0-9]{0,31}));")
KEPT_ENTITIES = frozenset({"amp", "lt", "gt", "quot", "nbsp"})
_BRACKET = re.compile(r"(\\*)\[")                  # a [ and the backslashes before it
_REFERENCE = re.compile(r"(#|GH-)(?=[0-9])", re.IGNORECASE)
_WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)
_HEX = re.compile(r"[0-9a-fA-F]{7,}")
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Unreadable(UserError):
    """A file of the artifact that is not read: a link, not a regular file, over its cap."""


class TooLarge(Unreadable):
    """A file of the artifact over the bytes it may have."""


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
            raise TooLarge(f"{path}: {st.st_size:,} bytes, over the {cap:,} bytes read from an artifact")
        data = f.read(cap + 1)
    if len(data) > cap:                    # grew while being read
        raise TooLarge(f"{path}: over the {cap:,} bytes read from an artifact")
    return data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def _entity(m: re.Match) -> str:
    """A reference shown as written (`&amp;...`), unless it is one of KEPT_ENTITIES."""
    return m.group(0) if m.group(1) in KEPT_ENTITIES else "&amp;" + m.group(0)[1:]


def _bracket(m: re.Match) -> str:
    """A [ after an odd number of backslashes is escaped already (literal text); else one
    more backslash makes it so."""
    return m.group(0) if len(m.group(1)) % 2 else m.group(1) + "\\["


def _hex(m: re.Match) -> str:
    run = m.group(0)
    return ZWSP.join(run[i:i + 6] for i in range(0, len(run), 6))


def inert(text: str) -> str:
    """A line (or a title) that links, shows, alerts, notifies and references nothing (the
    module's docstring lists the rules)."""
    text = BIDI.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", text)
    text = _ENTITY.sub(_entity, text).replace("<", "&lt;")
    text = _BRACKET.sub(_bracket, text).replace("[!", "[" + ZWSP + "!")
    text = text.replace("@", "@" + ZWSP).replace("://", ":" + ZWSP + "//")
    text = _WWW.sub(lambda m: m.group(1) + ZWSP, _REFERENCE.sub(lambda m: m.group(1) + ZWSP, text))
    return _HEX.sub(_hex, text)


def _folds(lines: list[str], out: list[bool]) -> set[int]:
    """The indices of the <details>, <summary> and </details> lines of the folds kept:
    exactly report.md's shape (markdown_details.details), outside fences (`out`), with a
    blank line (or the start, the end) around it, so that GitHub reads each tag line as an
    HTML block of its own that ends at that blank line and swallows nothing:

        (blank) <details> / <summary>TITLE</summary> / (blank) ... (blank) / </details> (blank)

    The first </details> outside fences after the opening lines closes it; the fold is kept
    if that line has its blank lines around it. One pass (the next closing line of each
    line is known), not a search per <details>."""
    n = len(lines)
    closing = [n] * (n + 1)          # closing[i]: the first </details> line outside fences at or after i
    for i in range(n - 1, -1, -1):
        closing[i] = i if out[i] and lines[i] == _DETAILS_CLOSE else closing[i + 1]
    keep: set[int] = set()
    i = 0
    while i + 3 < n:
        j = closing[i + 3]
        if (lines[i] == _DETAILS_OPEN and out[i] and (i == 0 or lines[i - 1] == "")
                and _SUMMARY.fullmatch(lines[i + 1]) and lines[i + 2] == ""
                and j < n and lines[j - 1] == "" and (j + 1 == n or lines[j + 1] == "")):
            keep.update((i, i + 1, j))
            i = j + 1
        else:
            i += 1
    return keep


def neutralise(text: str) -> str:
    """`text` (report.md) as inert Markdown (the module's docstring says what changes)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fences = Fences()
    kinds = [fences.read(line) for line in lines]
    keep = _folds(lines, [k == "out" for k in kinds])
    result = []
    for i, (line, kind) in enumerate(zip(lines, kinds)):
        if i in keep:
            m = _SUMMARY.fullmatch(line)
            result.append(f"<summary>{inert(m.group(1))}</summary>" if m else line)
        elif kind in ("opens", "closes"):
            result.append(inert(line.lstrip(" ")))       # at the margin: no list item holds it
        else:
            result.append(inert(line))
    joined = "\n".join(result)
    if fences.fence is None:
        return joined
    return joined + ("" if joined.endswith("\n") else "\n") + fences.fence + "\n"
