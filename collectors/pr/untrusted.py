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
  still open at the end is closed. Every line goes through `inert`, every title through
  `inert_html`.
- `inert`: a line that links, shows, alerts, notifies, references, typesets and hides
  nothing (the rules below, from the GitHub Flavored Markdown spec and GitHub's
  "Autolinked references and URLs", "Writing mathematical expressions" and "Creating
  diagrams"; tests/test_pr_neutralise.py renders the result with cmark-gfm, GitHub's parser):
  - invisible characters: bidi controls (U+061C, U+200E/F, U+202A-E, U+2066-9), which
    reorder what a reader sees, and every other default-ignorable code point or format or
    control character (U+00AD, U+200B-D, U+2060-4, U+FEFF, the tag characters
    U+E0000-E0FFF, variation selectors, Hangul fillers ...: `INVISIBLE`), which hide text:
    shown as `[U+202E]`; only a single U+FE0E/U+FE0F after a visible character (an
    emoji's presentation, "⚠️") stays;
  - entity references: every `&` but that of `&amp;` `&lt;` `&gt;` `&quot;` `&nbsp;`
    (with their `;`: what report.md's writer uses) becomes `&amp;`, so no reference decodes
    to a character the rules below look for (`&#64;`, `&commat;`, `&#x40`, `&#91;`,
    `&#x202E;`, `&colon;`): it shows as written;
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
  - math (`$...$`, `$$...$$`, `` $`...`$ ``): every `$` becomes U+FF04 `＄`, which no math
    delimiter is (a `\\$` is not reliably left alone by GitHub's math, and an entity
    reference decodes to `$` all the same);
  - diagrams and math blocks (```` ```math ````, `mermaid`, `geojson`, `topojson`, `stl`, in
    any case, after any run of 3 or more backticks or tildes, in a quote or list item too):
    an info string whose first word is not one of `PLAIN_INFO` gets `text ` before it, so
    GitHub's language is `text`.
  Everywhere, code included: deciding "this is code" the way GitHub's parser does is what
  an attacker would aim at, and a `<` shown as `&lt;` (or a `\\[`, a `＄`) in a command is
  the whole cost. A repository's own custom autolinks (Settings → Autolink references, e.g.
  `JIRA-12`) are its maintainers' choice and are not broken.
- `inert_html`: text for raw HTML (a fold's `<summary>` title): the same, but every `&`
  becomes `&amp;` (a browser decodes `&#x40` or `&#x202E` without their `;` in HTML,
  where CommonMark would not), `<` and `>` are escaped, and `[` stays (HTML reads no links).
- `clip`: a name, commit or label from the artifact on one line, its invisible characters
  shown, cut to `NAME_CAP` (`COMMIT_CAP`) characters with an ellipsis (`…`) as the last.
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
# The entity references report.md's writer uses (analysis/report/mdtext.esc, the funnel's
# indent); they decode to nothing inert's rules look for, and CommonMark decodes a reference
# once: `&amp;#64;` shows as `&#64;`. Every other `&` is shown as written.
KEPT_ENTITIES = ("amp", "lt", "gt", "quot", "nbsp")
_AMP = re.compile(rf"&(?!(?:{'|'.join(KEPT_ENTITIES)});)")
_BRACKET = re.compile(r"(\\*)\[")                  # a [ and the backslashes before it
_REFERENCE = re.compile(r"(#|GH-)(?=[0-9])", re.IGNORECASE)
_WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)
_HEX = re.compile(r"[0-9a-fA-F]{7,}")
# What shows nothing, or reorders what shows: every Default_Ignorable_Code_Point (Unicode's
# DerivedCoreProperties: soft hyphen, combining grapheme joiner, Hangul and Khmer fillers,
# Mongolian selectors, U+200B-F, the bidi controls, U+2060-206F, variation selectors, U+FEFF,
# U+FFF0-8, shorthand format controls, musical beam controls, the tag characters and the rest
# of U+E0000-E0FFF), every other format character (category Cf: Arabic number signs,
# interlinear annotation, Egyptian hieroglyph format controls) and every control character
# but tab and line feed. tests/test_pr_neutralise.py checks it against unicodedata.
INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f"
    "\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
# an emoji's presentation selector, alone after a visible character ("⚠️"): kept
_PRESENTATION = re.compile(rf"(?<=[^\s{_SELECTORS}])[\ufe0e\ufe0f](?![{_SELECTORS}])")
# a fenced block's info string after any run of 3 or more backticks or tildes, anywhere in a line
_INFO = re.compile(r"(`{3,}(?!`)|~{3,}(?!~))([ \t]*)([^\s`]+)")
PLAIN_INFO = frozenset({"text", "txt", "plaintext", "sh", "bash", "shell", "console", "diff", "json", "yaml", "c"})
DOLLAR = "\uff04"          # ＄ FULLWIDTH DOLLAR SIGN: reads as $, delimits no math
NAME_CAP = 100              # characters of a name or label from the artifact, as shown
COMMIT_CAP = 64             # of a commit (a SHA-256 repository's object names are 64 hex digits)
ELLIPSIS = "\u2026"


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


def _bracket(m: re.Match) -> str:
    """A [ after an odd number of backslashes is escaped already (literal text); else one
    more backslash makes it so."""
    return m.group(0) if len(m.group(1)) % 2 else m.group(1) + "\\["


def _hex(m: re.Match) -> str:
    run = m.group(0)
    return ZWSP.join(run[i:i + 6] for i in range(0, len(run), 6))


def _info(m: re.Match) -> str:
    """A fence's info string as plain text, unless its first word is one of PLAIN_INFO."""
    return m.group(0) if m.group(3).casefold() in PLAIN_INFO else f"{m.group(1)}{m.group(2)}text {m.group(3)}"


def _shown(m: re.Match) -> str:
    kept = _PRESENTATION.match(m.string, m.start())        # its neighbours are looked at
    return m.group(0) if kept else f"[U+{ord(m.group(0)):04X}]"


def visible(text: str) -> str:
    """`text` with each invisible or bidi control character (INVISIBLE) shown as `[U+XXXX]`, but an
    emoji's presentation selector."""
    return INVISIBLE.sub(_shown, text)


def _marks(text: str) -> str:
    """The rules of inert and inert_html after escaping: mentions, autolinks, references,
    SHAs, math."""
    text = text.replace("@", "@" + ZWSP).replace("://", ":" + ZWSP + "//")
    text = _WWW.sub(lambda m: m.group(1) + ZWSP, _REFERENCE.sub(lambda m: m.group(1) + ZWSP, text))
    return _HEX.sub(_hex, text).replace("$", DOLLAR)


def inert(text: str) -> str:
    """A line (or a name) of Markdown that links, shows, alerts, notifies, references,
    typesets and hides nothing (the module's docstring lists the rules)."""
    text = _AMP.sub("&amp;", visible(text)).replace("<", "&lt;")
    text = _BRACKET.sub(_bracket, text).replace("[!", "[" + ZWSP + "!")
    return _marks(_INFO.sub(_info, text))


def inert_html(text: str) -> str:
    """Text (a title) for raw HTML, where a browser decodes a reference without its `;`:
    every `&`, `<` and `>` escaped, then inert's other rules but the Markdown ones."""
    return _marks(visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def clip(text: object, cap: int = NAME_CAP) -> str:
    """A name, commit or label from the artifact as shown: one line, its invisible
    characters shown, at most `cap` characters, the last an ellipsis when it was longer."""
    s = visible(" ".join(str(text).split()))
    return s if len(s) <= cap else s[:cap - 1] + ELLIPSIS


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
            result.append(f"<summary>{inert_html(m.group(1))}</summary>" if m else line)
        elif kind in ("opens", "closes"):
            result.append(inert(line.lstrip(" ")))       # at the margin: no list item holds it
        else:
            result.append(inert(line))
    joined = "\n".join(result)
    if fences.fence is None:
        return joined
    return joined + ("" if joined.endswith("\n") else "\n") + fences.fence + "\n"
