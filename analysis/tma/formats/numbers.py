"""Numbers as any locale prints them: the one reader every TMA format uses.

perf prints with C's printf under the user's LC_NUMERIC: counts in its standard output
grouped with the locale's thousands separator (the `'` flag: `1,234` `1.234` `1 234`
with U+202F, U+00A0 or a space, `1’234` in de_CH), every other number ungrouped (metric
values, running shares, -x CSV fields, -j JSON values, --topdown cells), all with the
locale's decimal mark ('.' or ','). Only the -I timestamps are always printed with a
'.' (`%lu.%09lu`). toplev and topdown-tool are Python: '.' decimals and, for large
values, ',' groups whatever the locale.

`parse_number` reads all of them. A mark that occurs once is the decimal mark unless the
caller knows the locale's (`decimal`); marks that repeat, and any other separator, must
group digits by three.
"""
from __future__ import annotations

import re
from typing import Iterable

from analysis.tma.model import TmaParseError

# What separates thousands: ',' '.' (de_DE), U+2019 (de_CH), ''' , a space, U+00A0, U+202F.
GROUPING = ",.'\u2019 \u00a0\u202f"
_TEXT = re.compile(r"([-+]?)(\d(?:[\d.,'\u2019 \u00a0\u202f]*\d)?|[.,]\d+)(?:[eE]([-+]?\d+))?")
_SPLIT = re.compile(r"[.,'\u2019 \u00a0\u202f]")
MISSING = ("", "nan", "-nan", "+nan")
# A decimal between digits in a metric value or running share ("# 2,025 CPUs", "(50,00%)").
_MARK = re.compile(r"(?:#\s*|\(\s*)[-+]?\d+([.,])\d+\b")


def parse_number(text: object, source: str, lineno: int | None, what: str,
                 decimal: str | None = None, noun: str = "") -> float | None:
    """A number as printed in any locale: 16.48 / 16,48 / 1,234.5 / 1.234,5 / 1 234,5 /
    1’234.5 / "18,000000" (quoted, as perf -j writes it); None for NaN and empty fields.

    decimal: the locale's decimal mark when known ('.' for perf's -I timestamps and for
    toplev; the file's mark for perf's grouped counts, see `decimal_mark`); None: a '.'
    or ',' that occurs once is the decimal mark. Raises TmaParseError naming file:line
    ("<what>: <noun>'7O.1' is not a number").
    """
    t = str(text).strip().strip('"').strip()
    if t.lower() in MISSING:
        return None
    if t.lower().lstrip("+-") in ("inf", "infinity"):
        return float(t)
    m = _TEXT.fullmatch(t)
    if not m:
        raise TmaParseError(source, lineno, f"{what}: {noun}{t!r} is not a number")
    sign, body, exp = m.groups()
    marks = [c for c in body if c in ".,"]
    if decimal is None:
        dec = marks[-1] if marks and marks.count(marks[-1]) == 1 else None
    else:
        dec = decimal if marks.count(decimal) == 1 else None
    int_part, _, frac = body.rpartition(dec) if dec else (body, "", "")
    groups = _SPLIT.split(int_part)
    if (dec and not frac.isdigit()) or (int_part and not all(g.isdigit() for g in groups)) or (
            len(groups) > 1 and not (len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]))):
        raise TmaParseError(source, lineno, f"{what}: {noun}{t!r} is not a number"
                            + (f" (the decimal mark here is {decimal!r})" if decimal else ""))
    digits = "".join(groups) or "0"
    return float(f"{sign}{digits}" + (f".{frac}" if dec else "") + (f"e{exp}" if exp else ""))


def decimal_mark(lines: Iterable[str]) -> str | None:
    """The decimal mark of a perf standard output, from its metric values and running
    shares, which perf never groups: ',' in a decimal-comma locale, '.' otherwise; None
    when no line shows one (then a grouped count such as 1.234 is ambiguous)."""
    for line in lines:
        if (m := _MARK.search(line)) is not None:
            return m.group(1)
    return None
