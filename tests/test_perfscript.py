"""The one `perf script` collapser (analysis/profile/perfscript.py) against inferno-collapse-perf,
the folding it replaced in the collector: on recorded `perf script` text (tests/data/profile, with
the inferno output recorded beside it) and on a live recording of a real C++ program folded by the
collector's own path and by `perf script | inferno-collapse-perf` (the old path) side by side."""
from __future__ import annotations

import gzip
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from analysis.profile.perfscript import PerfScriptError, PerfScriptFolder, fold_file
from analysis.toolpaths import which_tool
from collectors.profilers.perf_record import fold, record_argv

DATA = Path(__file__).parent / "data" / "profile"


@pytest.mark.parametrize("name, threads", [
    ("main", {"redis-server": 1665}),
    ("io", {"redis-server": 1268, "io_thd_1": 1499}),      # tests/data/SOURCES.md
])
def test_recorded_perf_script_folds_byte_for_byte_as_inferno_did(name, threads):
    folder = fold_file(DATA / f"redis-{name}.perf.script.gz")
    assert folder.folded_text() == (DATA / f"redis-{name}.inferno.folded").read_text()
    assert {comm: n for (_, comm), n in folder.thread_samples.items()} == threads
    assert folder.unread == 0 and folder.event == "cpu-clock"


def test_a_line_that_is_not_perf_script_is_an_error_by_hand_and_skipped_live():
    """By hand (strict) the line is named; in the collector it is skipped, as inferno
    skipped it, and the rest folds exactly as inferno folds the same text."""
    text = gzip.decompress((DATA / "redis-main.perf.script.gz").read_bytes()).decode()
    blocks = text.split("\n\n")
    blocks.insert(3, "this is no perf script line")
    bad = "\n\n".join(blocks)
    lineno = "\n\n".join(blocks[:3]).count("\n") + 3
    with pytest.raises(PerfScriptError, match=rf"x.txt:{lineno}: not a `perf script` sample header"):
        PerfScriptFolder().feed(bad.splitlines(True), "x.txt")
    lenient = PerfScriptFolder(strict=False)
    lenient.feed(bad.encode().splitlines(True), "x.txt")
    assert lenient.unread == 1 and lenient.first_unread.startswith(f"x.txt:{lineno}:")
    inferno = which_tool("inferno-collapse-perf")
    if not inferno:
        pytest.skip("inferno-collapse-perf missing (make setup)")
    ref = subprocess.run([inferno], input=bad, capture_output=True, text=True, timeout=60).stdout
    assert lenient.folded_text() == ref


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


def _record(tmp_path: Path) -> list[Path]:
    perf, inferno, gxx = shutil.which("perf"), which_tool("inferno-collapse-perf"), shutil.which("g++")
    if not (perf and inferno and gxx):
        pytest.skip("perf, inferno-collapse-perf or g++ missing (make setup)")
    (tmp_path / "spin.cpp").write_text(SPIN_CPP)
    exe = tmp_path / "spin"
    subprocess.run([gxx, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe),
                    str(tmp_path / "spin.cpp")], check=True, timeout=120)
    out = []
    for mode in ("fp", "dwarf"):           # the two files of an fp+dwarf rep, summed
        data = tmp_path / f"perf.{mode}.data"
        argv = record_argv(perf, 0, data, 999, mode)
        argv = argv[:argv.index("-p")] + ["-q", "-o", str(data), "--", str(exe)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            pytest.skip(f"perf record not permitted here: {r.stderr.strip()[:200]}")
        out.append(data)
    return out


def test_the_collector_folds_a_live_recording_as_perf_script_and_inferno_did(tmp_path):
    perf, inferno = shutil.which("perf"), which_tool("inferno-collapse-perf")
    data = _record(tmp_path)
    facts = fold(perf, data, tmp_path / "perf.folded", tmp_path / "perf.stderr",
                 tmp_path / "perf.threads.tsv")
    # the old path: every file's perf script into one inferno; threads from -F tid,comm
    script = "".join(subprocess.run([perf, "script", "-i", str(d)], capture_output=True, text=True,
                                    timeout=120).stdout for d in data)
    ref = subprocess.run([inferno], input=script, capture_output=True, text=True, timeout=120).stdout
    folded = (tmp_path / "perf.folded").read_text()
    assert folded == ref and facts["folded_lines"] == len(ref.splitlines()) > 3
    threads: Counter = Counter()
    for d in data:
        lines = subprocess.run([perf, "script", "-i", str(d), "-F", "tid,comm"], capture_output=True,
                               text=True, timeout=120).stdout.splitlines()
        threads.update((int(ln.split()[-1]), " ".join(ln.split()[:-1])) for ln in lines if ln.strip())
    rows = [ln.split("\t") for ln in (tmp_path / "perf.threads.tsv").read_text().splitlines()]
    assert rows[0] == ["tid", "comm", "samples"]
    assert {(int(t), c): int(n) for t, c, n in rows[1:]} == dict(threads)
    assert facts["samples"] == sum(threads.values()) and facts["threads"] == ["spin", "worker 1"]
    # inferno names a stack's thread by the words before the first number: "worker 1" is
    # "worker" in perf.folded, while perf.threads.tsv keeps perf's own name
    assert {ln.split(";", 1)[0] for ln in folded.splitlines()} == {"spin", "worker"}
    assert "Worker::run" in folded and "mix<" not in folded   # "(anonymous namespace)::" skipped
