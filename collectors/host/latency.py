"""This host's DRAM and L3 load-to-use latency: a dependent-load pointer chase
(collectors/host/chase.c, the method of lmbench's lat_mem_rd and Intel MLC's idle latency;
docs/memory-latency.md).

`measure(llc_bytes)` compiles the probe once per source (cached under the build cache by the
source's sha256), runs it pinned to one CPU through collectors.host.procs over three
buffers, sized from the host's caches and memory (`buffer_sizes`):

  DRAM   4x the LLC, at least 256 MiB, at most half the available memory
  L3     LLC/4, at least 4x the L2
  check  4x the L2: when the L3 buffer measures more than twice it, the L3 buffer was not
         served by the L3 here (a guest's share of a big L3), and the check's figure is the
         L3's; the method says so

and reports each one's median ns per load over its reps, with the distribution-free interval
of a median (order statistics, analysis.ranks).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from scipy import stats as sps

from analysis.errors import Failed
from analysis.inputs.latency import PAGES, MemoryLatency
from analysis.ranks import order_stat_interval
from collectors.host import machine, procs
from collectors.variants.builder import cache_dir

SOURCE = Path(__file__).with_name("chase.c")
CFLAGS = ("-O2",)
MiB = 1 << 20
MIN_DRAM = 256 * MiB          # the DRAM buffer's floor, whatever the LLC
UNKNOWN_DRAM, UNKNOWN_LLC = 1 << 30, 8 * MiB    # the buffers when the LLC is not known
REPS = 15                     # timed reps a buffer: the median's interval is [x(4), x(12)], 96.5%
DRAM_LOADS = 1 << 17          # dependent loads a rep: 13-100 ms at 100-700 ns
LLC_LOADS = 1 << 17
DRAM_WARM = 1 << 18           # loads before the first rep (the DRAM buffer is not walked whole)
SERVED_SHARE = 0.2            # a buffer the L3 serves: under 20% of the way from L3's latency to DRAM's
CHECK_RATIO = 2.0             # an L3 buffer slower than this x the 4x-L2 buffer is not the L3's
SEED = 1
TIMEOUT_S = 300.0
CONFIDENCE = 0.95


class LatencyError(Failed):
    """The latency probe could not be built or run; the message says why, the hint how to fix."""


@dataclass(frozen=True)
class Buffers:
    """The three buffers' sizes in bytes (check None: not run) and what the method must say."""
    dram: int
    llc: int
    check: int | None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Probe:
    """One run of the probe: ns per load of each rep, the share on huge pages, its output."""
    values: list[float]
    huge_bytes: int | None
    raw: str


def _mib(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n // 1024} KiB"


def _round(n: int, unit: int) -> int:
    return max(unit, n // unit * unit)


def buffer_sizes(llc_bytes: int | None, l2_bytes: int | None,
                 available_bytes: int | None) -> Buffers:
    """The buffers for a host with these caches and this much available memory (None:
    unknown). Raises LatencyError when the memory cannot hold a DRAM buffer of 2x the LLC."""
    notes = []
    if llc_bytes:
        dram, llc = max(4 * llc_bytes, MIN_DRAM), llc_bytes // 4
    else:
        dram, llc = UNKNOWN_DRAM, UNKNOWN_LLC
        notes.append(f"The LLC's size is not known here, so the buffers are {_mib(dram)} and "
                     f"{_mib(llc)}: the L3 figure may be the L2's or DRAM's.")
    if l2_bytes:
        llc = max(llc, 4 * l2_bytes)
    if available_bytes is not None and dram > available_bytes // 2:
        cap = _round(available_bytes // 2, 2 * MiB)
        floor = max(2 * (llc_bytes or 0), 2 * llc, 64 * MiB)
        if cap < floor:
            raise LatencyError(
                f"only {_mib(available_bytes)} of memory is available: a DRAM buffer of "
                f"{_mib(cap)} (half of it) is under twice the LLC, the L3 would serve much of it",
                hint=f"free memory (the probe needs {_mib(2 * floor)} available) and run again")
        notes.append(f"The DRAM buffer is capped at {_mib(cap)} (half the {_mib(available_bytes)} "
                     f"available), under {_mib(dram)}: more of its loads hit the L3, so the DRAM "
                     f"figure is low.")
        dram = cap
    check = 4 * l2_bytes if l2_bytes and llc > 2 * 4 * l2_bytes else None
    return Buffers(_round(dram, 2 * MiB), _round(llc, 4096), check, notes)


def available_memory(meminfo: str | None = None) -> int | None:
    """MemAvailable of /proc/meminfo in bytes; None when it cannot be read."""
    if meminfo is None:
        try:
            meminfo = Path("/proc/meminfo").read_text()
        except OSError:
            return None
    m = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.M)
    return int(m.group(1)) * 1024 if m else None


def compiler() -> str:
    """$CC, else cc, gcc or clang on PATH; LatencyError naming the fix when there is none."""
    for cc in filter(None, (os.environ.get("CC"), "cc", "gcc", "clang")):
        path = shutil.which(cc)
        if path:
            return path
    raise LatencyError("no C compiler (cc, gcc or clang) on PATH: the memory-latency probe "
                       f"({SOURCE.name}) is compiled on the host it measures",
                       hint="install one (Debian/Ubuntu: sudo apt-get install gcc; `make setup` "
                            "does) or set CC to a compiler's path")


def binary(log: Callable[[str], None] | None = None) -> Path:
    """The compiled probe, built once per source and flags: <cache>/latency/chase-<sha256>."""
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(CFLAGS).encode()).hexdigest()[:16]
    exe = cache_dir() / "latency" / f"chase-{digest}"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    cc = compiler()
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
    if log:
        log(f"memory latency: compiling {SOURCE.name} with {cc} {' '.join(CFLAGS)}")
    try:
        r = procs.run_capture([cc, *CFLAGS, "-o", str(tmp), str(SOURCE)], timeout_s=120)
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        raise LatencyError(f"{cc} did not compile {SOURCE.name} in 120 s",
                           hint="is the machine swapping? check the compiler works (cc --version)") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise LatencyError(f"{cc} could not compile {SOURCE}: {r.stderr.strip()[-600:]}",
                           hint="check the compiler works (cc --version), or set CC to another")
    os.replace(tmp, exe)        # whole or not at all: another process may be reading it
    return exe


def parse_output(text: str, where: str = "the probe") -> Probe:
    """The probe's text (chase.c's header comment gives its lines) -> its reps' ns per load."""
    values = [float(m.group(1)) for m in re.finditer(r"^rep \d+ ([0-9.]+)", text, re.M)]
    if not values or not re.search(r"^end \d+$", text, re.M):
        raise LatencyError(f"{where} printed no complete result:\n{text.strip()[-800:]}",
                           hint="run it by hand to see why (its path is in the message above)")
    huge = re.search(r"huge_bytes=(-?\d+)", text)
    return Probe(values, int(huge.group(1)) if huge and int(huge.group(1)) >= 0 else None, text)


def run_probe(exe: Path, nbytes: int, page: str, *, reps: int = REPS, loads: int = LLC_LOADS,
              warm: int | None = None, cpu: int | None = None, seed: int = SEED) -> Probe:
    """One run of the probe over `nbytes`, pinned to `cpu`; warm None: one whole lap first."""
    warm = nbytes // 64 if warm is None else warm
    argv = [str(exe), str(nbytes), page, str(reps), str(loads), str(warm), str(seed)]
    try:
        r = procs.run_capture(argv, timeout_s=TIMEOUT_S, cpus=[cpu] if cpu is not None else None)
    except subprocess.TimeoutExpired:
        raise LatencyError(f"the probe over {_mib(nbytes)} did not finish in {TIMEOUT_S:.0f} s",
                           hint="is the machine swapping? free memory and run again") from None
    if r.returncode != 0:
        raise LatencyError(f"the probe over {_mib(nbytes)} exited {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip()[-600:]}",
                           hint="free memory, or run it by hand: " + " ".join(argv))
    return parse_output(r.stdout + r.stderr, " ".join(argv))


def median_interval(values: list[float], confidence: float = CONFIDENCE
                    ) -> tuple[float, float, float, float]:
    """(median, low, high, achieved): the distribution-free interval of a median, the order
    statistics x(c), x(n+1-c) whose binomial(n, 1/2) tails hold 1 - confidence."""
    a = np.sort(np.asarray(values, dtype=float))
    cdf = tuple(float(x) for x in sps.binom.cdf(np.arange(len(a) + 1), len(a), 0.5))
    low, high, achieved = order_stat_interval(a, cdf, 1 - confidence)
    return float(np.median(a)), low, high, achieved


def _thp_setting() -> str:
    """The selected word of /sys/kernel/mm/transparent_hugepage/enabled ("madvise")."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "unknown"
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else text.strip()


def pick_cpu() -> int:
    """The highest-numbered CPU this process may run on (CPU 0 takes most interrupts)."""
    return max(os.sched_getaffinity(0))


def measure(llc_bytes: int | None, page: str = "4k", memory_bytes: int | None = None,
            log: Callable[[str], None] | None = None, *, cpu: int | None = None) -> MemoryLatency:
    """This host's DRAM and L3 latency with `page` pages ("4k" or "thp"), buffers sized from
    `llc_bytes` (None: unknown), the L2 of collectors.host.machine and `memory_bytes` of
    available memory (None: MemAvailable). About 5 s on a 480 MiB-L3 guest, 2 s on 32 MiB."""
    if page not in PAGES:
        raise ValueError(f"page must be one of {PAGES}, not {page!r}")
    start = time.monotonic()
    l2 = machine.cache_sizes().get("l2_bytes")
    avail = memory_bytes if memory_bytes is not None else available_memory()
    buf = buffer_sizes(llc_bytes, l2, avail)
    exe = binary(log)
    cpu = pick_cpu() if cpu is None else cpu
    say = log or (lambda _s: None)
    say(f"memory latency: a pointer chase on CPU {cpu}, {page} pages, over {_mib(buf.dram)} "
        f"(DRAM) and {_mib(buf.llc)} (L3)" + (f", checked against {_mib(buf.check)}" if buf.check else ""))
    runs: dict[str, tuple[int, Probe]] = {}
    if buf.check:
        runs["check"] = (buf.check, run_probe(exe, buf.check, page, cpu=cpu))
    runs["llc"] = (buf.llc, run_probe(exe, buf.llc, page, cpu=cpu))
    runs["dram"] = (buf.dram, run_probe(exe, buf.dram, page, loads=DRAM_LOADS, warm=DRAM_WARM, cpu=cpu))
    result = _result(runs, buf, llc_bytes, page, cpu)
    _served(result, exe, buf, page, cpu)
    result.wall_s = round(time.monotonic() - start, 2)
    say(f"memory latency: {result.text()} in {result.wall_s:.1f} s")
    return result


def _served(result: MemoryLatency, exe: Path, buf: Buffers, page: str, cpu: int) -> None:
    """The largest buffer the L3 serves here: LLC/4 when the check passed; else the last of a
    ladder of doubling buffers from 4x the L2 whose median stays under SERVED_SHARE of the way
    from the check's latency to DRAM's (at least 80% of its loads served by the cache: a
    random chase pays h x L3 + (1 - h) x DRAM). A guest's share of a big L3 is often a small
    part of it."""
    if result.llc_rule_bytes is None:
        result.served_bytes = result.llc_bytes
        return
    check = result.check_ns or result.llc_ns
    limit = check + SERVED_SHARE * (result.dram_ns - check)
    served, size = buf.check, 2 * (buf.check or 0)
    result.ladder = {str(buf.check): float(check)}
    while buf.check and size < result.llc_rule_bytes:
        ns = median_interval(run_probe(exe, size, page, cpu=cpu).values)[0]
        result.ladder[str(size)] = ns
        if ns > limit:
            break
        served, size = size, 2 * size
    result.ladder[str(result.llc_rule_bytes)] = float(result.llc_rule_ns or 0)
    result.served_bytes = served
    result.notes.append(f"The L3 served buffers up to {_mib(served or 0)} here (under {limit:.0f} ns a "
                        "load, 80% of the loads from the cache; the ladder: "
                        + ", ".join(f"{_mib(int(k))} {v:.0f} ns" for k, v in result.ladder.items()) + ").")
    result.method += " " + result.notes[-1]


def _result(runs: dict[str, tuple[int, Probe]], buf: Buffers, llc_source: int | None,
            page: str, cpu: int) -> MemoryLatency:
    """The runs' figures as one MemoryLatency: the L3's from the check when the rule's L3
    buffer was not served by the L3 (CHECK_RATIO), the caveats in `notes` and `method`."""
    notes = list(buf.notes)
    dram_bytes, dram = runs["dram"]
    llc_bytes, llc = runs["llc"]
    d, l = median_interval(dram.values), median_interval(llc.values)
    rule_bytes = rule_ns = check_ns = None
    if "check" in runs:
        check_bytes, check = runs["check"]
        c = median_interval(check.values)
        check_ns = c[0]
        if l[0] > CHECK_RATIO * c[0]:
            notes.append(f"The L3 buffer of {_mib(llc_bytes)} (LLC/4) measured {l[0]:.0f} ns, over "
                         f"{CHECK_RATIO:g}x the {c[0]:.0f} ns of {_mib(check_bytes)} (4x the L2): "
                         f"the L3 does not serve it here (a guest's share of the L3, or other "
                         f"tenants), so the L3 figure is the {_mib(check_bytes)} buffer's.")
            rule_bytes, rule_ns = llc_bytes, l[0]
            llc_bytes, llc, l = check_bytes, check, c
    huge = None if dram.huge_bytes is None else min(1.0, dram.huge_bytes / dram_bytes)
    if page == "thp" and huge is not None and huge < 0.5:
        notes.append(f"Only {huge:.0%} of the DRAM buffer was on huge pages (the kernel's THP "
                     f"setting: {_thp_setting()}), so most of its loads paid 4 KiB pages' walks.")
    return MemoryLatency(
        dram_ns=d[0], dram_low=d[1], dram_high=d[2], llc_ns=l[0], llc_low=l[1], llc_high=l[2],
        dram_bytes=dram_bytes, llc_bytes=llc_bytes, page=page,
        dram_values=dram.values, llc_values=llc.values, cpu=cpu,
        method=_method(buf, llc_source, page, cpu, dram_bytes, llc_bytes, min(d[3], l[3]), notes),
        confidence=round(min(d[3], l[3]), 4), loads=DRAM_LOADS, llc_source=llc_source,
        llc_rule_bytes=rule_bytes, llc_rule_ns=rule_ns, check_ns=check_ns, huge_fraction=huge,
        notes=notes, cpu_model=machine.cpuinfo().get("cpu_model"),
        raw="".join(f"## {name} {size}\n{p.raw}" for name, (size, p) in runs.items()))


def _method(buf: Buffers, llc_source: int | None, page: str, cpu: int, dram_bytes: int,
            llc_bytes: int, achieved: float, notes: list[str]) -> str:
    pages = "4 KiB pages (MADV_NOHUGEPAGE)" if page == "4k" else "transparent huge pages (MADV_HUGEPAGE)"
    rule = (f"4x the {_mib(llc_source)} LLC, at least {_mib(MIN_DRAM)}" if llc_source
            else "the LLC unknown")
    text = (f"A dependent-load pointer chase (one random cycle through a buffer's 64-byte lines, "
            f"each load the address of the next) pinned to CPU {cpu} with {pages}: the median ns "
            f"per load of {REPS} reps over a {_mib(dram_bytes)} buffer ({rule}) for DRAM and a "
            f"{_mib(llc_bytes)} one for the L3, each with its {achieved:.1%} order-statistic "
            f"interval.")
    return " ".join([text, *notes])
