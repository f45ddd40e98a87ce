"""The perf commands: `perf record` argv per unwinding mode, and folding what it recorded
(`perf script | inferno-collapse-perf`) into folded stacks and per-thread sample counts.
The collector that runs them is collectors/profilers/perf.py."""
from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from analysis.toolpaths import perf_binary, which_tool
from collectors.host import procs


class ProfileError(Exception):
    """perf recorded nothing usable; the message names the file with perf's own words."""


def require_tools() -> tuple[str, str]:
    perf = perf_binary()
    if not perf:
        raise procs.ToolNotFound("perf: not found (nor $PERF); install it (Debian: apt-get install "
                                 "linux-perf) or use --profile off")
    collapse = which_tool("inferno-collapse-perf")   # PATH, then $CARGO_HOME/bin
    if not collapse:
        raise procs.ToolNotFound("inferno-collapse-perf: not found on PATH or in ~/.cargo/bin; "
                                 "run `make setup` (cargo install inferno) or use --profile off")
    return perf, collapse


EVENT = "cpu-clock"        # a software clock: works without a hardware PMU; period = ns
# User stack copied per sample with --call-graph dwarf. Measured on the README's pipelined
# Valkey run (main thread, 5M keys): 2 KiB left 2.4% of its stacks truncated, 4 KiB 1.05%,
# 8 KiB 0.8%, 16 and 32 KiB the same 0.8-0.9% (what remains are unwinder misses, not a
# short copy): 16 KiB is twice what that thread needs. perf.data grows linearly with it
# (about 17 KB per sample).
DWARF_STACK_BYTES = 16384


def record_argv(perf: str, target: int | Sequence[int], out: Path, freq_hz: int,
                callgraph: str = "fp", mmap_pages: int | None = None) -> list[str]:
    """`target`: a pid (-p: every thread of the process) or a list of thread ids (-t)."""
    # dwarf copies the user stack with every sample and unwinds it afterwards: whole stacks
    # through code without frame pointers, at a much higher cost per sample.
    cg = ["--call-graph", f"dwarf,{DWARF_STACK_BYTES}"] if callgraph == "dwarf" else ["-g"]
    mm = ["-m", str(mmap_pages)] if mmap_pages else []
    who = ["-p", str(target)] if isinstance(target, int) else ["-t", ",".join(map(str, target))]
    # No `-- sleep W` workload: perf runs until stop() sends SIGINT, so there is no
    # grandchild that could outlive a SIGKILLed runner (PDEATHSIG reaches perf only).
    # -p follows every thread of the pid (main, io_thd_N, bio_*).
    return [perf, "record", "-e", EVENT, "-F", str(freq_hz), *cg, *mm, *who, "-o", str(out)]


def fold(perf: str, collapse: str, perf_data: Sequence[Path], folded: Path, err_path: Path,
         threads_tsv: Path | None = None) -> dict[str, Any]:
    """perf script of every file | inferno-collapse-perf > folded; with threads_tsv, the
    sample count of each (tid, comm) there. Several files: one perf record per unwinding mode
    (perf.py), their stacks summed in one folded file."""
    err = open(err_path, "ab")
    try:
        with open(folded, "wb") as fout:
            # Default collapse options keep the comm as first frame and add no pid/tid suffix.
            col = procs.spawn([collapse], stdin=subprocess.PIPE, stdout=fout, stderr=err)
            rc_ps = [_script_into(perf, d, col.stdin, err) for d in perf_data]
            col.stdin.close()
            rc_col = col.wait(600)
            procs.forget(col)
        if any(rc_ps) or rc_col != 0:
            raise ProfileError(f"perf script (status {', '.join(map(str, rc_ps))}) | "
                               f"inferno-collapse-perf (status {rc_col}) failed; see {err_path}")
    finally:
        err.close()
    lines = folded.read_text(errors="replace").splitlines()
    if threads_tsv is None:
        return {"folded_lines": len(lines)}
    threads: Counter = Counter()
    for d in perf_data:
        threads.update(_thread_samples(perf, d))
    with open(threads_tsv, "w") as f:
        f.write("tid\tcomm\tsamples\n")
        for (tid, comm), n in sorted(threads.items()):
            f.write(f"{tid}\t{comm}\t{n}\n")
    return {"folded_lines": len(lines), "samples": sum(threads.values()),
            "threads": sorted({c for _, c in threads})}


def _script_into(perf: str, perf_data: Path, sink: Any, err: Any) -> int:
    ps = procs.spawn([perf, "script", "-i", str(perf_data)], stdout=sink, stderr=err)
    rc = ps.wait(600)
    procs.forget(ps)
    return rc


def _thread_samples(perf: str, perf_data: Path) -> Counter:
    r = procs.run_capture([perf, "script", "-i", str(perf_data), "-F", "tid,comm"], timeout_s=600)
    out: Counter = Counter()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-1].isdigit():
            out[(int(parts[-1]), " ".join(parts[:-1]))] += 1
    return out
