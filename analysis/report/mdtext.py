"""Text from the run as inert GitHub-flavoured Markdown: escaped cells, code spans and code
fences that no label can break out of, verdict marks.

Everything that comes from a run directory (variant labels, run ids, symbol and test
names, reasons, commands) goes through one of these at render time; results.json keeps the
plain text.
"""
from __future__ import annotations

import re

VERDICT_MARK = {"improvement": "✅ improvement", "regression": "❌ regression",
                # decided, but under its waterline (docs/statistics.md, "The verdict")
                "minor improvement": "🔹 improvement, below the line",
                "minor regression": "🔸 regression, below the line",
                "no change": "➖ no change", "unstable": "⚠️ unstable",
                "insufficient data": "❔ insufficient data",
                # a function's verdicts after the materiality rules (docs/statistics.md)
                "negligible": "· negligible", "new in candidate": "🆕 new in candidate",
                "gone": "🗑️ gone", "too few samples": "❔ too few samples",
                # no change seen, and the spread is what counting its samples predicts
                "undersampled": "❔ too few samples to see"}

_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")
_SPECIAL_NOT_UNDERSCORE = re.compile(r"([\\`*\[\]|#~])")
# an underscore that could open or close emphasis: not between two word characters
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _html(text: object) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def esc(text: object) -> str:
    """Text from files (symbol names, test names) as inert Markdown: no HTML, no table
    breaks, no emphasis. GitHub would sanitise a <script>, but it would still eat it."""
    return _SPECIAL.sub(r"\\\1", _html(text)).replace("\n", " ")


def esc_words(text: object) -> str:
    """Like esc(), but an underscore between two letters or digits stays as it is: GFM
    never reads an intraword `_` as emphasis, so TMA names (Backend_Bound) stay readable
    where the same Markdown is printed to a terminal (`stallscope funnel`)."""
    s = _SPECIAL_NOT_UNDERSCORE.sub(r"\\\1", _html(text)).replace("\n", " ")
    return _EDGE_UNDERSCORE.sub(r"\\_", s)


def _longest_backticks(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)


def code_span(text: object) -> str:
    """Inline code that survives backticks in the text: the delimiter is one backtick
    longer than the longest run inside (CommonMark), padded when the text starts or ends
    with one."""
    s = str(text).replace("\n", " ")
    ticks = "`" * (_longest_backticks(s) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def code_fence(text: str, info: str = "") -> list[str]:
    """A fenced code block as lines. The fence is longer than any backtick run in the text,
    so no line of it can close the block early (a label with ``` in a command line)."""
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return [fence + info, *text.splitlines(), fence]


def esc_spans(text: object) -> str:
    """Plain text whose `backtick spans` name commands (reasons and notes are written so,
    as report.html's `code` filter reads them): the spans become code, the rest is
    escaped like esc()."""
    parts = re.split(r"`([^`]+)`", str(text))
    return "".join(code_span(p) if i % 2 else esc(p) for i, p in enumerate(parts))


def verdict(v: str, text: str = "") -> str:
    """The verdict's mark; `text` (fmt.quiet_verdict) replaces its words when it carries
    more: "➖ no change, could see ±4.1% (80% power)"."""
    mark = VERDICT_MARK.get(v, esc(v or ""))
    if not text or text == v or v not in VERDICT_MARK:
        return mark
    return f"{mark.split(' ', 1)[0]} {esc(text)}"
