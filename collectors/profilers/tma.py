"""TMA (top-down) collection around a rep's steady window: toplev or `perf stat -M`.

The collector attaches to the running server (by pid: every thread incl. io-threads; or to
the cores it is pinned to) for the window only, by making the tool's workload `sleep W`.
It asks for every node down to the level (toplev -v; perf prints all members of
TopdownL1..Ln) so reps compare node for node, saves the tool's raw machine-readable output
in the rep directory, and only then parses it (analysis.tma) to decide the rep's status:

  tma.csv (toplev -x,) or tma.json (perf -j)   raw measurement
  tma.stderr                                   everything the tool printed (no-PMU messages)
  tma.rc                                       "rc=N", the tool's exit code
  tma.cmd                                      the exact command line (shell-quoted)

The command lines are collectors.profilers.tma_commands. Use (docs/tma-collection.md):
  c = TmaCollector(TmaConfig(backend="auto", level=4))
  pf = c.preflight()              # once per run -> manifest["tma"] = pf.to_manifest()
  c.start(ctx); ...window...; status = c.stop(ctx)   # per rep, when pf.available
The tool runs through collectors.host.procs.spawn, so Ctrl-C cleanup takes it down too.
"""
from __future__ import annotations

import argparse
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from analysis.tma.formats import parse_file
from analysis.tma.model import NoPmuError, TmaParseError
from analysis.toolpaths import perf_binary
from collectors.collector import RepContext, RunSettings
from collectors.host import pmu, procs
from collectors.host import preflight as pre
from collectors.profilers.tma_commands import (ATTACH, BACKENDS, TmaConfig, TmaConfigError,
                                               choose_backend, perf_command, split_sets,
                                               toplev_command, toplev_cores)

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


class TmaCollector:
    """Per-rep TMA collection. Not thread-safe; one rep at a time."""
    name = "tma"

    def __init__(self, config: TmaConfig | None = None, sys_root: str | Path = "/sys"):
        self.config = config or TmaConfig()
        self.backend = choose_backend(self.config.backend)
        self.sys_root = sys_root
        self._perf = perf_binary()
        self._perf_version: tuple[int, ...] | None = None
        self._toplev = pmu.find_toplev()
        self._run: _Running | None = None

    # -- once per run ---------------------------------------------------------------
    def preflight(self, facts: pre.HostFacts | None = None) -> pre.Preflight:
        if self.backend == "off":
            pf = pre.Preflight("off", [pre.Finding("tma", False, "TMA collection switched off (--tma off)",
                                                   "pass --tma perf or --tma toplev", blocking=True)])
            return pf
        facts = facts or pre.probe_host()
        self._perf_version = facts.perf_version
        return pre.evaluate(facts, self.backend, self.config.attach, self._toplev)

    @property
    def raw_name(self) -> str:
        return "tma.csv" if self.backend == "toplev" else "tma.json"

    def command(self, ctx: RepContext, out: Path | None = None) -> list[str]:
        """The exact command line for this rep (also what tests check)."""
        cfg = self.config
        out = out or Path(ctx.rep_dir) / self.raw_name
        pid = ctx.pid if cfg.attach == "pid" else None
        cpus = ctx.cpus if cfg.attach == "cpus" else None
        if cfg.attach == "pid" and pid is None:
            raise TmaConfigError("attach by pid, but the rep context has no server pid")
        if cfg.attach == "cpus" and not cpus:
            raise TmaConfigError("attach by cpus, but the server is not pinned (no cpus in the rep "
                                 "context): pin it or use --tma-attach pid")
        groups, nodes = (None, None)
        if cfg.split:
            sets = split_sets(cfg.level)
            groups, nodes = sets[(ctx.rep - 1) % len(sets)]
        if self.backend == "toplev":
            if not self._toplev:
                raise TmaConfigError("toplev not found: set TOPLEV=/path/to/pmu-tools/toplev.py")
            cores = toplev_cores(cpus, self.sys_root) if cpus else None
            return toplev_command(self._toplev, out, ctx.window_s, cfg.level, pid=pid, cores=cores,
                                  nodes=nodes, extra=cfg.extra_args)
        if self.backend == "perf":
            if not self._perf:
                raise TmaConfigError("perf not found on PATH (nor $PERF): apt-get install linux-perf")
            if self._perf_version is None:
                self._perf_version = pmu.perf_version(self._perf)
            return perf_command(self._perf, out, ctx.window_s, cfg.level, pid=pid, cpus=cpus,
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
        self._run = _Running(proc, out, cmd, time.time(), ctx.window_s, err)

    def stop(self, ctx: RepContext, grace_s: float = 30.0) -> dict[str, Any]:
        """Wait for the tool (it stops after `sleep W`), save rc, parse, return the status."""
        run, self._run = self._run, None
        if run is None:
            raise RuntimeError("TmaCollector.stop called without start")
        deadline = run.started + run.window_s + grace_s
        note = None
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
        status = self.judge(rep_dir, run.out, rc)
        status["command"] = run.cmd
        if note:
            status.setdefault("notes", []).append(note)
        return status

    def judge(self, rep_dir: Path, out: Path, rc: int | None) -> dict[str, Any]:
        """Status of one rep's saved output: ok | unavailable (no PMU) | failed."""
        base = {"backend": self.backend, "file": out.name, "rc": rc,
                "files": sorted(p.name for p in rep_dir.glob("tma.*"))}
        if not out.exists():
            # The tool died before opening -o (bad option, no permission): its words are in stderr.
            out.write_text("")
        try:
            result = parse_file(out)
        except NoPmuError as e:
            return {**base, "status": "unavailable",
                    "reason": f"no hardware PMU: {e.evidence}. {pre.NO_PMU_FIX}"}
        except TmaParseError as e:
            reason = str(e)
            first = _first_line(rep_dir / "tma.stderr")
            # perf puts the cause first and its usage text last; the parser quotes the last.
            if rc and first and first not in reason:
                reason = f"{out.name}: {self.backend} exited with code {rc}: {first} ({reason})"
            return {**base, "status": "failed", "reason": reason}
        flat = result.collapse()
        mux = {name: round(n.multiplex, 2) for name, n in sorted(flat.items())
               if n.multiplex is not None and n.multiplexed}
        return {**base, "status": "ok", "reason": None,
                "nodes": len(flat), "max_level": max((n.level for n in flat.values()), default=0),
                "multiplexed": mux, "warnings": result.warnings}


def _first_line(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return next((l.strip() for l in text.splitlines() if l.strip()), "")


# --------------------------------------------------------------------------------------
# Run plugin hooks (collectors.collector.PLUGIN_MODULES): flags, per-rep collectors and
# the manifest's "tma" block. Options arrive as argparse dests in options.extra.

PROFILERS: tuple[str, ...] = ()     # TMA counts alongside any profiler; it adds none

TMA_REP_KINDS = {"throughput": ("throughput",), "profile": ("profile",),
                 "all": ("throughput", "profile")}


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group(
        "TMA (top-down) collection",
        "perf stat -M TopdownL1..L4 or toplev, attached to the server for the steady window; "
        "raw output in <variant>/<rep>/tma.*. Needs a hardware PMU and an Intel CPU: without "
        "them the run goes on and the manifest says why (stallscope doctor).")
    g.add_argument("--tma", choices=BACKENDS, default="auto",
                   help="back end: auto (toplev if $TOPLEV or on PATH, else perf), toplev, perf, off")
    g.add_argument("--tma-level", type=int, default=4, metavar="N",
                   help="deepest TMA level, 1..6 (default 4: DRAM_Bound -> MEM_Latency/MEM_Bandwidth)")
    g.add_argument("--tma-attach", choices=ATTACH, default="pid",
                   help="pid: the server process, all threads (default); cpus: the cores it is pinned to")
    g.add_argument("--tma-split", action="store_true",
                   help="one metric-group set per rep so nothing multiplexes (see docs/tma-collection.md)")
    g.add_argument("--tma-reps", choices=sorted(TMA_REP_KINDS), default="throughput",
                   help="which reps count TMA (default throughput: counting, no sampling, "
                        "so every measured rep adds a TMA sample)")


def config_from_options(options: RunSettings) -> TmaConfig:
    extra = options.extra
    return TmaConfig(backend=extra.get("tma", "auto"), level=int(extra.get("tma_level", 4)),
                     attach=extra.get("tma_attach", "pid"), split=bool(extra.get("tma_split", False)))


_PREFLIGHTS: dict[tuple, tuple[TmaCollector, pre.Preflight]] = {}


def _collector_for(options: RunSettings) -> tuple[TmaCollector, pre.Preflight]:
    cfg = config_from_options(options)
    key = (cfg.backend, cfg.level, cfg.attach, cfg.split)
    if key not in _PREFLIGHTS:
        c = TmaCollector(cfg)
        _PREFLIGHTS[key] = (c, c.preflight())
    return _PREFLIGHTS[key]


def manifest_sections(options: RunSettings, host: dict[str, Any]) -> dict[str, Any]:
    c, pf = _collector_for(options)
    block = pf.to_manifest()
    block.update(level=c.config.level, attach=c.config.attach, split=c.config.split,
                 reps=options.extra.get("tma_reps", "throughput"))
    if c.config.split:
        block["schedule"] = [{"perf": g, "toplev": n} for g, n in split_sets(c.config.level)]
    return {"tma": block}


class _Unavailable:
    """Stands in for the collector when the preflight said no: rep.json says why."""
    name = "tma"

    def __init__(self, pf: pre.Preflight):
        self.pf = pf

    def start(self, ctx: RepContext) -> None:
        pass

    def stop(self, ctx: RepContext) -> dict[str, Any]:
        return {"backend": self.pf.backend, "status": "unavailable", "reason": self.pf.reason}


def rep_collectors(options: RunSettings, kind: str) -> list[TmaCollector | _Unavailable]:
    extra = options.extra
    if extra.get("tma", "auto") == "off":
        return []
    if kind not in TMA_REP_KINDS[extra.get("tma_reps", "throughput")]:
        return []
    c, pf = _collector_for(options)
    return [c] if pf.available else [_Unavailable(pf)]
