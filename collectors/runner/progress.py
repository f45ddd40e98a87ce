"""Progress of a run on stderr: a tqdm bar on a terminal, otherwise one line per finished
rep (what ran, how it went, the time left), so a run logged to a file (`make demo > log
2>&1`, CI) shows it is alive between its first and its last line:

  stallscope run: [3/12] base/2 throughput ok in 21.4 s (26,104 ops/s); about 3m10s left
"""
from __future__ import annotations

import sys
import time
from typing import IO

from tqdm import tqdm

from analysis.inputs.manifest import Rep
from analysis.inputs.repfacts import RepFacts

PREFIX = "stallscope run:"


def duration(seconds: float) -> str:
    """42s, 3m10s, 1h02m: short enough for a progress line."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def outcome(facts: RepFacts) -> str:
    """What the rep measured, for its progress line ('' when nothing to show)."""
    if facts.bench is not None and facts.bench.rps is not None:
        return f" ({facts.bench.rps:,.0f} ops/s)"
    if facts.rdb_load_result and facts.rdb_load_result.keys_per_s:
        return f" ({facts.rdb_load_result.keys_per_s:,.0f} keys/s loaded)"
    if facts.paired:
        return f" ({len(facts.paired.order or [])} paired windows)"
    return ""


class Progress:
    """enabled=False (--no-progress): silent. Otherwise a bar on a tty, lines elsewhere."""

    def __init__(self, total: int, what: str, enabled: bool = True, stream: IO[str] | None = None):
        self.total, self.what = total, what
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.done = 0
        self.spent_s = 0.0
        self._t0 = 0.0
        tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        # tqdm's ETA is per rep; reps of one run take about the same time.
        self.bar = tqdm(total=total, file=self.stream, unit="rep", desc=what,
                        dynamic_ncols=True) if tty else None

    def note(self, msg: str, always: bool = False) -> None:
        """A line about the run's preparation (dataset, calibration); `always` for what a
        reader must see even with --no-progress (a warning about the measurement)."""
        if not (self.enabled or always):
            return
        line = f"{PREFIX} {msg}"
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def start(self, rep: Rep) -> None:
        self._t0 = time.monotonic()
        if self.bar is not None:
            self.bar.set_description(f"{self.what}: {rep.dir} ({rep.kind}) rep {self.done + 1}/{self.total}")

    def finish(self, rep: Rep, facts: RepFacts) -> None:
        took = time.monotonic() - self._t0
        self.done += 1
        self.spent_s += took
        if self.bar is not None:
            self.bar.update(1)
        elif self.enabled:
            print(self.line(rep, facts, took), file=self.stream, flush=True)

    def line(self, rep: Rep, facts: RepFacts, took: float) -> str:
        left = self.total - self.done
        eta = f"about {duration(self.spent_s / self.done * left)} left" if left else "done"
        return (f"{PREFIX} [{self.done}/{self.total}] {rep.dir} {rep.kind} {rep.status} in "
                f"{took:.1f} s{outcome(facts)}; {eta}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
