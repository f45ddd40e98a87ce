"""CPU profile of the server over the steady window: perf record -> perf script -> folded.

`perf record -e cpu-clock` works without a hardware PMU (KVM guests, CI), so this
collector runs everywhere perf is allowed. Output in the rep directory:
  perf.folded       inferno-collapse-perf of `perf script`; the first frame of each line is
                    the thread's comm (redis-server / io_thd_N / bio_...); the count is the sum
                    of sample periods (for cpu-clock: nanoseconds of CPU time)
  perf.threads.tsv  tid <TAB> comm <TAB> samples, as perf saw them
  perf.stderr       perf's own messages (lost samples, permission problems)
perf.data is deleted after folding unless keep_data (it is large).
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.toolpaths import perf_binary, which_tool
from collectors.collector import RepContext, RunSettings
from collectors.host import procs
from collectors.profilers.perf_windows import PerfControl, WindowRunner


class ProfileError(Exception):
    """perf recorded nothing usable; the message names the file with perf's own words."""


def require_tools() -> tuple[str, str]:
    perf = perf_binary()
    if not perf:
        raise procs.ToolNotFound("perf: not found (nor $PERF); install it (Debian: apt-get install "
                                 "linux-perf) or use --profile off")
    collapse = which_tool("inferno-collapse-perf")   # PATH, then $CARGO_HOME/bin
    if not collapse:
        raise procs.ToolNotFound("inferno-collapse-perf: not found on PATH or in ~/.cargo/bin; "
                                 "run `make setup` (cargo install inferno) or use --profile off")
    return perf, collapse


EVENT = "cpu-clock"        # a software clock: works without a hardware PMU; period = ns
CALL_GRAPHS = ("auto", "fp", "dwarf")
DWARF_STACK_BYTES = 16384   # user stack copied per sample with --call-graph dwarf


def record_argv(perf: str, pid: int, out: Path, freq_hz: int, callgraph: str = "fp",
                mmap_pages: int | None = None) -> list[str]:
    # dwarf copies the user stack with every sample and unwinds it afterwards: whole stacks
    # through code without frame pointers, at a much higher cost per sample.
    cg = ["--call-graph", f"dwarf,{DWARF_STACK_BYTES}"] if callgraph == "dwarf" else ["-g"]
    mm = ["-m", str(mmap_pages)] if mmap_pages else []
    # No `-- sleep W` workload: perf runs until stop() sends SIGINT, so there is no
    # grandchild that could outlive a SIGKILLed runner (PDEATHSIG reaches perf only).
    # -p follows every thread of the pid (main, io_thd_N, bio_*).
    return [perf, "record", "-e", EVENT, "-F", str(freq_hz), *cg, *mm, "-p", str(pid),
            "-o", str(out)]


def fold(perf: str, collapse: str, perf_data: Path, out_dir: Path) -> dict[str, Any]:
    """perf script | inferno-collapse-perf > perf.folded; tids/comms > perf.threads.tsv."""
    folded = out_dir / "perf.folded"
    err = open(out_dir / "perf.stderr", "ab")
    try:
        with open(folded, "wb") as fout:
            ps = procs.spawn([perf, "script", "-i", str(perf_data)], stdout=subprocess.PIPE, stderr=err)
            # Default collapse options keep the comm as first frame and add no pid/tid suffix.
            col = procs.spawn([collapse], stdin=ps.stdout, stdout=fout, stderr=err)
            ps.stdout.close()
            rc_col = col.wait(600)
            rc_ps = ps.wait(600)
            procs.forget(ps)
            procs.forget(col)
        if rc_ps != 0 or rc_col != 0:
            raise ProfileError(f"perf script (status {rc_ps}) | inferno-collapse-perf (status {rc_col}) "
                               f"failed; see {out_dir / 'perf.stderr'}")
        r = procs.run_capture([perf, "script", "-i", str(perf_data), "-F", "tid,comm"], timeout_s=600)
    finally:
        err.close()
    threads: Counter = Counter()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-1].isdigit():
            threads[(int(parts[-1]), " ".join(parts[:-1]))] += 1
    with open(out_dir / "perf.threads.tsv", "w") as f:
        f.write("tid\tcomm\tsamples\n")
        for (tid, comm), n in sorted(threads.items()):
            f.write(f"{tid}\t{comm}\t{n}\n")
    lines = folded.read_text(errors="replace").splitlines()
    return {"folded_lines": len(lines), "samples": sum(threads.values()),
            "threads": sorted({c for _, c in threads})}


# Profile windows: ABBA off/on, each at least perf_windows.MIN_WINDOW_S. Short windows pair
# better on a host whose noise drifts over seconds (docs/statistics.md): 64 windows of a
# 16 s profile rep are 0.25 s each, 32 off/on pairs per rep.
PROFILE_WINDOWS = 64

@dataclass
class PerfProfiler:
    """A RepCollector: start() attaches perf to the server for the steady window,
    stop() waits for it and folds the stacks."""
    freq_hz: int = 99
    keep_data: bool = False
    callgraph: str = "auto"          # auto: the variant's (fp when it has frame pointers)
    mmap_pages: int | None = None    # perf's ring buffer (-m), None: perf's default
    windows: int = PROFILE_WINDOWS   # ABBA off/on profile windows (0: sample the whole window)
    name: str = "perf"
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _argv: list[str] = field(default_factory=list, repr=False)

    def start(self, ctx: RepContext) -> None:
        perf, _ = require_tools()
        self._callgraph = ctx.callgraph if self.callgraph == "auto" else self.callgraph
        self._argv = record_argv(perf, ctx.pid, ctx.rep_dir / "perf.data", self.freq_hz,
                                 self._callgraph, self.mmap_pages)
        self._control = self._windows = None
        if self.windows and ctx.port:      # windows count on the server: they need its port
            self._control = PerfControl()
            self._argv[2:2] = self._control.argv()
            self._windows = WindowRunner(ctx.port, ctx.window_s, self.windows)
        self._err = open(ctx.rep_dir / "perf.stderr", "wb")
        # perf itself runs on the client CPUs so it does not steal the server's core.
        self._proc = procs.spawn(self._argv, stdout=self._err, stderr=self._err, cpus=ctx.client_cpus)
        self._t0 = time.monotonic()
        if self._windows is not None:
            self._windows.start(self._control)
        # Stop at the end of the window even if the caller's stop() comes later.
        self._timer = threading.Timer(ctx.window_s, self._interrupt)
        self._timer.daemon = True
        self._timer.start()

    def _interrupt(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._proc.send_signal(signal.SIGINT)   # perf writes its data and exits
            except ProcessLookupError:
                pass
            self._t1 = time.monotonic()

    def stop(self, ctx: RepContext) -> dict[str, Any]:
        perf, collapse = require_tools()
        assert self._proc is not None, "stop() without start()"
        if self._windows is not None:
            self._windows.join(ctx.window_s + 15)   # it ends with the window; sooner when told
            self._control.close()
        self._timer.cancel()
        self._t1 = getattr(self, "_t1", None) or time.monotonic()
        self._interrupt()
        try:
            rc = self._proc.wait(60)
        except subprocess.TimeoutExpired:
            rc = procs.kill_group(self._proc, 5.0)
        procs.forget(self._proc)
        window = self._t1 - self._t0
        self._err.close()
        data = ctx.rep_dir / "perf.data"
        # perf exits 0 or -SIGINT/130 after SIGINT, depending on when it arrives.
        if rc not in (0, -signal.SIGINT, 128 + signal.SIGINT) or not data.is_file():
            raise ProfileError(f"perf record exited with status {rc}; see {ctx.rep_dir / 'perf.stderr'} "
                               "(perf_event_paranoid too high? run as root or "
                               "sysctl kernel.perf_event_paranoid=1)")
        facts = fold(perf, collapse, data, ctx.rep_dir)
        if facts["folded_lines"] == 0:
            raise ProfileError(f"{ctx.rep_dir / 'perf.folded'} is empty: perf saw no samples of pid "
                               f"{ctx.pid}")
        if not self.keep_data:
            data.unlink()
        out = {"profiler": "perf", "command": self._argv, "event": EVENT,
               "frequency_hz": self.freq_hz, "window_s": round(window, 3),
               "callgraph": self._callgraph, "mmap_pages": self.mmap_pages, **facts}
        if self._windows is not None:
            rows = self._windows.rows
            out["windows"] = rows
            out["windows_error"] = self._windows.error
            if self._windows.error is None:
                # After a failed switch the samples no longer match the windows: no counts then.
                out["sampled_s"] = round(sum(r["seconds"] for r in rows if r["perf"]), 6)
                out["sampled_commands"] = sum(r["commands"] for r in rows if r["perf"])
        return out


# --------------------------------------------------------------------------------------
# Run plugin hooks (collectors.collector.PLUGIN_MODULES): `run --profile perf` (the
# default) attaches a PerfProfiler to every profile rep. --frequency and --keep-perf-data
# are the runner's own flags (RunOptions.freq_hz, keep_perf_data).

PROFILERS = ("perf",)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("perf profile (--profile perf)")
    g.add_argument("--call-graph", choices=CALL_GRAPHS, default="auto",
                   help="stack unwinding: fp (frame pointers, cheap), dwarf (copies "
                        f"{DWARF_STACK_BYTES // 1024} KiB of user stack per sample: whole stacks "
                        "through code built without frame pointers, several times the cost), "
                        "auto (fp when the binary has frame pointers; default)")
    g.add_argument("--perf-mmap", type=int, default=None, metavar="PAGES",
                   help="perf's ring buffer in pages (perf record -m; default: perf's own)")
    g.add_argument("--profile-windows", type=int, default=PROFILE_WINDOWS, metavar="N",
                   help="split each profile rep into N windows, perf sampling every other one "
                        "(ABBA), so the rep measures the profiler's own cost (default %(default)s, "
                        "at least 0.25 s each; 0: "
                        "sample the whole window, no cost measured)")


def rep_collectors(options: RunSettings, kind: str) -> list[PerfProfiler]:
    if options.profile != "perf" or kind != "profile":
        return []
    extra = options.extra or {}
    return [PerfProfiler(freq_hz=options.freq_hz, keep_data=options.keep_perf_data,
                         callgraph=extra.get("call_graph") or "auto",
                         mmap_pages=extra.get("perf_mmap"),
                         windows=int(extra.get("profile_windows", PROFILE_WINDOWS)))]


def manifest_sections(options: RunSettings, host: dict[str, Any]) -> dict[str, Any]:
    """Nothing to add; called before any build, so missing perf/inferno stop the run early."""
    if options.profile == "perf":
        require_tools()
    return {}
