"""perf: the run plugin (`run --profile perf`) and what it runs.

- `plugin`   the collector (perf record -> perf.folded) and the run plugin's hooks
- `record`   the perf commands; `perf script` read once into inferno-collapse-perf
- `unwind`   which threads perf unwinds with DWARF, from a frame-pointer probe
- `windows`  off/on profile windows through perf's control FIFO
- `paired`   perf in the paired reps' windows (the plugin's `window_profiler` hook)

This package is the run plugin named in collectors/runner/plugins.py: its hooks are
re-exported here from `plugin`. The modules of the package import each other by their full
names (`from collectors.profilers.perf.record import ...`), never through this package,
which imports `plugin` and would close a cycle.
"""
from collectors.profilers.perf.plugin import (CALL_GRAPHS, PROFILE_WINDOWS, PROFILERS, PerfProfiler,
                                              RUN_FLAGS, manifest_sections, rep_collectors,
                                              window_profiler)

__all__ = ["CALL_GRAPHS", "PROFILE_WINDOWS", "PROFILERS", "PerfProfiler", "RUN_FLAGS",
           "manifest_sections", "rep_collectors", "window_profiler"]
