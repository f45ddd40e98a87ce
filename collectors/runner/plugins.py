"""Which modules are run plugins, and loading them (the protocol: collectors/collector.py).

The list lives with the runner, its only user, rather than in the seam module: the seam
names no collector, so a collector importing the seam makes no cycle."""
from __future__ import annotations

import importlib

from analysis.errors import UserError
from collectors.collector import RunPlugin

# perf first: its PROFILERS value is the default of `run --profile`.
PLUGIN_MODULES = ("collectors.profilers.perf", "collectors.profilers.tma",
                  "collectors.profilers.parca")
PLUGIN_HOOKS = ("PROFILERS", "RUN_FLAGS", "rep_collectors", "manifest_sections")


class PluginError(UserError):
    """A module in PLUGIN_MODULES that is not a run plugin."""


def plugins() -> list[RunPlugin]:
    """The run plugins (modules), in PLUGIN_MODULES order. A missing module is an
    installation error and raises like any import; a module without the four hooks raises
    PluginError."""
    out: list[RunPlugin] = []
    for name in PLUGIN_MODULES:
        mod = importlib.import_module(name)
        missing = [h for h in PLUGIN_HOOKS if not hasattr(mod, h)]
        if missing:
            raise PluginError(f"{mod.__file__}: run plugin {name} lacks {', '.join(missing)}; "
                              f"define them (see collectors/collector.py) or remove it from "
                              "PLUGIN_MODULES in collectors/runner/plugins.py")
        out.append(mod)
    return out


def window_profilers(found: list[RunPlugin]) -> list:
    """The plugins' optional `window_profiler(options, rep_dir, cpus)` hooks: who profiles a
    paired rep's windows (perf: collectors/profilers/perf/paired.py)."""
    return [p.window_profiler for p in found if hasattr(p, "window_profiler")]
