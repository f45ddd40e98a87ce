"""The perf commands: `perf record` argv per unwinding mode, and folding what it recorded
(`perf script`, read once by analysis/profile/perfscript.py) into folded stacks and
per-thread sample counts. The collector that runs them is collectors/profilers/perf.py."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Sequence

from analysis.profile.perfscript import PerfScriptFolder
from analysis.toolpaths import perf_binary
from collectors.host import procs


class ProfileError(Exception):
    """perf recorded nothing usable; the message names the file with perf's own words."""


def require_perf() -> str:
    """perf's path; the folding is ours (no inferno needed to record a profile)."""
    perf = perf_binary()
    if not perf:
        raise procs.ToolNotFound("perf: not found (nor $PERF); install it (Debian: apt-get install "
                                 "linux-perf) or use --profile off")
    return perf


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


def fold(perf: str, perf_data: Sequence[Path], folded: Path, err_path: Path,
         threads_tsv: Path | None = None) -> dict[str, Any]:
    """`perf script` of every file, read once by the one collapser
    (analysis/profile/perfscript.py: inferno-collapse-perf's folding) into `folded`; with
    threads_tsv, the sample count of each (tid, comm) there. Several files: one perf record
    per unwinding mode (perf.py), their stacks summed in one folded file."""
    folder = PerfScriptFolder(strict=False)
    with open(err_path, "ab") as err:
        for d in perf_data:
            rc = _script_into(perf, d, folder, err)
            if rc != 0:
                raise ProfileError(f"perf script -i {d} exited with status {rc}; see {err_path}")
        if folder.unread:      # inferno warned on stderr and went on: so do we
            err.write(f"stallscope: {folder.unread} line(s) of perf script output were not "
                      f"read as samples and were skipped; first: {folder.first_unread}\n".encode())
    facts: dict[str, Any] = {"folded_lines": folder.write_folded(folded)}
    if threads_tsv is not None:
        folder.write_threads(threads_tsv)
        facts["samples"] = sum(folder.thread_samples.values())
        facts["threads"] = sorted({comm for _, comm in folder.thread_samples})
    return facts


def _script_into(perf: str, perf_data: Path, folder: PerfScriptFolder, err: Any) -> int:
    ps = procs.spawn([perf, "script", "-i", str(perf_data)], stdout=subprocess.PIPE, stderr=err)
    try:
        folder.feed(ps.stdout, f"perf script -i {perf_data}")
    except BaseException:
        procs.kill_group(ps, 5.0)          # a Ctrl-C while folding: no perf left behind
        raise
    finally:
        ps.stdout.close()
    rc = ps.wait(600)
    procs.forget(ps)
    return rc
