"""A run's preflight: what would stop it minutes later, refused in its first seconds, before
any build or preload (plan_run calls `check` before layouts.build_all), each with its fix.

- **perf permission** (the perf profile, the default, or TMA asked for by name): root, a
  process or a perf binary with CAP_PERFMON (or CAP_SYS_ADMIN), or
  kernel.perf_event_paranoid <= 1. At 2 a non-root perf records user space only (it falls
  back to cpu-clock:u without a word): the server's kernel time, its syscalls and networking,
  is missing from every profile, and the CPU per operation the function rows compare is not
  the one a root run measures. Above 2 (levels Debian's and Ubuntu's kernels add) perf refuses.
- **PMU**, only when TMA is asked for by name (`--tma perf|toplev|topdown-tool`; `auto`
  goes on without and the manifest says why): the probe and the fix of
  collectors/host/preflight.py (`perf stat -e cycles`), and its permission rule for the
  attach mode asked.
- **memory**: the case's dataset (collectors/workload/working_set.py dataset_bytes) with the
  pairing's headroom (x1.5), twice when the run will load two servers at once, against the
  memory available now (MemAvailable). `--paired` where two would not fit the host at all
  is refused here rather than after the builds.
- **disk**: the builds the cache lacks (BUILD_BYTES each, each layout a build), the dataset
  snapshot it lacks (the dataset's bytes, an upper bound of the RDB), the in-cache control's
  where the run makes one (at most its share of the last-level cache) and the run directory
  (RUN_DIR_BYTES: a rep's perf.data before folding, with DWARF unwinding), summed per file
  system, against its free space.
- **load generator**: a MEMTIER= that points nowhere, where memtier is asked for; a bin:
  variant's redis-benchmark (valkey-benchmark) beside it or on PATH unless memtier drives the
  load (a built variant brings its own).

Facts are probed once (`probe`: /proc, statvfs, the build cache; perf only when TMA is named)
and judged by pure functions, so tests give any facts.
"""
from __future__ import annotations

import dataclasses
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from analysis.errors import UserError
from analysis.inputs.case import Case, binary_size
from analysis.toolpaths import perf_binary
from collectors.host import preflight as pre
from collectors.load import memtier
from collectors.runner import pairing, stall_control
from collectors.runner.layouts import layout_seeds
from collectors.runner.options import RunOptions
from collectors.variants.binary import companion_tools
from collectors.variants.builder import cache_dir, cached_build
from collectors.variants.spec import VariantSpec
from collectors.workload.working_set import dataset_bytes

BUILD_BYTES = 256 * 2**20       # a Redis 8.0 tree built at -O2 -g: 181 MiB measured
RUN_DIR_BYTES = 2**30           # perf.data of a rep before folding: 16 KiB a DWARF sample at 2 kHz
CAP_SYS_ADMIN, CAP_PERFMON = 21, 38
TMA_BY_NAME = ("perf", "toplev", "topdown-tool")     # the TMA plugin's --tma values but auto/off
PERF_FIX = ("run as root, or allow perf for your user: sudo sysctl kernel.perf_event_paranoid=1 "
            "(until reboot; to keep it: echo kernel.perf_event_paranoid=1 | sudo tee "
            "/etc/sysctl.d/60-perf.conf); or measure throughput only: --profile off")

Log = Callable[[str], None]


class PreflightError(UserError):
    """What the run lacks, found before anything was built; the hint says how to fix each."""


@dataclass
class Refusal:
    check: str          # perf | pmu | memory | disk | load-generator
    problem: str
    fix: str


@dataclass
class Facts:
    paranoid: int | None = None
    root: bool = False
    perfmon: str | None = None          # who has CAP_PERFMON/CAP_SYS_ADMIN: "this process", perf's path
    mem_available: int | None = None
    mem_total: int | None = None
    free: dict[int, int] = field(default_factory=dict)   # file system (st_dev) -> free bytes
    pmu: pre.HostFacts | None = None    # probed only when TMA is asked for by name


# ---------------------------------------------------------------- judging (pure)

def judge_perf(f: Facts) -> Refusal | None:
    """The perf profile's permission: None when perf can record the server whole."""
    p = f.paranoid
    if f.root or f.perfmon:
        return None
    if p is None:
        return Refusal("perf", "/proc/sys/kernel/perf_event_paranoid does not exist: this kernel "
                       "has no perf events (CONFIG_PERF_EVENTS)", "run on a kernel with perf events")
    if p <= 1:
        return None
    who = f"this is not root (uid {os.getuid()}) and neither it nor perf has CAP_PERFMON"
    if p == 2:
        return Refusal("perf", f"kernel.perf_event_paranoid={p} and {who}: perf would record the "
                       f"server's user space only, so its kernel time (syscalls, networking) would "
                       f"be missing from every profile and the function rows would not be the CPU "
                       f"time per operation a root run measures", PERF_FIX)
    return Refusal("perf", f"kernel.perf_event_paranoid={p} (a level Debian's and Ubuntu's kernels "
                   f"add) and {who}: perf refuses every non-root user", PERF_FIX)


def judge_tma(f: Facts, backend: str, attach: str) -> list[Refusal]:
    """TMA asked for by name: collectors/host/preflight.py's PMU and permission checks."""
    if f.pmu is None:
        return []
    found = [pre.check_pmu(f.pmu), pre.check_paranoid(f.pmu, attach, backend)]
    return [Refusal("pmu" if x.check == "pmu" else "perf", f"--tma {backend}: {x.message}", x.fix or "")
            for x in found if x.blocking and not x.ok]


def same_build(a: VariantSpec, b: VariantSpec) -> bool:
    """One binary for both (so a pairing of them runs one server when their config differs)."""
    def build(s: VariantSpec) -> tuple:
        return (s.kind, s.source, s.ref, s.suite, tuple(s.patches), tuple(s.make_flags), s.layout)
    return build(a) == build(b)


def servers_at_once(case: Case, specs: list[VariantSpec], opts: RunOptions,
                    mem_total: int | None) -> tuple[int, Refusal | None]:
    """How many servers hold the dataset at once (pairing.choose's decision, foreseen before the
    builds), and the refusal of a --paired that cannot fit two on this host at all."""
    if opts.pairing == "unpaired" or len(specs) != 2 or case.workload.tool == "rdb-load":
        return 1, None
    a, b = specs
    if same_build(a, b) and a.config != b.config:
        return 1, None                   # one server, the settings switched by CONFIG SET
    room = pairing.room_for_two(case, mem_total)
    if room is None:
        return 2, None
    if opts.pairing == "paired" and not same_build(a, b):
        return 1, Refusal("memory", f"--paired: {room}", "run without --paired (separate reps, "
                          "wider intervals) or at a smaller --size")
    return 1, None                       # pairing falls back to one server at a time


def judge_memory(case: Case, servers: int, f: Facts) -> Refusal | None:
    one = pairing.TWO_SERVER_HEADROOM * dataset_bytes(case.dataset)
    need = servers * one
    if not need or f.mem_available is None or need <= f.mem_available:
        return None
    what = (f"{servers} servers loaded at once (the run pairs them)" if servers > 1 else "the server")
    fix = ("free memory, run one server at a time with --unpaired (wider intervals), or a "
           "smaller --size" if servers > 1 else "free memory, or a smaller --size (tiny, small) "
           "or --set dataset.keys=N")
    total = f" of {binary_size(f.mem_total)}" if f.mem_total else ""
    return Refusal("memory", f"the dataset of {case.name} at size {case.size} "
                   f"({case.dataset.keys:,} keys, about {binary_size(dataset_bytes(case.dataset))} "
                   f"each, x{pairing.TWO_SERVER_HEADROOM:g} for the allocator) needs about "
                   f"{binary_size(need)} for {what}; this host has {binary_size(f.mem_available)}"
                   f"{total} available now", fix)


def judge_disk(needs: list[tuple[Path, int, str]], devices: dict[str, int], f: Facts) -> Refusal | None:
    """needs: (where, bytes, what); devices: str(where) -> st_dev."""
    per: dict[int, list[tuple[Path, int, str]]] = {}
    for n in needs:
        per.setdefault(devices[str(n[0])], []).append(n)
    short = []
    for dev, ns in per.items():
        need, free = sum(n[1] for n in ns), f.free.get(dev)
        if free is not None and need > free:
            parts = ", ".join(f"{what} {binary_size(b)} in {where}" for where, b, what in ns)
            short.append(f"{binary_size(need)} needed ({parts}), {binary_size(free)} free there")
    if not short:
        return None
    return Refusal("disk", "; ".join(short), "free space there, or point the build cache at a larger "
                   "disk (STALLSCOPE_CACHE=DIR) and the run directory with --out DIR")


def judge_load(case: Case, specs: list[VariantSpec], opts: RunOptions) -> list[Refusal]:
    """A bin: variant's benchmark; a MEMTIER= that points nowhere raises MemtierError (asked for)."""
    wants_memtier = opts.load_generator == "memtier" or (opts.load_generator == "auto"
                                                         and case.workload.tool == "memtier")
    if (wants_memtier and memtier.find_memtier()) or case.workload.tool == "rdb-load":
        return []
    out = []
    for s in (s for s in specs if s.kind == "binary"):
        if not os.path.isfile(s.source):
            out.append(Refusal("load-generator", f"variant {s.name}: server binary {s.source} does "
                               f"not exist", "give the path of a built redis-server/valkey-server"))
        elif companion_tools(s.source)[0] is None:
            out.append(Refusal("load-generator", f"variant {s.name}: no redis-benchmark/"
                               f"valkey-benchmark beside {s.source} nor on PATH",
                               "put the benchmark its build made (src/redis-benchmark) beside it "
                               "or on PATH, or build the variant (debsrc:, git:, dir:)"))
    return out


# ---------------------------------------------------------------- probing

def _caps_effective(status: Path = Path("/proc/self/status")) -> int:
    try:
        m = re.search(r"^CapEff:\s*([0-9a-f]+)", status.read_text(), re.M)
    except OSError:
        return 0
    return int(m.group(1), 16) if m else 0


def _file_caps(path: str) -> int:
    """The permitted capabilities a file grants when run (its security.capability, effective)."""
    try:
        raw = os.getxattr(path, "security.capability")
    except OSError:
        return 0
    if len(raw) < 12:
        return 0
    magic, lo = struct.unpack_from("<II", raw)
    hi = struct.unpack_from("<I", raw, 12)[0] if len(raw) >= 16 else 0
    return (lo | hi << 32) if magic & 1 else 0


def perfmon_holder() -> str | None:
    """Who lets perf past the paranoid level without root: this process or perf itself."""
    def has(caps: int) -> bool:
        return any(caps >> bit & 1 for bit in (CAP_PERFMON, CAP_SYS_ADMIN))
    if has(_caps_effective()):
        return "this process"
    perf = perf_binary()
    return perf if perf and has(_file_caps(os.path.realpath(perf))) else None


def _meminfo(text: str) -> dict[str, int]:
    return {k: int(v) * 1024 for k, v in re.findall(r"^(\w+):\s+(\d+) kB", text, re.M)}


def _existing(p: Path) -> Path:
    p = Path(os.path.abspath(p.expanduser()))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def disk_needs(case: Case, specs: list[VariantSpec], opts: RunOptions, out: Path) -> list[tuple[Path, int, str]]:
    """(where, bytes, what) of everything the run will write: builds and the snapshot the cache
    lacks, and the run directory."""
    cache, seen, needs = cache_dir(), set(), []
    seeds: list[int | None] = [None] if opts.layouts <= 1 else list(layout_seeds(opts.layouts))
    for s in (s for s in specs if s.kind != "binary"):
        for seed in seeds:
            sp = s if seed is None else dataclasses.replace(s, layout=seed)
            key = (sp.kind, sp.source, sp.ref, sp.suite, tuple(sp.patches), tuple(sp.make_flags), sp.layout)
            if key not in seen and cached_build(sp, cache) is None:
                needs.append((cache / "builds", BUILD_BYTES,
                              f"the build of {s.name}" + (f" (layout {seed})" if seed else "")))
            seen.add(key)
    stem = f"{case.name.replace('/', '_')}-{case.size}-"
    datasets = cache / "datasets"
    # the snapshot's key needs the built server's version: any snapshot of this case and size
    # counts as there, and the in-cache control's (same case and size, fewer keys) as a second
    have = sum(p.name.startswith(stem) and p.suffix == ".rdb" for p in datasets.iterdir()) \
        if datasets.is_dir() else 0
    if case.dataset.kind != "none" and have < 1:
        needs.append((datasets, dataset_bytes(case.dataset), "the dataset snapshot"))
    control = control_bytes(case, opts)
    if control and have < 2:
        needs.append((datasets, control, "the in-cache control's dataset snapshot"))
    needs.append((out, RUN_DIR_BYTES, "the run directory"))
    return needs


def control_bytes(case: Case, opts: RunOptions) -> int:
    """An upper bound of the in-cache control's dataset (collectors/runner/stall_control.py:
    at most its FRACTION of the last-level cache), 0 where the run makes no control (not
    asked, no dataset or cache known, or a dataset that fits that share is its own control)."""
    ws, ds = case.working_set, case.dataset
    if not stall_control.wanted(opts) or ds.kind == "none" or ws is None or not ws.llc_bytes:
        return 0
    room = int(stall_control.FRACTION * ws.llc_bytes)
    return room if dataset_bytes(ds) > room else 0


def probe(opts: RunOptions, needs: list[tuple[Path, int, str]]) -> tuple[Facts, dict[str, int]]:
    """This host's facts for the checks (perf is run only when TMA is asked for by name)."""
    f = Facts()
    host = pre.probe_host(run_perf=opts.extra.get("tma") in TMA_BY_NAME)
    f.paranoid, f.root = host.paranoid, host.is_root
    if opts.extra.get("tma") in TMA_BY_NAME:
        f.pmu = host
    if not f.root and f.paranoid is not None and f.paranoid > 1:
        f.perfmon = perfmon_holder()
    try:
        mem = _meminfo(Path("/proc/meminfo").read_text())
    except OSError:
        mem = {}
    f.mem_available, f.mem_total = mem.get("MemAvailable"), mem.get("MemTotal")
    devices = {}
    for where, _, _ in needs:
        at = _existing(where)
        devices[str(where)] = os.stat(at).st_dev
        vfs = os.statvfs(at)
        f.free[devices[str(where)]] = vfs.f_bavail * vfs.f_frsize
    return f, devices


def check(case: Case, specs: list[VariantSpec], opts: RunOptions, out: Path, log: Log) -> None:
    """Refuse the run (PreflightError, every problem with its fix) before anything is built or
    loaded; else say in one line what it found."""
    needs = disk_needs(case, specs, opts, out)
    f, devices = probe(opts, needs)
    servers, paired_refusal = servers_at_once(case, specs, opts, f.mem_total)
    found = [r for r in (judge_perf(f) if opts.profile == "perf" else None, paired_refusal,
                         judge_memory(case, servers, f), judge_disk(needs, devices, f)) if r]
    found += judge_tma(f, str(opts.extra.get("tma")), str(opts.extra.get("tma_attach", "pid")))
    found += judge_load(case, specs, opts)
    if found:
        problems = "\n".join(f"  {r.check}: {r.problem}" for r in found)
        raise PreflightError(f"refused before any build or preload:\n{problems}",
                             hint="; ".join(f"{r.check}: {r.fix}" for r in found))
    log(f"stallscope run: preflight: {summary(f, opts, servers, case, needs)}")


def summary(f: Facts, opts: RunOptions, servers: int, case: Case, needs: list[tuple[Path, int, str]]) -> str:
    """What a run that passed was checked against, in one line."""
    perf = ("not used" if opts.profile != "perf" else "root" if f.root else
            f"CAP_PERFMON ({f.perfmon})" if f.perfmon else f"perf_event_paranoid={f.paranoid}")
    mem = pairing.TWO_SERVER_HEADROOM * dataset_bytes(case.dataset) * servers
    builds = sum(1 for n in needs if n[2].startswith("the build"))
    return (f"perf {perf}; memory {binary_size(mem)} for {servers} server{'s' * (servers > 1)}, "
            f"{binary_size(f.mem_available or 0)} available; disk {binary_size(sum(n[1] for n in needs))} "
            f"({builds} build{'s' * (builds != 1)} to make), free space checked")
