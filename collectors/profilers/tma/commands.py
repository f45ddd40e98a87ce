"""TMA command lines: which tool, which metric groups per rep, attached how, per vendor.

Intel: `perf stat -M TopdownL1..L<level> -j` or toplev (`-l<level> -v -x,`). AMD Zen 4/5:
`perf stat -M PipelineL1,PipelineL2 -j` (toplev has no AMD model; two levels only). Arm:
`perf stat -M TopdownL1 -j` (Cycle_Accounting on Neoverse N1, whose perf metrics have no
TopdownL1) or
Arm's topdown-tool (CSV). The tool attaches to the server's pid (every thread, io-threads
too) or to the cores it is pinned to, for the steady window only: perf and toplev run
`sleep W` as their workload; topdown-tool cannot combine a pid with a command, so it runs
until the collector interrupts it (Ctrl-C, SIGINT) at the window's end. The split schedule
gives every rep one metric-group set, so nothing multiplexes (Intel only: AMD's and Arm's
groups are one set). docs/tma-collection.md has the details.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import UserError
from collectors.host.cpuid import CpuId
from collectors.host.toplev import find_toplev

BACKENDS = ("auto", "toplev", "perf", "off", "topdown-tool")
ATTACH = ("pid", "cpus")
# the refactored topdown-tool's CSV directory beside tma.csv (collect_topdown_csv)
TOPDOWN_CSV_DIR = "tma.topdown-tool"

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


class TmaConfigError(UserError):
    """A configuration the collector cannot run (message says what to change)."""


@dataclass
class TmaConfig:
    backend: str = "auto"           # auto | toplev | perf | topdown-tool | off
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


def config_from_options(options) -> TmaConfig:
    """The TMA flags of a run (options.extra, by RunFlag.dest) as a TmaConfig."""
    extra = options.extra
    return TmaConfig(backend=extra.get("tma", "auto"), level=int(extra.get("tma_level", 4)),
                     attach=extra.get("tma_attach", "pid"), split=bool(extra.get("tma_split", False)))


# --------------------------------------------------------------------------------------
# Choosing the tool and the metric groups.

def vendor_of(cpu: CpuId | None) -> str:
    """intel | amd | arm | other; no CPU identity (not probed yet) or an unidentified one:
    Intel's, as before."""
    if cpu is None or cpu.vendor in ("intel", "unknown"):
        return "intel"
    return cpu.vendor if cpu.vendor in ("amd", "arm") else "other"


def choose_backend(backend: str, cpu: CpuId | None = None) -> str:
    """auto: Intel -> toplev when one was put there ($TOPLEV or on PATH), else perf; AMD ->
    perf (toplev has no AMD model); Arm -> topdown-tool when found ($TOPDOWN_TOOL or on
    PATH), else perf. The toplev `make setup` installs in the venv is not taken by auto
    (only by --tma toplev): perf also counts TMA in the paired windows and needs no event
    list, which toplev downloads on its first run on a CPU."""
    if backend != "auto":
        return backend
    vendor = vendor_of(cpu)
    if vendor == "arm":
        return "topdown-tool" if find_topdown_tool() else "perf"
    if vendor == "intel":
        return "toplev" if find_toplev(installed=False) else "perf"
    return "perf"


def effective_level(level: int, cpu: CpuId | None, backend: str = "perf") -> int:
    """The level the CPU's groups can give: AMD has two (no level 3), perf on Arm one
    (TopdownL1); topdown-tool's stages are chosen from the level as asked."""
    if cpu is None or cpu.max_level is None or backend == "topdown-tool":
        return level
    return min(level, cpu.max_level)


def has_tree(cpu: CpuId | None) -> bool:
    """Is there a top-down tree to plan? Not on a CPU whose method is none (AMD before Zen
    4, Hygon ...); a CPU not identified yet plans Intel's, as before."""
    return cpu is None or cpu.has_tree


def perf_groups(level: int, cpu: CpuId | None = None) -> list[str]:
    """The `perf stat -M` metric groups for a level on this CPU (Intel's without one; none
    where the CPU has no top-down tree)."""
    if cpu is not None:
        return cpu.perf_groups(level)
    return [f"TopdownL{i}" for i in range(1, level + 1)]


def split_sets(level: int, cpu: CpuId | None = None) -> list[tuple[list[str], str | None]]:
    """The group sets of the split schedule for a level (rep i uses entry (i-1) % len).
    AMD and Arm: one set (their few groups are not split further: whether they fit the
    counters without multiplexing is not published; the rep status records multiplexing).
    No set at all on a CPU without a top-down tree."""
    if not has_tree(cpu):
        return []
    if vendor_of(cpu) != "intel":
        return [(perf_groups(effective_level(level, cpu), cpu), None)]
    if level <= 2:
        return [([f"TopdownL{i}" for i in range(1, level + 1)], None)]
    return [(groups, nodes) for groups, nodes, lvl in SPLIT_SETS if lvl <= level]


def find_topdown_tool() -> list[str] | None:
    """Arm's topdown-tool command prefix: $TOPDOWN_TOOL (path or name), else `topdown-tool`
    on PATH. A checkout's script without the exec bit runs with the interpreter of its #!."""
    want = os.environ.get("TOPDOWN_TOOL")
    name = want or "topdown-tool"
    path = shutil.which(name) or (name if os.path.isfile(name) else None)
    if not path:
        return None
    if os.access(path, os.X_OK):
        return [path]
    try:
        first = Path(path).read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        first = ""
    interp = first[2:].split() if first.startswith("#!") else []
    return (interp or [shutil.which("python3") or sys.executable]) + [path]


# topdown-tool has had two command lines (Arm Telemetry Solution, tools/topdown_tool):
#  "file": the first tool (README.md up to "Topdown Tool Refactor"): --csv FILE,
#          --perf-output FILE (else perf.stat.txt in the working directory), -a/--all-cpus,
#          -C/--core, -p/--pid, -m/--metric-group, -s/--stages, --perf-path.
#  "dir":  the refactored "Arm Top-Down tool" (README.md + README.CPU.md): no --csv; CSV
#          with --cpu-generate-csv metrics --csv-output-path DIR, written to
#          DIR/<YYYY_MM_DD_HH_MM_SS>/cpu/<product>_metrics.csv (with -C: per-core files and
#          <product>_core_aggregate_(<cores>)_metrics.csv); -C/--core, -p/--pid,
#          -m/--cpu-metric-group, -s/--cpu-stages, --perf-path; no -a (no command and no
#          pid = system-wide); with -p it counts system-wide while the pids live (its README).
# Both refuse a command together with -p ("Cannot specify a command and a PID") and stop
# on Ctrl-C. Which one is installed is read from its --help (topdown_tool_csv_style).
TOPDOWN_CSV_STYLES = ("file", "dir")


def topdown_tool_csv_style(tool: list[str]) -> str:
    """'dir' when `topdown-tool --help` offers --csv-output-path, 'file' when it offers
    --csv; TmaConfigError when it says neither (its words quoted)."""
    try:
        p = subprocess.run(tool + ["--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TmaConfigError(f"cannot run {' '.join(tool)} --help: {e}") from None
    text = p.stdout + p.stderr
    if "--csv-output-path" in text:
        return "dir"
    if "--csv" in text:
        return "file"
    last = next((l.strip() for l in reversed(text.splitlines()) if l.strip()), f"exit code {p.returncode}")
    raise TmaConfigError(f"{' '.join(tool)} --help names neither --csv nor --csv-output-path: "
                         f"is this Arm's topdown-tool? ({last})")


def collect_topdown_csv(out: Path) -> str | None:
    """The refactored topdown-tool writes <dir>/<timestamp>/cpu/<product>_metrics.csv (with
    -C: one per core and <product>_core_aggregate_(<cores>)_metrics.csv): copy the
    product-level or aggregate file to tma.csv. Returns a note for the status, or None."""
    found = sorted(out.with_name(TOPDOWN_CSV_DIR).glob("*/cpu/*_metrics.csv"))
    whole = [p for p in found if "_core_" not in p.name or "_core_aggregate_" in p.name]
    if len(whole) == 1:
        shutil.copyfile(whole[0], out)
        return None
    if not found:
        return f"topdown-tool wrote no *_metrics.csv under {TOPDOWN_CSV_DIR}/"
    return (f"topdown-tool wrote {len(whole)} whole-CPU metrics CSVs under {TOPDOWN_CSV_DIR}/ "
            f"({', '.join(p.name for p in whole) or 'only per-core ones'}); none copied to tma.csv")


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
    """`perf stat -M GROUPS -j -o OUT (-p PID | -a -C CPUS) -- sleep W`; GROUPS default to
    Intel's TopdownL1..L<level> (perf_groups(level, cpu) gives AMD's and Arm's)."""
    metrics = groups or [f"TopdownL{i}" for i in range(1, level + 1)]
    cmd = [perf, "stat", "-M", ",".join(metrics), "-j", "-o", str(out)]
    # perf >= 6.4 computes thresholds with extra events; we want values, not colours, and
    # fewer events means less multiplexing. 6.1-6.3 do not know the option.
    if perf_version is None or perf_version >= (6, 4):
        cmd.append("--metric-no-threshold")
    if metric_no_group:
        cmd.append("--metric-no-group")
    cmd += _target(pid, cpus)
    cmd += list(extra or [])
    return cmd + ["--", "sleep", _window(window_s)]


def topdown_tool_command(tool: list[str], out: Path | str, level: int = 1, *,
                         pid: int | None = None, cpus: list[int] | None = None,
                         csv_style: str = "file", perf: str | None = None,
                         perf_output: Path | str | None = None,
                         extra: list[str] | None = None) -> list[str]:
    """Arm topdown-tool, stopped by SIGINT at the window's end (no workload: it refuses a
    command beside -p). Level 1: Stage 1 only (`-s topdown`); deeper: all stages (Stage 1
    and the Stage-2 groups). "file": `--csv OUT`; "dir": `--cpu-generate-csv metrics
    --csv-output-path OUT` (OUT a directory; the collector copies the metrics CSV to tma.csv).
    """
    if csv_style not in TOPDOWN_CSV_STYLES:
        raise TmaConfigError(f"topdown-tool CSV style {csv_style!r}: one of {', '.join(TOPDOWN_CSV_STYLES)}")
    cmd = list(tool) + ["-s", "topdown" if level <= 1 else "all"]
    if csv_style == "file":
        cmd += ["--csv", str(out)]
        if perf_output:
            cmd += ["--perf-output", str(perf_output)]
    else:
        cmd += ["--cpu-generate-csv", "metrics", "--csv-output-path", str(out)]
    if perf:
        cmd += ["--perf-path", perf]
    if pid is not None:
        cmd += ["-p", str(pid)]
    elif cpus:
        # The first tool's -C without -a counts nothing system-wide (perf's -C needs -a);
        # the refactored one has no -a and counts the cores system-wide by itself.
        cmd += (["-a"] if csv_style == "file" else []) + ["-C", ",".join(str(c) for c in cpus)]
    else:
        raise TmaConfigError("topdown-tool needs a pid or the server's cpus to attach to")
    return cmd + list(extra or [])


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


def _target(pid: int | None, cpus: list[int] | None) -> list[str]:
    if pid is not None:
        return ["-p", str(pid)]
    if cpus:
        return ["-a", "-C", ",".join(str(c) for c in cpus)]
    raise TmaConfigError("perf stat needs a pid or the server's cpus to attach to")
