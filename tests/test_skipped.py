"""Skipped callers (analysis/profile/skipped.py, collectors/profilers/perf/callsites.py) on
real `perf script` text: one Redis 8.0 server built with cases/patches/known-wait-glibc-mset.patch
(a 3 µs wait per MSET spent in clock_gettime, called straight from msetGenericCommand),
sampled under MSET load for 2 s with frame pointers and 2 s with DWARF
(tests/data/SOURCES.md, "profile/"). The call instruction before each return address of the
server binary was read from the binary when it was recorded (known-wait.callsites.tsv);
the reader itself is checked against objdump on a program compiled here."""
from __future__ import annotations

import gzip
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.profile.skipped import SkipCounter, ThreadSkips, classify, is_library
from collectors.profilers.perf.callsites import CallSites, load_elf

DATA = Path(__file__).parent / "data" / "profile"
MAIN = "redis-server"


def _table() -> dict[int, str | None]:
    rows = (DATA / "known-wait.callsites.tsv").read_text().splitlines()[1:]
    return {int(a, 16): (k or None) for a, k in (r.split("\t") for r in rows)}


TABLE = _table()


def sites(dso: str, addr: int) -> str | None:
    return TABLE.get(addr) if dso.endswith("/redis-server") else None


def _count(mode: str) -> ThreadSkips:
    c = SkipCounter(sites, dwarf=mode == "dwarf")
    data = gzip.open(DATA / f"known-wait-{mode}.perf.script.gz").read()
    for i in range(0, len(data), 5000):        # pieces that split lines
        c.feed(data[i:i + 5000])
    c.close()
    assert set(c.threads) == {MAIN}
    return c.threads[MAIN]


def _stacks(mode: str) -> list[list[str]]:
    """Each sample's function names, leaf first (offsets dropped)."""
    out, cur = [], None
    for line in gzip.open(DATA / f"known-wait-{mode}.perf.script.gz", "rt"):
        if line.startswith("\t"):
            cur.append(re.sub(r"\+0x[0-9a-f]+$", "", line.split(" (")[0].split(None, 1)[1]))
        elif line.strip():
            cur = []
            out.append(cur)
    return out


def test_frame_pointers_skip_the_caller_of_c_library_code():
    """A fifth of the main thread's frame-pointer samples lost a caller: the wait's
    msetGenericCommand above clock_gettime, and what the base has too (connSocketWrite above
    write, dictSdsKeyCompareWithLen above memcmp, connSocketRead above read)."""
    t = _count("fp")
    assert t.samples == 808 and 0.10 < t.skipped / t.samples < 0.30
    assert t.skipped >= t.at_risk - 4 - t.unknown and t.unknown <= 1
    top = [k for k, _ in t.sites.most_common(4)]
    assert top == ["writeToClient -> __GI___libc_write", "call -> clock_gettime@@GLIBC_2.17",
                   "dictFindByHash -> __memcmp_evex_movbe", "readQueryFromClient -> read"]


def test_dwarf_stacks_skip_none():
    """The same rule finds every DWARF-unwound caller plausible: at risk as often, skipped
    never (perf prints DWARF return addresses a byte early: the counter reads them back)."""
    fp, dw = _count("fp"), _count("dwarf")
    assert dw.samples == 740 and dw.skipped == 0 and dw.unknown == 0
    assert abs(dw.at_risk / dw.samples - fp.at_risk / fp.samples) < 0.05
    # read without moving the address back, the call sites are misread
    c = SkipCounter(sites, dwarf=False)
    c.feed(gzip.open(DATA / "known-wait-dwarf.perf.script.gz").read())
    c.close()
    assert c.threads[MAIN].skipped == 0 and c.threads[MAIN].unknown == c.threads[MAIN].at_risk


def test_dwarf_recovers_the_caller_frame_pointers_skip():
    """In the frame-pointer text the wait's clock_gettime sits straight under `call`, never
    under msetGenericCommand; in the DWARF text it sits under msetGenericCommand, never
    straight under `call`: the missing frame is recovered, in the same share of samples
    (two-proportion z within 3)."""
    def under(stacks, caller):
        n = 0
        for s in stacks:
            if "clock_gettime@@GLIBC_2.17" in s:
                i = s.index("clock_gettime@@GLIBC_2.17")
                n += i + 1 < len(s) and s[i + 1].startswith(caller)
        return n
    fp, dw = _stacks("fp"), _stacks("dwarf")
    assert under(fp, "msetGenericCommand") == 0 and under(dw, "call") == 0
    k1, k2 = under(fp, "call"), under(dw, "msetGenericCommand")
    p1, p2 = k1 / len(fp), k2 / len(dw)
    assert p1 > 0.03 and p2 > 0.03
    pool = (k1 + k2) / (len(fp) + len(dw))
    z = (p1 - p2) / math.sqrt(pool * (1 - pool) * (1 / len(fp) + 1 / len(dw)))
    assert abs(z) < 3, (k1, len(fp), k2, len(dw))
    # and the DWARF caller's own caller is the frame frame pointers listed
    for s in dw:
        if "clock_gettime@@GLIBC_2.17" in s and "msetGenericCommand.part.0" in s:
            assert s[s.index("msetGenericCommand.part.0") + 1] == "call"


def test_the_rule_frame_by_frame():
    """A leaf in the executable is whole; one in a shared object, the vDSO or a PLT stub is
    at risk; its next frame is its plausible caller when that frame called into a shared
    object, skipped otherwise, unknown when the call site cannot be read."""
    exe, libc = "/x/redis-server", "/usr/lib/x86_64-linux-gnu/libc.so.6"
    kinds = {0x10: "library", 0x20: "local", 0x30: "pointer"}
    look = lambda dso, a: kinds.get(a)  # noqa: E731
    leaf = [(0x5, "dictFind+0x5", exe), (0x10, "lookupKey+0x10", exe)]
    assert classify(leaf, look)[0] == "whole"
    for site, verdict in ((0x10, "plausible"), (0x20, "skipped"), (0x30, "skipped"), (0x40, "unknown")):
        frames = [(0xffffffff81000000, "do_syscall_64+0x1", "[kernel.kallsyms]"),
                  (0x99, "__vdso_clock_gettime+0x9", "[vdso]"), (0x77, "clock_gettime+0x7", libc),
                  (site, "call+0x40", exe), (0x1, "main+0x1", exe)]
        assert classify(frames, look) == (verdict, "call -> clock_gettime"), site
    assert classify([(0x1, "memcmp@plt+0x0", exe), (0x20, "dictFind+0x20", exe)], look)[0] == "skipped"
    assert classify([(0x1, "x+0x1", libc), (0x2, "y+0x1", libc)], look)[0] == "whole"   # no caller
    assert classify([(0x1, "x+0x1", libc), (0x2, "[unknown]", "[unknown]")], look)[0] == "unknown"
    assert is_library("/lib/ld-linux-x86-64.so.2") and is_library("/usr/lib/libm.so.6")
    assert not is_library("/x/redis-server") and not is_library("/x/libfoo.sock")


CALLS_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
__attribute__((noinline)) static int local(int x) { return x * 3 + 1; }
static int (*pointer)(int) = local;
static void *(*libc_pointer)(size_t) = malloc;
int main(int argc, char **argv) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    char *p = libc_pointer(64);
    strcpy(p, argv[0]);
    printf("%d %zu\n", local(argc) + pointer(argc), strlen(p));
    free(p);
    return 0;
}
"""


@pytest.mark.parametrize("flags", [[], ["-fno-plt"], ["-no-pie"]])
def test_call_sites_read_as_objdump_reads_them(tmp_path, flags):
    """Every call instruction of a compiled program, classified from the ELF file at its
    return address as objdump disassembles it: through the PLT or a GOT slot (also a data
    word a relocation fills with a C library function) `library`, to a function of its own
    `local`, through any other pointer `pointer`. Also the C library itself."""
    cc, objdump = shutil.which("gcc"), shutil.which("objdump")
    if not (cc and objdump):
        pytest.skip("gcc or objdump missing")
    (tmp_path / "calls.c").write_text(CALLS_C)
    exe = tmp_path / "calls"
    subprocess.run([cc, "-O2", "-fno-omit-frame-pointer", *flags, "-o", str(exe), str(tmp_path / "calls.c")],
                   check=True, timeout=120)
    seen = _agree(exe, objdump)
    assert {"library", "local", "pointer"} <= seen
    libc = Path("/usr/lib/x86_64-linux-gnu/libc.so.6")
    if libc.is_file() and flags == []:
        _agree(libc, objdump, limit=4000)


def _agree(path: Path, objdump: str, limit: int | None = None) -> set[str]:
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(path)], capture_output=True,
                          text=True, check=True, timeout=300).stdout
    insn = [(int(m[1], 16), m[2]) for m in re.finditer(r"^\s+([0-9a-f]+):\s+(.*)$", text, re.M)]
    obj, sites, seen, n = load_elf(str(path)), CallSites(), set(), 0
    for (_, ins), (ret, _) in zip(insn, insn[1:]):
        if not ins.startswith("call"):
            continue
        want = ("library" if "@plt>" in ins or re.search(r"\*.*\(%rip\).*<[^>]*@", ins)
                else "pointer" if "*" in ins else "local")
        assert obj.call_kind(ret) == sites(str(path), ret) == want, (hex(ret), ins)
        seen.add(want)
        n += 1
        if limit and n >= limit:
            break
    sites.close()
    return seen


def test_a_probe_that_finds_skipped_callers_asks_for_dwarf(tmp_path, monkeypatch):
    """--call-graph whole: a thread whose probe samples skip a caller over 1% with 95%
    confidence is unwound with DWARF, as a truncated one is (a recorded probe of the MSET
    base: 20.9% of 980); --call-graph auto (the default) switches for truncation only. A
    paired rep probes both servers and unwinds a thread with DWARF in both when either asks
    (the candidate may call the C library where the base does not); a later rep keeps the
    first rep's choice without probing."""
    from analysis.inputs.collector_facts import ThreadProbe, UnwindProbe
    from collectors.profilers.perf import paired as pp, unwind as pu
    assert pu.needs_dwarf(ThreadProbe(samples=980, truncated_pct=0.0, skipped_pct=20.9))
    assert not pu.needs_dwarf(ThreadProbe(samples=980, truncated_pct=0.0, skipped_pct=20.9), skipped=False)
    assert pu.decide(UnwindProbe(rep="p", seconds=1.0, threads={
        "redis-server": ThreadProbe(samples=980, skipped_pct=20.9)})).callgraph == "fp"
    assert not pu.needs_dwarf(ThreadProbe(samples=980, truncated_pct=0.0, skipped_pct=1.1))
    assert not pu.needs_dwarf(ThreadProbe(samples=980, truncated_pct=0.3))       # before: not counted
    quiet = UnwindProbe(rep="paired/1", seconds=1.0, threads={
        "redis-server": ThreadProbe(samples=980, truncated_pct=0.2, skipped_pct=0.3),
        "bio_aof": ThreadProbe(samples=2)})
    loud = UnwindProbe(rep="paired/1", seconds=1.0, threads={
        "redis-server": ThreadProbe(samples=975, truncated_pct=0.1, skipped_pct=17.4, sites={"call -> clock_gettime": 5.6})})
    probes = iter([quiet, loud])
    asked = []

    def choose(callgraph, binary_mode, pid, rep_dir, window_s, cpus, stem):
        asked.append(stem)
        return pu.decide(next(probes), skipped=callgraph == "whole")
    monkeypatch.setattr(pu, "choose", choose)
    rep = tmp_path / "paired" / "1"
    rep.mkdir(parents=True)
    prof = pp.PairedProfiler(rep, 999, callgraph="whole")
    prof.probe("base", 1)
    assert prof._unwind["base"].callgraph == "fp"
    prof.probe("kw", 2)
    assert asked == ["perf.probe-base", "perf.probe-kw"]
    for key in ("base", "kw"):
        u = prof._unwind[key]
        assert (u.callgraph, u.dwarf_threads) == ("fp+dwarf", ["redis-server"])
        assert u.probe.threads["redis-server"].skipped_pct == 17.4 and "bio_aof" in u.probe.threads
        assert u.probe.rep == "paired/1" and u.probe.seconds == 2.0
    later = pp.PairedProfiler(tmp_path / "paired" / "2", 999)
    later._unwind["base"] = prof._unwind["base"]          # as choose() reads it back from rep.json
    later.probe("kw", 2)
    assert asked == ["perf.probe-base", "perf.probe-kw"] and later._unwind["kw"] is prof._unwind["base"]
