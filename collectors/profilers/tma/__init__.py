"""TMA: the run plugin (`run --tma ...`) and what it runs.

- `plugin`    the collector (toplev, perf stat -M or topdown-tool around a rep's window) and
              the run plugin's hooks
- `commands`  the command lines per tool and vendor (toplev / perf stat -M / topdown-tool)
- `windows`   `perf stat -I` on the servers of a paired rep (the plugin's `window_profiler`)

This package is the run plugin named in collectors/runner/plugins.py: its hooks are
re-exported here from `plugin`. The modules of the package import each other by their full
names (`from collectors.profilers.tma.commands import ...`), never through this package,
which imports `plugin` and would close a cycle.
"""
from collectors.profilers.tma.plugin import (PROFILERS, TmaCollector, RUN_FLAGS,
                                             manifest_sections, plan_of, rep_collectors,
                                             window_profiler)

__all__ = ["PROFILERS", "TmaCollector", "RUN_FLAGS", "manifest_sections", "plan_of",
           "rep_collectors", "window_profiler"]
