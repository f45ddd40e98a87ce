"""CPU profile of the server over the steady window: perf record -> perf script -> folded.

`perf record -e cpu-clock` works without a hardware PMU (KVM guests, CI), so this
collector runs everywhere perf is allowed. Output in the rep directory:
  perf.folded       `perf script` (run once) folded by inferno-collapse-perf; the first frame
                    of each line is the thread's comm (redis-server / io_thd_N / bio_...); the
                    count is the sum of sample periods (for cpu-clock: nanoseconds of CPU time)
  perf.threads.tsv  tid <TAB> comm <TAB> samples, as perf saw them (counted in the same pass)
  perf.stderr       perf's own messages (lost samples, permission problems)
  perf.probe.folded the first profile rep of a run: the frame-pointer probe that chose
                    which threads perf unwinds with DWARF (collectors/profilers/perf/unwind.py)
perf.data (and perf.fp.data when two perf record share the threads) is deleted after
folding unless keep_data (it is large).
"""
from __future__ import annotations

import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from analysis.inputs.collector_facts import PerfFacts
from analysis.inputs.host import HostFacts
from analysis.inputs.option_specs import DEFAULT_FREQ_HZ
from collectors.collector import ManifestSections, RepContext, RunFlag, RunFlags, RunSettings
from collectors.host import procs
import collectors.profilers.perf.unwind as perf_unwind
from collectors.profilers.perf.record import (DWARF_STACK_BYTES, EVENT, ProfileError, fold,
                                              record_argv, require_tools, skipped_facts)
from collectors.profilers.perf.paired import PairedProfiler
from collectors.profilers.perf.windows import Controls, WindowRunner

CALL_GRAPHS = ("auto", "fp", "dwarf", "whole")

# Profile windows: ABBA off/on, each at least windows.MIN_WINDOW_S. Short windows pair
# better on a host whose noise drifts over seconds (docs/statistics.md): 64 windows of a
# 16 s profile rep are 0.25 s each, 32 off/on pairs per rep.
PROFILE_WINDOWS = 64

@dataclass
class PerfProfiler:
    """A RepCollector: start() attaches perf to the server for the steady window,
    stop() waits for it and folds the stacks."""
    frequency_hz: int = DEFAULT_FREQ_HZ
    keep_data: bool = False
    callgraph: str = "auto"          # auto: measured per run (perf_unwind), fp, or dwarf
    mmap_pages: int | None = None    # perf's ring buffer (-m), None: perf's default
    windows: int = PROFILE_WINDOWS   # ABBA off/on profile windows (0: sample the whole window)
    name: str = "perf"
    _procs: list[subprocess.Popen] = field(default_factory=list, repr=False)
    _argvs: list[list[str]] = field(default_factory=list, repr=False)

    def start(self, ctx: RepContext) -> None:
        perf, _ = require_tools()
        opened = time.monotonic()
        (ctx.rep_dir / "perf.stderr").write_bytes(b"")     # this rep's perf messages only
        self._unwind = perf_unwind.choose(self.callgraph, ctx.callgraph, ctx.pid, ctx.rep_dir,
                                          ctx.window_s, ctx.client_cpus)
        left_s = max(0.5, ctx.window_s - (time.monotonic() - opened))   # after a probe
        self._data = []
        self._modes = []
        for mode, target in self._recordings(ctx.pid):
            self._modes.append(mode)
            self._data.append(ctx.rep_dir / ("perf.data" if not self._data else f"perf.{mode}.data"))
            self._argvs.append(record_argv(perf, target, self._data[-1], self.frequency_hz, mode,
                                           self.mmap_pages))
        self._control = self._windows = None
        if self.windows and ctx.port:      # windows count on the server: they need its port
            self._control = Controls(len(self._argvs))
            for argv, c in zip(self._argvs, self._control.each):
                argv[2:2] = c.argv()
            self._windows = WindowRunner(ctx.port, left_s, self.windows)
        self._err = open(ctx.rep_dir / "perf.stderr", "ab")
        # perf itself runs on the client CPUs so it does not steal the server's core.
        self._procs = [procs.spawn(a, stdout=self._err, stderr=self._err, cpus=ctx.client_cpus)
                       for a in self._argvs]
        self._t0 = time.monotonic()
        if self._windows is not None:
            self._windows.start(self._control)
        # Stop at the end of the window even if the caller's stop() comes later.
        self._timer = threading.Timer(left_s, self._interrupt)
        self._timer.daemon = True
        self._timer.start()

    def _recordings(self, pid: int) -> list[tuple[str, int | list[int]]]:
        return perf_unwind.recordings(self._unwind, pid)

    def _interrupt(self) -> None:
        for p in self._procs:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGINT)   # perf writes its data and exits
                except ProcessLookupError:
                    pass
        self._t1 = getattr(self, "_t1", None) or time.monotonic()

    def stop(self, ctx: RepContext) -> PerfFacts:
        perf, collapse = require_tools()
        assert self._procs, "stop() without start()"
        if self._windows is not None:
            self._windows.join(ctx.window_s + 15)   # it ends with the window; sooner when told
            self._control.close()
        self._timer.cancel()
        self._interrupt()
        rcs = [self._wait(p) for p in self._procs]
        window = self._t1 - self._t0
        self._err.close()
        # perf exits 0 or -SIGINT/130 after SIGINT, depending on when it arrives.
        bad = [rc for rc, d in zip(rcs, self._data)
               if rc not in (0, -signal.SIGINT, 128 + signal.SIGINT) or not d.is_file()]
        if bad:
            raise ProfileError(f"perf record exited with status {bad[0]}; see {ctx.rep_dir / 'perf.stderr'} "
                               "(perf_event_paranoid too high? run as root or "
                               "sysctl kernel.perf_event_paranoid=1)")
        facts = fold(perf, collapse, self._data, ctx.rep_dir / "perf.folded",
                     ctx.rep_dir / "perf.stderr", ctx.rep_dir / "perf.threads.tsv", self._modes)
        if facts.lines == 0:
            raise ProfileError(f"{ctx.rep_dir / 'perf.folded'} is empty: perf saw no samples of pid "
                               f"{ctx.pid}")
        if not self.keep_data:
            for d in self._data:
                d.unlink()
        out = PerfFacts(command=self._argvs[0], event=EVENT, frequency_hz=self.frequency_hz,
                        window_s=round(window, 3), mmap_pages=self.mmap_pages,
                        folded_lines=facts.lines, samples=facts.samples, threads=facts.threads,
                        skipped=skipped_facts(facts.skipped))
        self._add_unwind_facts(out)
        self._add_window_facts(out)
        return out

    @staticmethod
    def _wait(p: subprocess.Popen) -> int | None:
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            rc = procs.kill_group(p, 5.0)
        procs.forget(p)
        return rc

    def _add_unwind_facts(self, out: PerfFacts) -> None:
        """What was recorded (a thread the probe named may be absent from this rep)."""
        out.callgraph = "+".join(sorted(set(self._modes), key=("fp", "dwarf").index))
        if len(self._argvs) > 1:
            out.commands = self._argvs
        if "dwarf" in self._modes:
            out.dwarf_stack_bytes = DWARF_STACK_BYTES
        if out.callgraph == "fp+dwarf":
            out.dwarf_threads = self._unwind.dwarf_threads
        out.unwind_probe = self._unwind.probe

    def _add_window_facts(self, out: PerfFacts) -> None:
        if self._windows is None:
            return
        rows = out.windows = self._windows.rows
        out.windows_error, out.window_plan = self._windows.error, self._windows.plan_facts
        if self._windows.error is None:
            # After a failed switch the samples no longer match the windows: no counts then.
            out.sampled_s = round(sum(r.seconds for r in rows if r.perf), 6)
            out.sampled_commands = sum(r.commands for r in rows if r.perf)


# --------------------------------------------------------------------------------------
# Run plugin hooks (collectors.runner.plugins.PLUGIN_MODULES): `run --profile perf` (the
# default) attaches a PerfProfiler to every profile rep. --frequency and --keep-perf-data
# are the runner's own flags (RunOptions.frequency_hz, keep_perf_data).

PROFILERS = ("perf",)


RUN_FLAGS = RunFlags("perf profile (--profile perf)", None, (
    RunFlag("--call-graph", "stack unwinding: fp (frame pointers, cheap), dwarf (copies "
            f"{DWARF_STACK_BYTES // 1024} KiB of user stack per sample: whole stacks "
            "through code built without frame pointers, e.g. glibc, at a larger "
            "perf.data), auto (default: fp, and dwarf for each thread whose stacks "
            f"a {perf_unwind.PROBE_MAX_S:g} s frame-pointer probe finds over "
            f"{perf_unwind.SWITCH_PCT:g}%% truncated with 95%% confidence: in a paired run during the "
            "first rep's warm-up, else at the start of the first profile rep; dwarf "
            "throughout for a binary without frame pointers), whole (auto, and dwarf for a thread "
            "whose stacks skip the callers of C library code too: whole cumulative rows, at "
            "DWARF's cost per sample in every absolute figure)",
            default="auto", choices=tuple(CALL_GRAPHS)),
    RunFlag("--perf-mmap", "perf's ring buffer in pages (perf record -m; default: perf's own)",
            parse=int, metavar="PAGES"),
    RunFlag("--profile-windows", "separate profile reps: split each into N windows, perf sampling every "
            "other one (ABBA), so the rep measures the profiler's own cost (default "
            "%(default)s, at least 0.25 s each; 0: sample the whole window, no cost "
            "measured). Paired reps need no such split: perf samples every other "
            "ABBA block of their windows, and the blocks without it give the cost",
            default=PROFILE_WINDOWS, parse=int, metavar="N")))


def rep_collectors(options: RunSettings, kind: str) -> list[PerfProfiler]:
    if options.profile != "perf" or kind != "profile":
        return []
    extra = options.extra or {}
    return [PerfProfiler(frequency_hz=options.frequency_hz, keep_data=options.keep_perf_data,
                         callgraph=extra.get("call_graph") or "auto",
                         mmap_pages=extra.get("perf_mmap"),
                         windows=int(extra.get("profile_windows", PROFILE_WINDOWS)))]


def window_profiler(options: RunSettings, rep_dir: Path, cpus: list[int] | None,
                    binary_mode: str = "fp") -> PairedProfiler | None:
    """The paired reps' profiler (perf in the paired windows) of a run profiling with perf;
    `binary_mode`: dwarf when a variant's build has no frame pointers at all."""
    if options.profile != "perf":
        return None
    extra = options.extra or {}
    return PairedProfiler(rep_dir, options.frequency_hz, cpus=cpus, keep_data=options.keep_perf_data,
                          callgraph=extra.get("call_graph") or "auto", binary_mode=binary_mode)


def manifest_sections(options: RunSettings, host: HostFacts) -> ManifestSections:
    """Nothing to add; called before any build, so missing perf/inferno stop the run early."""
    if options.profile == "perf":
        require_tools()
    return ManifestSections()
