"""What a sweep was asked to do (saved as sweep.json "options", so --resume runs the rest the
same way). The fields it shares with a run's options (MeasureOptions), their defaults and
the rules between them are declared in analysis/inputs/option_specs.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from analysis.inputs.option_specs import MeasureOptions


@dataclass
class SweepOptions(MeasureOptions):
    # fields read under an older name (records.convert): sweep.json written before 2026-11-27
    RENAMED: ClassVar[dict[str, str]] = {"frequency": "frequency_hz"}
    # `pairing` (MeasureOptions) as a run's, at every point: auto pairs config-only variants
    # in one process and two builds loaded at once where two datasets fit this host, else
    # interleaved reps (collectors/sweep/estimate.py); sweep.json schema 1 said paired for
    # auto and interleaved for unpaired (sweep_manifest._v1_to_v2)
    lookup: list[str] = field(default_factory=list)   # the lookup column's function(s)
    skip_unfit: bool = False         # run the points that fit, mark the others skipped

    def __post_init__(self) -> None:
        if not self.frequency_hz:    # older sweep.json: 0 meant "the runner's default"
            self.frequency_hz = None
