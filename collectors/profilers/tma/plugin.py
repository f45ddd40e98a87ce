"""Top-down collection around a rep's steady window, per CPU vendor.

Intel: toplev or `perf stat -M TopdownL1..Ln` (TMA). AMD Zen 4/5: `perf stat -M
PipelineL1,PipelineL2` (pipeline utilization, two levels). Arm: `perf stat -M TopdownL1`
or Arm's topdown-tool, by the CPU the preflight identifies (collectors/host/cpuid.py).
The collector attaches to the running server (by pid: every thread incl. io-threads; or to
the cores it is pinned to) for the window only, by making the tool's workload `sleep W`
(topdown-tool takes no workload beside a pid: it is interrupted, as by Ctrl-C, when the
window ends). It asks for every node down to the level (toplev -v; perf prints all members
of the groups) so reps compare node for node, saves the tool's raw machine-readable output
in the rep directory, and only then parses it (analysis.tma, in the catalogue of the CPU:
amdzen4, neoverse-v2 ...) to decide the rep's status:

  tma.csv (toplev -x, / topdown-tool CSV)      raw measurement
    or tma.json (perf -j)
  tma.stderr                                   everything the tool printed (no-PMU messages)
  tma.rc                                       "rc=N", the tool's exit code
  tma.cmd                                      the exact command line (shell-quoted)
  tma.perf-stat.txt, tma.topdown-tool/         topdown-tool only: the perf counts it read
                                               (first tool) / its CSV directory (refactored)

Command lines: collectors.profilers.tma.commands. Use (docs/tma-collection.md):
  c = TmaCollector(TmaConfig(backend="auto", level=4))
  pf = c.preflight()              # once per run -> manifest["tma"] = pf.to_manifest()
  c.start(ctx); ...window...; status = c.stop(ctx)   # per rep, when pf.available
(the tool runs through collectors.host.procs.spawn: Ctrl-C's cleanup takes it down too).
"""
from __future__ import annotations

import dataclasses
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from analysis.inputs.collector_facts import TmaFacts
from analysis.inputs.host import HostFacts
from analysis.inputs.tma_plan import TmaCpu, TmaGroupSet, TmaPlan
from analysis.tma.formats import parse_file
from analysis.tma.model import NoPmuError, TmaParseError
from analysis.toolpaths import perf_binary
from collectors.collector import ManifestSections, RepContext, RunFlag, RunFlags, RunSettings
from collectors.host import procs, versions
from collectors.host import preflight as pre
from collectors.host.cpuid import CpuId
from collectors.host.toplev import find_toplev
from collectors.profilers.tma.commands import (ATTACH, BACKENDS, TOPDOWN_CSV_DIR, TmaConfig,
                                               TmaConfigError, choose_backend,
                                               collect_topdown_csv, config_from_options,
                                               effective_level, find_topdown_tool, has_tree,
                                               perf_command, perf_groups, split_sets,
                                               topdown_tool_command, topdown_tool_csv_style,
                                               toplev_command, toplev_cores, vendor_of)
from collectors.profilers.tma.windows import TmaWindowCounter

# topdown-tool's extra raw files in the rep directory (see the module docstring).
TOPDOWN_PERF_OUTPUT = "tma.perf-stat.txt"

# --------------------------------------------------------------------------------------
# The collector.

@dataclass
class _Running:
    proc: subprocess.Popen
    out: Path
    cmd: list[str]
    started: float
    window_s: float
    stderr_file: IO[bytes]
    interrupt_at_end: bool = False      # topdown-tool: SIGINT (Ctrl-C) ends it at the window's end


class TmaCollector:
    """Per-rep TMA collection. Not thread-safe; one rep at a time."""
    name = "tma"

    def __init__(self, config: TmaConfig | None = None, sys_root: str | Path = "/sys",
                 cpu: CpuId | None = None):
        self.config = config or TmaConfig()
        self.cpu = cpu                  # None until the preflight identifies it (Intel's lines)
        self.backend = choose_backend(self.config.backend, cpu)
        self.sys_root = sys_root
        self._perf = perf_binary()
        self._perf_version: tuple[int, ...] | None = None
        self._toplev = find_toplev()
        self._topdown_tool = find_topdown_tool()
        self._csv_style: str | None = None      # topdown-tool's: "file" | "dir" (from its --help)
        self._run: _Running | None = None

    # -- once per run ---------------------------------------------------------------
    def preflight(self, facts: pre.HostFacts | None = None) -> pre.Preflight:
        if self.backend == "off":
            pf = pre.Preflight("off", [pre.Finding("tma", False, "TMA collection switched off (--tma off)",
                                                   "pass --tma perf, toplev or topdown-tool",
                                                   blocking=True)])
            return pf
        facts = facts or pre.probe_host()
        if self.cpu is None:
            self.cpu = facts.cpu_id()
            self.backend = choose_backend(self.config.backend, self.cpu)
        elif facts.cpu is None:
            facts = dataclasses.replace(facts, cpu=self.cpu)
        self._perf_version = facts.perf_version
        pf = pre.evaluate(facts, self.backend, self.config.attach, self._toplev,
                          topdown_tool=self._topdown_tool, level=self.config.level,
                          split=self.config.split)
        if self.backend == "topdown-tool" and self._topdown_tool and pf.available:
            # Its --help says which command line it has; asked once here, not at the start
            # of a rep's measured window.
            try:
                self._csv_style = topdown_tool_csv_style(self._topdown_tool)
            except TmaConfigError as e:
                pf.findings.append(pre.Finding("topdown-tool", False, str(e),
                                               "set TOPDOWN_TOOL= to Arm's topdown-tool "
                                               "(docs/tma-collection.md)", blocking=True))
        return pf

    @property
    def raw_name(self) -> str:
        return "tma.csv" if self.backend in ("toplev", "topdown-tool") else "tma.json"

    @property
    def level(self) -> int:
        """The level this CPU's groups give for the level asked (AMD: 2 at most; perf on
        Arm: 1)."""
        return effective_level(self.config.level, self.cpu, self.backend)

    @property
    def catalog(self) -> str | None:
        """The catalogue model analysis places this CPU's names in (None: Intel's, which
        the output or the default names)."""
        return self.cpu.catalog if self.cpu is not None and self.cpu.method != "none" else None

    def command(self, ctx: RepContext, out: Path | None = None) -> list[str]:
        """The exact command line for this rep (also what tests check)."""
        cfg = self.config
        out = Path(out) if out else Path(ctx.rep_dir) / self.raw_name
        pid = ctx.pid if cfg.attach == "pid" else None
        cpus = ctx.cpus if cfg.attach == "cpus" else None
        if cfg.attach == "pid" and pid is None:
            raise TmaConfigError("attach by pid, but the rep context has no server pid")
        if cfg.attach == "cpus" and not cpus:
            raise TmaConfigError("attach by cpus, but the server is not pinned (no cpus in the rep "
                                 "context): pin it or use --tma-attach pid")
        if not has_tree(self.cpu):
            raise TmaConfigError(f"{self.cpu.no_tree_reason}: nothing to count (use the CPU "
                                 f"profile here, or run the TMA reps on another CPU)")
        vendor = vendor_of(self.cpu)
        if self.backend == "toplev" and vendor in ("amd", "arm"):
            raise TmaConfigError(f"--tma toplev: toplev (pmu-tools) has no {'AMD' if vendor == 'amd' else 'Arm'} "
                                 f"support (its TMA model is Intel's); this is {self.cpu.name}: "
                                 f"use --tma perf{' or topdown-tool' if vendor == 'arm' else ''}, or auto")
        if self.backend == "topdown-tool" and vendor != "arm":
            raise TmaConfigError(f"--tma topdown-tool: Arm's topdown-tool counts Arm Neoverse "
                                 f"cores only; this is {self.cpu.name if self.cpu else 'not Arm'}: "
                                 f"use --tma perf or auto")
        groups, nodes = (None, None)
        if cfg.split:
            sets = split_sets(cfg.level, self.cpu)
            groups, nodes = sets[(ctx.rep - 1) % len(sets)]
        elif vendor != "intel":
            groups = perf_groups(self.level, self.cpu)
        if self.backend == "topdown-tool":
            if not self._topdown_tool:
                raise TmaConfigError("topdown-tool not found: set TOPDOWN_TOOL=/path/to/topdown-tool "
                                     "or put it on PATH")
            if self._csv_style is None:      # a collector used without its preflight
                self._csv_style = topdown_tool_csv_style(self._topdown_tool)
            target = out if self._csv_style == "file" else out.with_name(TOPDOWN_CSV_DIR)
            return topdown_tool_command(self._topdown_tool, target, self.level, pid=pid, cpus=cpus,
                                        csv_style=self._csv_style, perf=self._perf,
                                        perf_output=out.with_name(TOPDOWN_PERF_OUTPUT),
                                        extra=cfg.extra_args)
        if self.backend == "toplev":
            if not self._toplev:
                raise TmaConfigError("toplev not found: make setup, or TOPLEV=/path/to/toplev.py")
            cores = toplev_cores(cpus, self.sys_root) if cpus else None
            return toplev_command(self._toplev, out, ctx.window_s, cfg.level, pid=pid, cores=cores,
                                  nodes=nodes, extra=cfg.extra_args)
        if self.backend == "perf":
            if not self._perf:
                raise TmaConfigError("perf not found on PATH (nor $PERF): apt-get install linux-perf")
            if self._perf_version is None:
                self._perf_version = versions.perf_version(self._perf)
            return perf_command(self._perf, out, ctx.window_s, self.level, pid=pid, cpus=cpus,
                                groups=groups, perf_version=self._perf_version,
                                metric_no_group=cfg.metric_no_group, extra=cfg.extra_args)
        raise TmaConfigError(f"TMA back end {self.backend!r} does not run")

    # -- per rep ----------------------------------------------------------------------
    def start(self, ctx: RepContext) -> None:
        """Launch the tool at the start of the steady window; it ends by itself after W s."""
        if self._run is not None:
            raise RuntimeError("TmaCollector.start called twice without stop")
        rep_dir = Path(ctx.rep_dir)
        rep_dir.mkdir(parents=True, exist_ok=True)
        out = rep_dir / self.raw_name
        cmd = self.command(ctx, out)
        (rep_dir / "tma.cmd").write_text(shlex.join(cmd) + "\n")
        err = open(rep_dir / "tma.stderr", "wb")
        try:
            # stdout too: toplev prints hints there; perf's stdout is sleep's (empty).
            # spawn: its own process group, tracked, so Ctrl-C cleanup (procs.kill_all)
            # takes the tool and its `sleep` down with the rest of the rep.
            proc = procs.spawn(cmd, stdout=err, stderr=subprocess.STDOUT)
        except (procs.ToolNotFound, OSError) as e:
            err.close()
            raise TmaConfigError(f"cannot start {cmd[0]}: {e}") from None
        self._run = _Running(proc, out, cmd, time.time(), ctx.window_s, err,
                             interrupt_at_end=self.backend == "topdown-tool")

    def stop(self, ctx: RepContext, grace_s: float = 30.0) -> TmaFacts:
        """Wait for the tool (it stops after `sleep W`; topdown-tool is interrupted at the
        window's end), save rc, parse, return the status."""
        run, self._run = self._run, None
        if run is None:
            raise RuntimeError("TmaCollector.stop called without start")
        note = None
        if run.interrupt_at_end:
            # Ctrl-C is how topdown-tool stops following a pid or cores: it then reads
            # perf's counts and writes its CSV (given grace_s for that).
            try:
                run.proc.wait(timeout=max(0.0, run.started + run.window_s - time.time()))
            except subprocess.TimeoutExpired:
                pass
            try:
                rc = procs.kill_group(run.proc, grace_s, first=signal.SIGINT)
            finally:
                run.stderr_file.close()
            if self._csv_style == "dir" and not run.out.exists():
                note = collect_topdown_csv(run.out)
        else:
            deadline = run.started + run.window_s + grace_s
            try:
                run.proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                note = f"the tool outlived the window by {grace_s:g} s and was interrupted"
            finally:
                # SIGINT makes perf stat / toplev print what they counted so far; the group
                # (the tool's `sleep`) goes too, and the process is no longer tracked.
                rc = procs.kill_group(run.proc, 10.0, first=signal.SIGINT)
                run.stderr_file.close()
        rep_dir = Path(ctx.rep_dir)
        (rep_dir / "tma.rc").write_text(f"rc={rc}\n")
        facts = self.judge(rep_dir, run.out, rc)
        facts.command = run.cmd
        if note:
            facts.notes.append(note)
        return facts

    def judge(self, rep_dir: Path, out: Path, rc: int | None) -> TmaFacts:
        """Status of one rep's saved output: ok | unavailable (no PMU) | failed."""
        facts = TmaFacts(backend=self.backend, file=out.name, rc=rc,
                         files=sorted(p.name for p in rep_dir.glob("tma.*")))
        if not out.exists():
            # The tool died before opening -o (bad option, no permission): its words are in stderr.
            out.write_text("")
        try:
            result = parse_file(out, catalog=self.catalog)
        except NoPmuError as e:
            facts.status = "unavailable"
            facts.reason = f"no hardware PMU: {e.evidence}. {pre.NO_PMU_FIX}"
            return facts
        except TmaParseError as e:
            reason = str(e)
            first = _first_line(rep_dir / "tma.stderr")
            # perf puts the cause first and its usage text last; the parser quotes the last.
            if rc and first and first not in reason:
                reason = f"{out.name}: {self.backend} exited with code {rc}: {first} ({reason})"
            facts.status, facts.reason = "failed", reason
            return facts
        flat = result.collapse()
        mux = {name: round(n.multiplex, 2) for name, n in sorted(flat.items())
               if n.multiplex is not None and n.multiplexed}
        facts.status, facts.nodes = "ok", len(flat)
        facts.max_level = max((n.level for n in flat.values()), default=0)
        facts.multiplexed, facts.warnings = mux, list(result.warnings)
        return facts


def _first_line(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return next((l.strip() for l in text.splitlines() if l.strip()), "")


# --------------------------------------------------------------------------------------
# Run plugin hooks (collectors.runner.plugins.PLUGIN_MODULES): flags, per-rep and per-window
# collectors, the manifest's "tma" block. Options arrive in options.extra by RunFlag.dest.

PROFILERS: tuple[str, ...] = ()     # TMA counts alongside any profiler; it adds none

TMA_REP_KINDS = {"throughput": ("throughput",), "profile": ("profile",),
                 "all": ("throughput", "profile")}


RUN_FLAGS = RunFlags(
    "TMA (top-down) collection",
    "top-down counters attached to the server for the steady window, per CPU vendor: "
    "Intel perf stat -M TopdownL1..L4 or toplev; AMD Zen 4/5 perf stat -M "
    "PipelineL1,PipelineL2; Arm perf stat -M TopdownL1 or topdown-tool. Raw output in "
    "<variant>/<rep>/tma.*. Needs a hardware PMU and a CPU with top-down metrics: without "
    "them the run goes on and the manifest says why (stallscope doctor).",
    (RunFlag("--tma", "back end: auto (Intel: toplev if $TOPLEV or on PATH, else perf; AMD: "
                      "perf; Arm: topdown-tool if $TOPDOWN_TOOL or on PATH, else perf), "
                      "toplev (Intel only: $TOPLEV, PATH, else the pmu-tools make setup "
                      "installs), perf, topdown-tool (Arm only), off",
             default="auto", choices=tuple(BACKENDS)),
     RunFlag("--tma-level", "deepest top-down level, 1..6 (default 4: Intel's DRAM_Bound -> "
                            "MEM_Latency/MEM_Bandwidth; AMD has 2 levels, perf on Arm 1: deeper "
                            "asks count what there is, and the manifest says so)",
             default=4, parse=int, metavar="N"),
     RunFlag("--tma-attach", "pid: the server process, all threads (default); cpus: the cores it is pinned to",
             default="pid", choices=tuple(ATTACH)),
     RunFlag("--tma-split", "one metric-group set per rep so nothing multiplexes (Intel; AMD and Arm "
                            "have one set; see docs/tma-collection.md)",
             action="store_true"),
     RunFlag("--tma-reps", "which reps count TMA (default throughput: every measured rep adds a TMA "
                           "sample; a paired rep counts both servers with perf stat -I through the "
                           "windows, compared window by window; profile: separate profile reps only)",
             default="throughput", choices=tuple(sorted(TMA_REP_KINDS)))))


_PREFLIGHTS: dict[tuple, tuple[TmaCollector, pre.Preflight]] = {}


def _collector_for(options: RunSettings) -> tuple[TmaCollector, pre.Preflight]:
    cfg = config_from_options(options)
    key = (cfg.backend, cfg.level, cfg.attach, cfg.split)
    if key not in _PREFLIGHTS:
        c = TmaCollector(cfg)
        _PREFLIGHTS[key] = (c, c.preflight())
    return _PREFLIGHTS[key]


def manifest_sections(options: RunSettings, host: HostFacts) -> ManifestSections:
    c, pf = _collector_for(options)
    return ManifestSections(tma=plan_of(c, pf, options.extra.get("tma_reps", "throughput")))


def plan_of(c: TmaCollector, pf: pre.Preflight, reps: str = "throughput") -> TmaPlan:
    """The manifest's tma block from a collector and its preflight (pure: tests give it
    any CPU's recorded facts). A CPU without a top-down tree gets tree=False and no
    schedule, never another vendor's groups."""
    plan = pf.to_manifest()
    plan.level, plan.attach, plan.split = c.config.level, c.config.attach, c.config.split
    plan.reps = reps
    if c.level != c.config.level:
        plan.level_used = c.level
    # Which tree the reps' outputs belong to: analysis parses them in this catalogue.
    plan.catalog = c.catalog
    if c.cpu is not None:
        plan.vendor, plan.cpu = c.cpu.vendor, TmaCpu.from_json(c.cpu.to_json(), "tma.cpu")
        plan.tree = c.cpu.has_tree
    if c.config.split:
        plan.schedule = [TmaGroupSet(list(g), n) for g, n in split_sets(c.config.level, c.cpu)]
    return plan


class _Unavailable:
    """Stands in for the collector when the preflight said no: rep.json says why."""
    name = "tma"

    def __init__(self, pf: pre.Preflight):
        self.pf = pf

    def start(self, ctx: RepContext) -> None:
        pass

    def stop(self, ctx: RepContext) -> TmaFacts:
        return TmaFacts(backend=self.pf.backend, status="unavailable", reason=self.pf.reason)


def window_profiler(options: RunSettings, rep_dir: Path, cpus: list[int] | None,
                    binary_mode: str = "fp") -> TmaWindowCounter | None:
    """`perf stat -I` on a paired rep's servers (windows.py) where TMA counts with perf."""
    extra = options.extra
    if extra.get("tma", "auto") == "off" or extra.get("tma_reps", "throughput") == "profile":
        return None
    c, pf = _collector_for(options)
    if not pf.available or c.backend != "perf" or not has_tree(c.cpu):
        return None
    return TmaWindowCounter(rep_dir, c._perf, perf_groups(c.level, c.cpu),
                            perf_version=c._perf_version, cpus=cpus)


def rep_collectors(options: RunSettings, kind: str) -> list[TmaCollector | _Unavailable]:
    extra = options.extra
    if extra.get("tma", "auto") == "off":
        return []
    if kind not in TMA_REP_KINDS[extra.get("tma_reps", "throughput")]:
        return []
    c, pf = _collector_for(options)
    return [c] if pf.available else [_Unavailable(pf)]
