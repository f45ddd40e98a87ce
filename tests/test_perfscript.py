"""`perf script` read once: its bytes folded by the real inferno-collapse-perf while
analysis/profile/perfscript.py counts samples per thread in the same bytes
(collectors/profilers/perf/record.py). Checked against what the collector did before, on
recorded `perf script` text (tests/data/profile, inferno's output recorded beside it) and on a
live recording of a real C++ program: `perf script | inferno-collapse-perf` and
`perf script -F tid,comm` run by hand."""
from __future__ import annotations

import gzip
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from analysis.profile.perfscript import PerfScriptError, SampleHeader, parse_header
from analysis.toolpaths import which_tool
from collectors.profilers.perf.record import InfernoFold, fold, record_argv

DATA = Path(__file__).parent / "data" / "profile"


def _inferno() -> str:
    inferno = which_tool("inferno-collapse-perf")
    if not inferno:
        pytest.skip("inferno-collapse-perf missing (make setup)")
    return inferno


def _fold_text(text: bytes, tmp_path: Path, piece_bytes: int = 1 << 20) -> tuple[str, InfernoFold]:
    """The collector's pass over `text` (as if perf script printed it): (folded, the pass)."""
    folded, src = tmp_path / "perf.folded", tmp_path / "perf.script"
    src.write_bytes(text)
    with open(tmp_path / "perf.stderr", "ab") as err, open(src, "rb") as f:
        with InfernoFold(_inferno(), folded, err, piece_bytes) as inferno:
            inferno.feed(f)
            assert inferno.finish() == 0
    return folded.read_text(), inferno


@pytest.mark.parametrize("name, threads", [
    ("main", {(8194, "redis-server"): 1665}),
    ("io", {(9453, "redis-server"): 1268, (9458, "io_thd_1"): 1499}),    # tests/data/SOURCES.md
])
@pytest.mark.parametrize("piece_bytes", [1 << 20, 4093])     # lines split between pieces
def test_recorded_perf_script_folds_as_inferno_did_with_its_threads(tmp_path, name, threads, piece_bytes):
    text = gzip.decompress((DATA / f"redis-{name}.perf.script.gz").read_bytes())
    folded, inferno = _fold_text(text, tmp_path, piece_bytes)
    assert folded == (DATA / f"redis-{name}.inferno.folded").read_text()
    assert inferno.threads.samples == threads and inferno.threads.unread == 0


def test_a_line_that_is_no_header_is_skipped_by_both_and_named(tmp_path):
    """inferno warns and goes on; the thread counts leave the line out and name it."""
    text = gzip.decompress((DATA / "redis-main.perf.script.gz").read_bytes()).decode()
    blocks = text.split("\n\n")
    blocks.insert(3, "this is no perf script line")
    bad = "\n\n".join(blocks).encode()
    folded, inferno = _fold_text(bad, tmp_path, 997)
    by_hand = subprocess.run([_inferno()], input=bad, capture_output=True, timeout=60).stdout.decode()
    assert folded == by_hand
    assert inferno.threads.samples == {(8194, "redis-server"): 1665}
    assert inferno.threads.unread == 1 and inferno.threads.first_unread == "this is no perf script line"


def test_recorded_headers_parse_from_the_right():
    io = gzip.decompress((DATA / "redis-io.perf.script.gz").read_bytes()).decode().splitlines()
    assert parse_header(io[0]) == SampleHeader(comm="io_thd_1", tid=9458, pid=None, cpu=None,
                                               time_s=843.788695, period=1001001, event="cpu-clock")
    assert parse_header(io[4]).comm == "redis-server" and parse_header(io[4]).tid == 9453
    for line in (io[1], "", "garbage line"):          # a frame, a blank line, no header
        with pytest.raises(PerfScriptError, match="not a `perf script` sample header"):
            parse_header(line)


# A real program with what C++ puts in perf's symbols (templates, argument lists, operator(),
# an anonymous namespace, a lambda) and a thread whose name holds a number word.
SPIN_CPP = r"""
#include <pthread.h>
#include <cstdint>
#include <functional>
#include <thread>
namespace { template <typename T> __attribute__((noinline)) T mix(T x, int rounds) {
  for (int i = 0; i < rounds; i++) x = x * 6364136223846793005ULL + 1; return x; } }
struct Worker { __attribute__((noinline)) uint64_t run(std::function<uint64_t(uint64_t)> f, long n) {
    uint64_t s = 0; for (long i = 0; i < n; i++) s += f(i); return s; } };
int main() {
  std::thread t([] { pthread_setname_np(pthread_self(), "worker 1");
    Worker w; volatile uint64_t r = w.run([](uint64_t x) { return mix<uint64_t>(x, 500); }, 500000); });
  Worker w; volatile uint64_t r = w.run([](uint64_t x) { return mix<uint32_t>(x, 500); }, 500000);
  t.join(); return 0; }
"""


@pytest.fixture(scope="module")
def spin_recording(tmp_path_factory) -> list[Path]:
    """perf.fp.data and perf.dwarf.data of the program: the two files of an fp+dwarf rep."""
    perf, gxx = shutil.which("perf"), shutil.which("g++")
    if not (perf and gxx):
        pytest.skip("perf or g++ missing (make setup)")
    tmp = tmp_path_factory.mktemp("spin")
    (tmp / "spin.cpp").write_text(SPIN_CPP)
    exe = tmp / "spin"
    subprocess.run([gxx, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe),
                    str(tmp / "spin.cpp")], check=True, timeout=120)
    out = []
    for mode in ("fp", "dwarf"):
        data = tmp / f"perf.{mode}.data"
        argv = record_argv(perf, 0, data, 999, mode)
        argv = argv[:argv.index("-p")] + ["-q", "-o", str(data), "--", str(exe)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            pytest.skip(f"perf record not permitted here: {r.stderr.strip()[:200]}")
        out.append(data)
    return out


def _script(*args: str) -> list[str]:
    return subprocess.run(["perf", "script", *args], capture_output=True, text=True, timeout=120,
                          check=True).stdout.splitlines()


def _tid_comm(lines: list[str]) -> list[tuple[int, str]]:
    """`perf script -F tid,comm` lines, read as the collector read them before."""
    return [(int(ln.split()[-1]), " ".join(ln.split()[:-1])) for ln in lines if ln.strip()]


@pytest.mark.heavy
def test_the_collector_folds_a_live_recording_as_perf_script_and_inferno_did(tmp_path, spin_recording):
    perf, inferno = shutil.which("perf"), _inferno()
    facts = fold(perf, inferno, spin_recording, tmp_path / "perf.folded", tmp_path / "perf.stderr",
                 tmp_path / "perf.threads.tsv")
    # before: every file's perf script into one inferno, then perf script -F tid,comm again
    # (--no-inline: a DWARF stack without the inlined functions a frame-pointer one cannot see)
    script = "".join(subprocess.run([perf, "script", "--no-inline", "-i", str(d)], capture_output=True,
                                    text=True, timeout=120).stdout for d in spin_recording)
    ref = subprocess.run([inferno], input=script, capture_output=True, text=True, timeout=120).stdout
    folded = (tmp_path / "perf.folded").read_text()
    assert folded == ref and facts.lines == len(ref.splitlines()) > 3
    threads = Counter(t for d in spin_recording for t in _tid_comm(_script("-i", str(d), "-F", "tid,comm")))
    rows = [ln.split("\t") for ln in (tmp_path / "perf.threads.tsv").read_text().splitlines()]
    assert rows[0] == ["tid", "comm", "samples"]
    assert {(int(t), c): int(n) for t, c, n in rows[1:]} == dict(threads)
    assert facts.samples == sum(threads.values()) and facts.threads == ["spin", "worker 1"]


@pytest.mark.parametrize("fields", [None, "comm,pid,tid,time,event", "comm,tid,time,period,event,ip,sym"])
def test_live_headers_name_the_thread_as_perf_does(spin_recording, fields):
    """perf's default header, the pid/tid form without a period, and the sampled frame on the
    header line (no call graph printed): the thread of every sample as -F tid,comm names it."""
    data = str(spin_recording[0])
    lines = _script("-i", data, *(["-F", fields] if fields else []), *(["-G"] if fields and "ip" in fields else []))
    headers = [parse_header(ln) for ln in lines if ln.strip() and not ln.startswith("\t")]
    assert [(h.tid, h.comm) for h in headers] == _tid_comm(_script("-i", data, "-F", "tid,comm"))
    assert {h.comm for h in headers} == {"spin", "worker 1"} and {h.event for h in headers} == {"cpu-clock"}
    main_tid = next(h.tid for h in headers if h.comm == "spin")
    if fields and "pid" in fields:
        assert {h.pid for h in headers} == {main_tid} and {h.period for h in headers} == {None}
    else:
        assert {h.pid for h in headers} == {None} and {h.period for h in headers} == {1001001}
