"""The seam between the runner and what watches a rep: `RepContext`, the `RepCollector`
protocol and the `RunPlugin` protocol (which modules are plugins: collectors/runner/plugins.py).

The runner imports this module and no collector by name; collectors import this module
and never the runner.

A **RepCollector** brackets the steady window of a throughput or profile rep:
  start(ctx)          when the window opens (the load generator is running)
  stop(ctx) -> CollectorFacts
                      when it closes: the collector's facts for rep.json, under
                      collectors.<name> (analysis/inputs/collector_facts.py: PerfFacts,
                      TmaFacts, ParcaFacts; a plugin's own fields are kept in `extra`)
A collector whose stop() raises still lets the others stop; the rep then fails and
rep.json says which collector failed and why.

A **run plugin** is a module named in collectors/runner/plugins.py's PLUGIN_MODULES with
these four names:
  PROFILERS = ("parca",)                       values it adds to `run --profile`
  RUN_FLAGS = RunFlags(...)                    its run flags, as data (each lands in
                                               options.extra under its dest; commands/
                                               options.py makes them `stallscope run` flags)
  rep_collectors(options, kind) -> list        RepCollectors for a rep of `kind`
  manifest_sections(options, host) -> ManifestSections
                                               the manifest's sections it sets (`tma`,
                                               `profiling`), from the host's facts
                                               (HostFacts); called before any build, so a
                                               plugin that cannot serve the run stops it early
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from analysis.inputs.collector_facts import CollectorFacts
from analysis.inputs.host import HostFacts
from analysis.inputs.manifest import Profiling
from analysis.inputs.paired import PairedWindow
from analysis.inputs.tma_plan import TmaPlan


@dataclass
class RepContext:
    """What a collector may know about the rep it brackets."""
    rep_dir: Path
    window_s: float                 # length of the steady window (s)
    pid: int | None = None          # server pid (perf -p covers all its threads)
    cpus: list[int] | None = None   # CPUs the server is pinned to
    rep: int = 1                    # 1-based rep number within the variant
    variant: str = ""
    case: str = ""
    kind: str = "throughput"        # throughput | profile
    labels: dict[str, str] = field(default_factory=dict)   # variant, rep, run, kind
    port: int = 0                   # the server's port on 127.0.0.1
    client_cpus: list[int] | None = None   # where the load generator (and profilers) run
    callgraph: str = "fp"           # fp | dwarf, from the variant's binary


class RepCollector(Protocol):
    name: str

    def start(self, ctx: RepContext) -> None: ...

    def stop(self, ctx: RepContext) -> CollectorFacts: ...


@dataclass
class ManifestSections:
    """The top-level manifest entries a run plugin sets; None leaves the runner's."""
    tma: TmaPlan | None = None
    profiling: Profiling | None = None


class RunSettings(Protocol):
    """What a plugin may read of the run's options (collectors.runner.options.RunOptions)."""
    profile: str                    # perf | off | a plugin's profiler
    frequency_hz: int
    keep_perf_data: bool
    extra: dict[str, Any]           # plugin flags, by dest (RunFlag.dest)


class WindowProfiler(Protocol):
    """Profiles a paired rep's windows (collectors/profilers/perf/paired.py): attached to the
    server(s) for all windows, sampling only while the runner says on; folded per variant."""

    def probe(self, key: str, pid: int) -> None: ...     # while that server runs its load

    def start(self, pids: dict[str, int]) -> None: ...   # variant (or "server") -> pid

    def set(self, on: bool) -> None: ...

    def stop(self) -> None: ...

    def fold(self, windows: list[PairedWindow]) -> dict[str, CollectorFacts]: ...


@dataclass(frozen=True)
class RunFlag:
    """One flag a run plugin adds to `stallscope run`, declared as data: the command layer
    makes the argument (commands/options.py), the run API fills options.extra with `default`
    for a caller that sets no flags (collectors/runner/api.py with_plugin_defaults)."""
    flag: str                                 # --tma-level
    help: str                                 # argparse's help text (%(default)s, %% as there)
    default: Any = None
    parse: Callable[[str], Any] | None = None   # text -> value; None keeps the text
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    # None: takes a value; "store_true": a switch (default False); "append": repeatable,
    # a list (default: a fresh list of `default`'s items)
    action: str | None = None

    @property
    def dest(self) -> str:
        """Its key in options.extra: the flag without dashes, '-' as '_' (argparse's dest)."""
        return self.flag.lstrip("-").replace("-", "_")

    def default_value(self) -> Any:
        if self.action == "store_true":
            return bool(self.default)
        if self.action == "append":
            return list(self.default or ())
        return self.default


@dataclass(frozen=True)
class RunFlags:
    """A plugin's flags, shown as one group in `stallscope run --help`."""
    title: str
    description: str | None
    flags: tuple[RunFlag, ...]

    def defaults(self) -> dict[str, Any]:
        return {f.dest: f.default_value() for f in self.flags}


class RunPlugin(Protocol):
    PROFILERS: tuple[str, ...]
    RUN_FLAGS: RunFlags

    def rep_collectors(self, options: RunSettings, kind: str) -> list[RepCollector]: ...

    def manifest_sections(self, options: RunSettings, host: HostFacts) -> ManifestSections: ...
