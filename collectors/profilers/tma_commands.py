"""TMA command lines: which tool, which metric groups per rep, attached how.

`perf stat -M TopdownL1..L<level> -j` or toplev (`-l<level> -v -x,`), attached to the
server's pid (every thread, io-threads too) or to the cores it is pinned to, for the
steady window only (the tool's workload is `sleep W`). The split schedule gives every rep
one metric-group set, so nothing multiplexes. docs/tma-collection.md has the details.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from collectors.host.pmu import find_toplev

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
# Choosing the tool and the metric groups.

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
    cmd += _target(pid, cpus)
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


def _target(pid: int | None, cpus: list[int] | None) -> list[str]:
    if pid is not None:
        return ["-p", str(pid)]
    if cpus:
        return ["-a", "-C", ",".join(str(c) for c in cpus)]
    raise TmaConfigError("perf stat needs a pid or the server's cpus to attach to")
