"""A confidence level as text: the one writer of "95%", "96.9%", "99.79%" (standard library
only: the PR comment job renders with it under python3 -S; analysis/intervals.py and
analysis/report/fmt.py both take it from here)."""
from __future__ import annotations

import math


def level_text(x: float) -> str:
    """A confidence as text, never rounded up: 95%, 96.9%, 99.79% (cut at two decimals, so
    99.79% is not "100%" and 96.96% is not "97%")."""
    pct = x * 100
    for digits in (0, 1):
        if abs(round(pct, digits) - pct) < 1e-9:
            return f"{round(pct, digits):.{digits}f}%"
    cut = math.floor(pct * 100 + 1e-9) / 100
    return f"{cut:.2f}".rstrip("0").rstrip(".") + "%"
