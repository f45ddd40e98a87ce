"""The one interface every TMA input format implements (one module per format)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from analysis.tma.catalog import Catalog
from analysis.tma.model import TmaResult


# The CSV separators people give perf's and toplev's -x: both allow any; ';' is the usual
# one where the decimal mark is a comma.
SEPARATORS = (",", ";", "\t", "|")


def names_no_cpu(lines: list[str]) -> str | None:
    """For formats whose output never says which CPU it ran on (perf stat)."""
    return None


@dataclass(frozen=True)
class Format:
    name: str                                          # what fmt= / --format accept
    # True when the text is this format; the registry asks in its detection order.
    detect: Callable[[list[str]], bool]
    # text, source (for file:line in errors), catalogue -> values, notes, warnings.
    parse: Callable[[str, str, Catalog], TmaResult]
    # The CPU model key the output names ("spr/sapphire_rapids"), to pick a catalogue.
    cpu_model: Callable[[list[str]], str | None] = names_no_cpu
