"""manifest.json `run_spread`: how far this host's A/A runs of the case strayed from 0
beyond their own intervals, the spread between runs that a run's reps cannot show
(analysis/run_spread.py estimates it and widens the paired throughput interval by it).

Written when a paired run is planned, from the host's noise records
(collectors/host/noise.py), so that a report made later, or on another machine, reads the
run as it was judged. Where the host had fewer than MIN_RUNS A/A runs of the case, the
spread recorded on another host (analysis/run_spread.default), `borrowed` naming it; absent in
runs made before that default, and in unpaired runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from analysis.inputs.records import Record


@dataclass
class RunSpread(Record):
    sd: float = 0.0          # between runs, of the run's mean log ratio (0.0036: 0.36%)
    runs: int = 0            # the A/A runs it comes from
    latest: str = ""         # when the newest of them ran
    # its 95% interval (Q-profile); None in manifests written before it
    low: float | None = None
    high: float | None = None
    # where the A/A runs ran when they are not this host's (analysis/run_spread.default):
    # "" for this host's own
    borrowed: str = ""
