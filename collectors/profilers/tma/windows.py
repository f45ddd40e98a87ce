"""TMA in the paired windows: `perf stat -I` on each server for all of a paired rep's windows.

On a host with a PMU, a paired rep (collectors/runner/paired_servers.py, paired.py) also
counts the top-down tree of each server while its windows run: `perf stat -I INTERVAL_MS
-M <the CPU's groups> -j -o tma-<key>.json -p PID`, one per server (one for the one-process
mode), started just before the windows and stopped (SIGINT) after. perf prints each
interval's end in seconds since it started counting; the start is recorded on
CLOCK_MONOTONIC (rep.json collectors["tma:<variant>"].start_mono), the clock of the windows
in paired.json, so analysis (analysis/tma/windows.py) keeps for each variant the intervals
that fall in its own windows: DRAM_Bound, L3_Bound and the vendor's memory rows get a
value per paired rep, compared as pairs like throughput. Without a PMU (or with --tma off,
toplev or topdown-tool, which have no interval mode here) there is no counter.
"""
from __future__ import annotations

import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from analysis.inputs.collector_facts import TmaFacts
from analysis.inputs.paired import PairedWindow
from collectors.host import procs
from collectors.profilers.tma.commands import perf_command

INTERVAL_MS = 100        # a 0.25 s window holds two whole intervals


@dataclass
class TmaWindowCounter:
    """perf stat -I of each server of a paired rep (the WindowProfiler protocol: it counts
    throughout, so probe() and set() do nothing)."""
    rep_dir: Path
    perf: str
    groups: list[str]
    perf_version: tuple[int, ...] | None = None
    cpus: list[int] | None = None
    interval_ms: int = INTERVAL_MS
    _procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _argv: dict[str, list[str]] = field(default_factory=dict)
    _t0: dict[str, float] = field(default_factory=dict)
    _rc: dict[str, int | None] = field(default_factory=dict)

    def probe(self, key: str, pid: int) -> None:
        pass

    def set(self, on: bool) -> None:
        pass

    def argv(self, key: str, pid: int) -> list[str]:
        cmd = perf_command(self.perf, self.rep_dir / f"tma-{key}.json", 0, pid=pid,
                           groups=self.groups, perf_version=self.perf_version)
        cmd = cmd[:cmd.index("--")]           # no workload: it counts until SIGINT
        return [cmd[0], cmd[1], "-I", str(self.interval_ms), *cmd[2:]]

    def start(self, pids: dict[str, int]) -> None:
        self._err = open(self.rep_dir / "tma.stderr", "ab")
        for key, pid in pids.items():
            argv = self._argv[key] = self.argv(key, pid)
            (self.rep_dir / f"tma-{key}.cmd").write_text(shlex.join(argv) + "\n")
            self._t0[key] = time.monotonic()
            self._procs[key] = procs.spawn(argv, stdout=self._err, stderr=self._err, cpus=self.cpus)

    def stop(self) -> None:
        for p in self._procs.values():
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass
        for key, p in self._procs.items():
            try:
                self._rc[key] = p.wait(30)
            except subprocess.TimeoutExpired:
                self._rc[key] = procs.kill_group(p, 5.0)
            procs.forget(p)
        if self._procs:
            self._err.close()

    def fold(self, windows: list[PairedWindow]) -> dict[str, TmaFacts]:
        """rep.json collectors["tma:<variant>"]: the file that holds the variant's intervals
        and when perf started counting them."""
        out: dict[str, TmaFacts] = {}
        variants = sorted({w.variant for w in windows})
        for key in self._procs:
            out.update({f"tma:{v}": TmaFacts(
                backend="perf", file=f"tma-{key}.json", rc=self._rc.get(key),
                command=self._argv[key], status="ok" if (self.rep_dir / f"tma-{key}.json").is_file()
                else "failed", start_mono=round(self._t0[key], 6), interval_ms=self.interval_ms)
                for v in (variants if key == "server" else [key])})
        return out
