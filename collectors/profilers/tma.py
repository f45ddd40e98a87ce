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

Interface for the runner (docs/tma-collection.md):
  c = TmaCollector(TmaConfig(backend="auto", level=4))
  pf = c.preflight()              # once per run -> manifest["tma"] = pf.to_manifest()
  c.start(ctx); ...window...; status = c.stop(ctx)   # per rep, when pf.available
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collectors.host import preflight as pre

BACKENDS = ("auto", "toplev", "perf", "off")
ATTACH = ("pid", "cpus")

# Split schedule: metric-group sets, one per rep, so no rep multiplexes L4 events. Each
# entry: (perf -M groups, toplev --nodes selector or None for "the whole level", min level).
# perf's group names exist since perf 6.1 (see fixtures perf6.1_list_details_cpu6-85.txt);
# toplev's selector: "!" = only these nodes, "X*" = X and its children.
SPLIT_SETS: list[tuple[list[str], str | None, int]] = [
    (["TopdownL1", "TopdownL2"], None, 1),
    (["tma_memory_bound_group"], "!Memory_Bound*", 3),
    (["tma_dram_bound_group", "tma_l3_bound_group"], "!DRAM_Bound*,L3_Bound*", 4),
    (["tma_l1_bound_group", "tma_store_bound_group"], "!L1_Bound*,Store_Bound*", 4),
    (["tma_core_bound_group", "tma_frontend_bound_group", "tma_bad_speculation_group",
      "tma_retiring_group"], "!Core_Bound*,Frontend_Bound*,Bad_Speculation*,Retiring*", 3),
]


class TmaConfigError(Exception):
    """A configuration the collector cannot run (message says what to change)."""


@dataclass
class RepContext:
    """What a per-rep collector needs from the runner."""
    rep_dir: Path
    window_s: float                 # the steady window length (s)
    pid: int | None = None          # server pid (perf -p covers all its threads)
    cpus: list[int] | None = None   # cores the server is pinned to (attach "cpus")
    rep: int = 1                    # 1-based rep number of this variant (selects split set)
    variant: str = ""
    case: str = ""
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class TmaConfig:
    backend: str = "auto"           # auto | toplev | perf | off
    level: int = 4                  # TopdownL1..L<level> / toplev -l<level>
    attach: str = "pid"             # pid | cpus
    split: bool = False             # one SPLIT_SETS entry per rep (no multiplexing)
    metric_no_group: bool = False   # perf --metric-no-group (fewer <not counted>, less exact)
    extra_args: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise TmaConfigError(f"--tma {self.backend!r}: choose one of {', '.join(BACKENDS)}")
        if self.attach not in ATTACH:
            raise TmaConfigError(f"--tma-attach {self.attach!r}: choose pid or cpus")
        if not 1 <= self.level <= 6:
            raise TmaConfigError(f"--tma-level {self.level}: choose 1..6 (4 = down to DRAM_Bound's "
                                 f"MEM_Latency/MEM_Bandwidth)")


# --------------------------------------------------------------------------------------
# Finding the tools.

def find_toplev() -> list[str] | None:
    """toplev command prefix: $TOPLEV (toplev.py path or name), else toplev / toplev.py on PATH."""
    want = os.environ.get("TOPLEV")
    cands = [want] if want else ["toplev", "toplev.py"]
    for c in cands:
        path = shutil.which(c) or (c if os.path.isfile(c) else None)
        if path:
            # A checkout's toplev.py may lack the exec bit: run it with python3.
            return [path] if os.access(path, os.X_OK) else [shutil.which("python3") or sys.executable, path]
    return None


def choose_backend(backend: str) -> str:
    if backend != "auto":
        return backend
    return "toplev" if find_toplev() else "perf"


def split_sets(level: int) -> list[tuple[list[str], str | None]]:
    """The group sets of the split schedule for a level (rep i uses entry (i-1) % len)."""
    if level <= 2:
        return [([f"TopdownL{i}" for i in range(1, level + 1)], None)]
    return [(groups, nodes) for groups, nodes, lvl in SPLIT_SETS if lvl <= level]


def toplev_cores(cpus: list[int], sys_root: str | Path = "/sys") -> str:
    """toplev --core spec (S<socket>-C<core>) for logical CPUs, from sysfs topology."""
    out: list[str] = []
    for cpu in cpus:
        topo = Path(sys_root) / f"devices/system/cpu/cpu{cpu}/topology"
        try:
            sock = int((topo / "physical_package_id").read_text())
            core = int((topo / "core_id").read_text())
        except (OSError, ValueError):
            raise TmaConfigError(f"cannot read {topo}: is CPU {cpu} online?") from None
        spec = f"S{sock}-C{core}"
        if spec not in out:
            out.append(spec)
    return ",".join(out)


# --------------------------------------------------------------------------------------
# Command lines.

def _window(w: float) -> str:
    return f"{w:g}"


def perf_command(perf: str, out: Path | str, window_s: float, level: int = 4, *,
                 pid: int | None = None, cpus: list[int] | None = None,
                 groups: list[str] | None = None, perf_version: tuple[int, ...] | None = None,
                 metric_no_group: bool = False, extra: list[str] | None = None) -> list[str]:
    """`perf stat -M TopdownL1..L<level> -j -o OUT (-p PID | -a -C CPUS) -- sleep W`."""
    metrics = groups or [f"TopdownL{i}" for i in range(1, level + 1)]
    cmd = [perf, "stat", "-M", ",".join(metrics), "-j", "-o", str(out)]
    # perf >= 6.4 computes thresholds with extra events; we want values, not colours, and
    # fewer events means less multiplexing. 6.1-6.3 do not know the option.
    if perf_version is None or perf_version >= (6, 4):
        cmd.append("--metric-no-threshold")
    if metric_no_group:
        cmd.append("--metric-no-group")
    cmd += _target(pid, cpus, perf=True)
    cmd += list(extra or [])
    return cmd + ["--", "sleep", _window(window_s)]


def toplev_command(toplev: list[str], out: Path | str, window_s: float, level: int = 4, *,
                   pid: int | None = None, cores: str | None = None,
                   nodes: str | None = None, extra: list[str] | None = None) -> list[str]:
    """`toplev -l<level> -v --no-desc -x, -o OUT (--pid PID | --global --core S0-C0) sleep W`."""
    cmd = list(toplev) + [f"-l{level}", "-v", "--no-desc", "-x,", "-o", str(out)]
    if nodes:
        cmd += ["--nodes", nodes]
    if pid is not None:
        cmd += ["--pid", str(pid)]
    elif cores:
        cmd += ["--global", "--core", cores]
    else:
        raise TmaConfigError("toplev needs a pid or the server's cores to attach to")
    cmd += list(extra or [])
    return cmd + ["sleep", _window(window_s)]


def _target(pid: int | None, cpus: list[int] | None, perf: bool) -> list[str]:
    if pid is not None:
        return ["-p", str(pid)]
    if cpus:
        return ["-a", "-C", ",".join(str(c) for c in cpus)]
    raise TmaConfigError("perf stat needs a pid or the server's cpus to attach to")


# --------------------------------------------------------------------------------------
# The collector.

@dataclass
class _Running:
    proc: subprocess.Popen
    out: Path
    cmd: list[str]
    started: float
    window_s: float
    stderr_file: Any


class TmaCollector:
    """Per-rep TMA collection. Not thread-safe; one rep at a time."""
    name = "tma"

    def __init__(self, config: TmaConfig | None = None, sys_root: str | Path = "/sys"):
        self.config = config or TmaConfig()
        self.backend = choose_backend(self.config.backend)
        self.sys_root = sys_root
        self._perf = pre.perf_binary()
        self._perf_version: tuple[int, ...] | None = None
        self._toplev = find_toplev()
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
                self._perf_version = pre.perf_version(self._perf)
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
            proc = subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            err.close()
            raise TmaConfigError(f"cannot start {cmd[0]}: {e.strerror}") from None
        self._run = _Running(proc, out, cmd, time.time(), ctx.window_s, err)

    def stop(self, ctx: RepContext, grace_s: float = 30.0) -> dict[str, Any]:
        """Wait for the tool (it stops after `sleep W`), save rc, parse, return the status."""
        run, self._run = self._run, None
        if run is None:
            raise RuntimeError("TmaCollector.stop called without start")
        deadline = run.started + run.window_s + grace_s
        rc: int | None = None
        note = None
        try:
            rc = run.proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            # SIGINT makes perf stat / toplev print what they counted so far.
            os.killpg(run.proc.pid, signal.SIGINT)
            try:
                rc = run.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(run.proc.pid, signal.SIGKILL)
                rc = run.proc.wait()
            note = f"the tool outlived the window by {grace_s:g} s and was interrupted"
        finally:
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
        from analysis.tma import model as atma
        from analysis.tma.formats import parse_file
        base = {"backend": self.backend, "file": out.name, "rc": rc,
                "files": sorted(p.name for p in rep_dir.glob("tma.*"))}
        if not out.exists():
            # The tool died before opening -o (bad option, no permission): its words are in stderr.
            out.write_text("")
        try:
            result = parse_file(out)
        except atma.NoPmuError as e:
            return {**base, "status": "unavailable",
                    "reason": f"no hardware PMU: {e.evidence}. {pre.NO_PMU_FIX}"}
        except atma.TmaParseError as e:
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


def unavailable_status(pf: pre.Preflight) -> dict[str, Any]:
    """The per-rep status when the preflight already said no (runner skips start/stop)."""
    return {"backend": pf.backend, "status": "unavailable", "reason": pf.reason}


# --------------------------------------------------------------------------------------
# Runner plugin hooks (collectors/run.py PLUGIN_MODULES): flags, per-rep collectors and
# the manifest's "tma" block. Options arrive as argparse dests in RunOptions.extra.

TMA_REP_KINDS = {"throughput": ("throughput",), "profile": ("profile",),
                 "all": ("throughput", "profile")}


def add_run_arguments(parser) -> None:
    g = parser.add_argument_group(
        "TMA (top-down) collection",
        "perf stat -M TopdownL1..L4 or toplev, attached to the server for the steady window; "
        "raw output in <variant>/<rep>/tma.*. Needs a hardware PMU and an Intel CPU: without "
        "them the run goes on and the manifest says why (python -m collectors doctor).")
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


def config_from_options(options) -> TmaConfig:
    extra = getattr(options, "extra", None) or {}
    return TmaConfig(backend=extra.get("tma", "auto"), level=int(extra.get("tma_level", 4)),
                     attach=extra.get("tma_attach", "pid"), split=bool(extra.get("tma_split", False)))


_PREFLIGHTS: dict[tuple, tuple[TmaCollector, pre.Preflight]] = {}


def _collector_for(options) -> tuple[TmaCollector, pre.Preflight]:
    cfg = config_from_options(options)
    key = (cfg.backend, cfg.level, cfg.attach, cfg.split)
    if key not in _PREFLIGHTS:
        c = TmaCollector(cfg)
        _PREFLIGHTS[key] = (c, c.preflight())
    return _PREFLIGHTS[key]


def manifest_sections(options, host) -> dict[str, Any]:
    c, pf = _collector_for(options)
    block = pf.to_manifest()
    block.update(level=c.config.level, attach=c.config.attach, split=c.config.split,
                 reps=(getattr(options, "extra", None) or {}).get("tma_reps", "throughput"))
    if c.config.split:
        block["schedule"] = [{"perf": g, "toplev": n} for g, n in split_sets(c.config.level)]
    return {"tma": block}


class _Unavailable:
    """Stands in for the collector when the preflight said no: rep.json says why."""
    name = "tma"

    def __init__(self, pf: pre.Preflight):
        self.pf = pf

    def start(self, ctx) -> None:
        pass

    def stop(self, ctx) -> dict[str, Any]:
        return unavailable_status(self.pf)


def rep_collectors(options, kind: str) -> list:
    extra = getattr(options, "extra", None) or {}
    if extra.get("tma", "auto") == "off":
        return []
    if kind not in TMA_REP_KINDS[extra.get("tma_reps", "throughput")]:
        return []
    c, pf = _collector_for(options)
    return [c] if pf.available else [_Unavailable(pf)]
