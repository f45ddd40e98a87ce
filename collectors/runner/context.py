"""The run as every step of it sees it: the case, the variants, the manifest (saved after
every change of state), where the scratch files go, and how a server is started."""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from analysis.inputs.case import Case
from analysis.inputs.manifest import Manifest, Placement, Rep, Variant
from analysis.inputs.rundir import save_manifest
from collectors.collector import RepCollector, WindowProfiler
from collectors.runner.window_collectors import WindowCollectors
from collectors.host import procs
from collectors.load.server import ServerOptions
from collectors.runner.layouts import variants_for
from collectors.runner.options import RunOptions
from collectors.runner.progress import Progress

# A plugin's rep_collectors(options, kind).
CollectorFactory = Callable[[RunOptions, str], list[RepCollector]]
# A plugin's window_profiler(options, rep_dir, cpus, binary_mode): the paired reps'
# profiler, or None.
WindowProfilerFactory = Callable[[RunOptions, Path, "list[int] | None", str], "WindowProfiler | None"]


@dataclass
class RunContext:
    run_dir: Path
    manifest: Manifest
    case: Case
    variants: dict[str, Variant]
    opts: RunOptions
    collector_factories: list[CollectorFactory] = field(default_factory=list)
    window_profiler_factories: list[WindowProfilerFactory] = field(default_factory=list)
    # Set when the manifest's load_generator says memtier (api.plan_run, Runner.resume).
    memtier_bin: str | None = None
    progress: Progress | None = None

    @property
    def place(self) -> Placement:
        return self.manifest.placement

    @property
    def scratch(self) -> Path:
        """Server working directories; removed when the run ends."""
        return self.run_dir / ".scratch"

    def save(self) -> None:
        save_manifest(self.run_dir, self.manifest)

    def note(self, msg: str, always: bool = False) -> None:
        if self.progress is not None:
            self.progress.note(msg, always)
        elif always:
            print(f"stallscope run: {msg}", file=sys.stderr)

    def rep_variants(self, rep: Rep) -> dict[str, Variant]:
        """The variants as `rep` runs them: with --layouts, each one's build of the rep's layout."""
        return variants_for(self.variants, rep.layout)

    def server_opts(self, variant: Variant, tag: str, logfile: Path, rdb: Path | None,
                    with_variant_config: bool = True) -> ServerOptions:
        """The case's server settings, then the variant's +config overrides."""
        cfg = dict(self.case.server.config)
        if with_variant_config:
            cfg.update(variant.config or {})
        return ServerOptions(server_bin=variant.server_bin, workdir=self.scratch / tag,
                             logfile=logfile, config=cfg, io_threads=self.case.server.io_threads,
                             cluster=self.case.server.cluster, persistence=self.case.server.persistence,
                             cpus=self.place.server_cpus, rdb=rdb)

    def rep_collectors(self, kind: str) -> list[RepCollector]:
        """Every plugin's collectors for a rep of `kind` (throughput | profile)."""
        return [c for f in self.collector_factories for c in (f(self.opts, kind) or [])]

    def window_profiler(self, rep_dir: Path) -> WindowProfiler | None:
        """What watches a paired rep's windows: every plugin's collector for them, as one
        (perf's profile; TMA's interval counts on a PMU host); None when no plugin has one."""
        # a build without frame pointers at all is unwound with DWARF throughout
        mode = "dwarf" if any(v.callgraph == "dwarf" for v in self.variants.values()) else "fp"
        found = [p for f in self.window_profiler_factories
                 if (p := f(self.opts, rep_dir, self.place.client_cpus, mode)) is not None]
        return WindowCollectors(found) if found else None


def bench_bin(v: Variant) -> str:
    """The variant's own redis-benchmark/valkey-benchmark, else one on PATH."""
    b = v.benchmark_bin or shutil.which("redis-benchmark") or shutil.which("valkey-benchmark")
    if not b:
        raise procs.ToolNotFound(f"variant {v.name}: no redis-benchmark/valkey-benchmark beside "
                                 f"{v.server_bin} nor on PATH")
    return b
