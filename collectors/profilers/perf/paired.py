"""perf in the paired windows: the CPU profile of each variant, measured where throughput is.

A paired rep (collectors/runner/paired_servers.py: two servers, the load switched between
them in ABBA windows; collectors/runner/paired.py: one server, CONFIG SET between windows)
counts each window's operations on the server itself. Here `perf record` samples the
server(s) for the whole of the windows, stamping each sample with CLOCK_MONOTONIC (`-k
mono`), the clock the runner times the windows with; after the rep its samples are split by
window (record.fold_windows), so each variant's profile covers exactly the windows whose
operations were counted: a function's CPU time per operation is a paired ratio per rep,
judged like throughput (docs/statistics.md, "Profiles in the paired windows").

perf is on in a share of the ABBA blocks, every other one unless a run that decides planned
more (`--control`: collectors/abba.block_schedule, which the runner follows and calls set()
by; options.perf_share), so the same rep measures what it costs: each server's rate in its on windows
against its off windows, seconds apart. Output in the rep directory, per variant:
perf-<variant>.folded, perf-<variant>.threads.tsv; perf.stderr for perf's messages.
"""
from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from analysis.inputs.collector_facts import PerfFacts
from analysis.inputs.paired import PairedWindow
from collectors.host import procs
import collectors.profilers.perf.unwind as perf_unwind
from collectors.profilers.perf.record import (DWARF_STACK_BYTES, EVENT, ProfileError,
                                              fold_windows, record_argv, require_tools,
                                              skipped_facts)
from collectors.profilers.perf.unwind import Unwinding

# The probe's window for perf_unwind.choose: long enough for its 1 s probe (it probes a
# tenth of the window, at most 1 s); the probe runs in a server's warm-up, not its windows.
PROBE_WINDOW_S = 10.0
from collectors.profilers.perf.windows import PerfControl


@dataclass
class PairedProfiler:
    """perf record of each server of a paired rep (one process with CONFIG SET: one perf;
    two with fp+dwarf unwinding, one per thread set)."""
    rep_dir: Path
    frequency_hz: int
    cpus: list[int] | None = None          # where perf runs: the client CPUs
    keep_data: bool = False
    callgraph: str = "auto"                # --call-graph: auto | fp | dwarf | whole
    binary_mode: str = "fp"                # dwarf when the build has no frame pointers at all
    _procs: list[tuple[str, subprocess.Popen, PerfControl]] = field(default_factory=list)
    _data: dict[str, list[Path]] = field(default_factory=dict)
    _argv: dict[str, list[list[str]]] = field(default_factory=dict)
    _unwind: dict[str, Unwinding] = field(default_factory=dict)
    _modes: dict[str, list[str]] = field(default_factory=dict)
    _on: bool = False

    def probe(self, key: str, pid: int) -> None:
        """Choose the unwinding while this server runs its load (the warm-up): the run's
        earlier probe, or a 1 s frame-pointer probe now (collectors/profilers/perf/unwind.py:
        DWARF for each thread whose frame-pointer stacks are truncated, or skip a caller,
        over 1% with 95% confidence). Each server of the rep is probed (a change may call
        into the C library where its base does not), and every server unwinds a thread with
        DWARF when any probe asked for it: both are sampled alike."""
        earlier = next(iter(self._unwind.values()), None)
        here = f"{self.rep_dir.parent.name}/{self.rep_dir.name}"
        if earlier is not None and earlier.probe is not None and earlier.probe.rep != here:
            self._unwind[key] = earlier          # an earlier rep of the run chose: keep it
            return
        u = perf_unwind.choose(self.callgraph, self.binary_mode, pid, self.rep_dir,
                               PROBE_WINDOW_S, self.cpus, stem=f"perf.probe-{key}")
        if earlier is not None and earlier.probe is not None and u.probe is not None:
            u = perf_unwind.decide(perf_unwind.merge(earlier.probe, u.probe), skipped=self.callgraph == "whole")
        for k in [*self._unwind, key]:
            self._unwind[k] = u

    def start(self, pids: dict[str, int]) -> None:
        """perf for each server (key: the variant, or "server" for one process), attached
        with its events disabled until the first "on" block."""
        perf, _ = require_tools()
        self._err = open(self.rep_dir / "perf.stderr", "ab")
        for key, pid in pids.items():
            u = self._unwind.get(key) or perf_unwind.Unwinding(
                "dwarf" if "dwarf" in (self.callgraph, self.binary_mode) else "fp")
            self._unwind[key] = u
            for mode, target in perf_unwind.recordings(u, pid):
                data = self.rep_dir / f"perf-{key}.{mode}.data"
                self._modes.setdefault(key, []).append(mode)
                argv = record_argv(perf, target, data, self.frequency_hz, mode, monotonic=True)
                ctl = PerfControl()
                argv[2:2] = ctl.argv()
                self._data.setdefault(key, []).append(data)
                self._argv.setdefault(key, []).append(argv)
                self._procs.append((key, procs.spawn(argv, stdout=self._err, stderr=self._err,
                                                     cpus=self.cpus), ctl))

    def set(self, on: bool) -> None:
        """Enable or disable sampling in every perf (before the block's counts are read)."""
        if on != self._on:
            for _, p, ctl in self._procs:
                ctl.send("enable" if on else "disable", perf=p)
            self._on = on

    def stop(self) -> None:
        """SIGINT to every perf (it writes its data and exits); wait; the FIFOs closed."""
        if not self._procs:
            return
        for _, p, _ in self._procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGINT)
                except ProcessLookupError:
                    pass
        bad = []
        for key, p, ctl in self._procs:
            try:
                rc = p.wait(60)
            except subprocess.TimeoutExpired:
                rc = procs.kill_group(p, 5.0)
            procs.forget(p)
            ctl.close()
            if rc not in (0, -signal.SIGINT, 128 + signal.SIGINT):
                bad.append(f"{key}: status {rc}")
        self._err.close()
        missing = [str(d) for ds in self._data.values() for d in ds if not d.is_file()]
        if bad or missing:
            raise ProfileError(f"perf record ({'; '.join(bad) or 'no data: ' + ', '.join(missing)});"
                               f" see {self.rep_dir / 'perf.stderr'}")

    def fold(self, windows: list[PairedWindow]) -> dict[str, PerfFacts]:
        """Each variant's samples of its own perf-on windows -> perf-<variant>.folded; the
        facts, by their rep.json name (collectors["perf:<variant>"])."""
        perf, collapse = require_tools()
        out: dict[str, PerfFacts] = {}
        variants = sorted({w.variant for w in windows})
        for key, data in self._data.items():
            keys = variants if key == "server" else [key]
            spans = [(w.mono0, w.mono1, w.variant) for w in windows
                     if w.perf and w.variant in keys and w.mono0 is not None]
            folded = {v: self.rep_dir / f"perf-{v}.folded" for v in keys}
            tsv = {v: self.rep_dir / f"perf-{v}.threads.tsv" for v in keys}
            done, dropped = fold_windows(perf, collapse, data, spans, folded,
                                         self.rep_dir / "perf.stderr", tsv, self._modes[key])
            u = self._unwind[key]
            for v in keys:
                on = [w for w in windows if w.variant == v and w.perf]
                out[f"perf:{v}"] = PerfFacts(
                    command=self._argv[key][0], event=EVENT, frequency_hz=self.frequency_hz,
                    callgraph=u.callgraph, dwarf_threads=list(u.dwarf_threads),
                    dwarf_stack_bytes=DWARF_STACK_BYTES if "dwarf" in u.callgraph else None,
                    commands=self._argv[key] if len(self._argv[key]) > 1 else [],
                    unwind_probe=u.probe, folded_lines=done[v].lines, samples=done[v].samples,
                    threads=done[v].threads, window_s=round(sum(w.seconds for w in on), 6),
                    sampled_s=round(sum(w.seconds for w in on), 6),
                    sampled_commands=sum(w.calls if w.calls is not None else w.total_commands
                                         for w in on),
                    file=folded[v].name, outside_windows_samples=dropped,
                    skipped=skipped_facts(done[v].skipped))
            if not self.keep_data:
                for d in data:
                    d.unlink(missing_ok=True)
        return out
