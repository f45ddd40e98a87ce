"""The perf commands: `perf record` argv per unwinding mode, and folding what it recorded:
`perf script` runs once per file, its bytes go on into inferno-collapse-perf (the folder,
writing perf.folded) while analysis/profile/perfscript.py counts the samples per thread in the
same bytes (perf.threads.tsv). The collector that runs them is collectors/profilers/perf/plugin.py."""
from __future__ import annotations

import subprocess
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Sequence

from analysis.errors import Failed
from analysis.inputs.collector_facts import SkippedThread
from analysis.profile.perfscript import SampleRouter, ThreadCounter
from analysis.profile.skipped import SkipCounter, ThreadSkips, merged
from analysis.toolpaths import perf_binary, which_tool
from collectors.host import procs
from collectors.profilers.perf.callsites import CallSites


class ProfileError(Failed):
    """perf recorded nothing usable; the message names the file with perf's own words."""


def require_tools() -> tuple[str, str]:
    """perf (to record and to print what it recorded) and inferno-collapse-perf (to fold it)."""
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


def record_argv(perf: str, target: int | Sequence[int], out: Path, frequency_hz: int,
                callgraph: str = "fp", mmap_pages: int | None = None,
                monotonic: bool = False) -> list[str]:
    """`target`: a pid (-p: every thread of the process) or a list of thread ids (-t);
    `monotonic`: stamp samples with CLOCK_MONOTONIC (-k mono), Python's time.monotonic, so
    they can be split by the windows the runner timed (paired.py)."""
    # dwarf copies the user stack with every sample and unwinds it afterwards: whole stacks
    # through code without frame pointers, at a much higher cost per sample.
    cg = ["--call-graph", f"dwarf,{DWARF_STACK_BYTES}"] if callgraph == "dwarf" else ["-g"]
    mm = ["-m", str(mmap_pages)] if mmap_pages else []
    who = ["-p", str(target)] if isinstance(target, int) else ["-t", ",".join(map(str, target))]
    # No `-- sleep W` workload: perf runs until stop() sends SIGINT, so there is no
    # grandchild that could outlive a SIGKILLed runner (PDEATHSIG reaches perf only).
    # -p follows every thread of the pid (main, io_thd_N, bio_*).
    clock = ["-k", "mono"] if monotonic else []
    return [perf, "record", "-e", EVENT, "-F", str(frequency_hz), *cg, *mm, *clock, *who, "-o", str(out)]


def fold(perf: str, collapse: str, perf_data: Sequence[Path], folded: Path, err_path: Path,
         threads_tsv: Path | None = None, modes: Sequence[str] = ()) -> Folded:
    """`perf script` of every file, read once, into ONE inferno-collapse-perf writing `folded`
    (several files: one perf record per unwinding mode, plugin.py; one inferno sums their stacks
    as it did when every file's perf script was piped into it); with threads_tsv, the sample
    count of each (tid, comm) there, counted in the same bytes; each thread's skipped callers
    (analysis/profile/skipped.py) in `Folded.skipped`, each file read as unwound by its mode
    in `modes` (fp when not given)."""
    sites = CallSites()
    skips = [SkipCounter(sites, _mode(modes, i) == "dwarf") for i in range(len(perf_data))]
    with open(err_path, "ab") as err:
        with InfernoFold(collapse, folded, err) as inferno:
            rc_ps = [_script(perf, d, inferno.feeder(sk), err) for d, sk in zip(perf_data, skips)]
            rc_col = inferno.finish()
        sites.close()
        if any(rc_ps) or rc_col != 0:
            raise ProfileError(f"perf script (status {', '.join(map(str, rc_ps))}) | "
                               f"inferno-collapse-perf (status {rc_col}) failed; see {err_path}")
        threads = inferno.threads
        if threads.unread:       # not counted in perf.threads.tsv: say so where perf's words are
            err.write(f"stallscope: {threads.unread} perf script line(s) that should have been "
                      f"sample headers were not; not counted in perf.threads.tsv; first: "
                      f"{threads.first_unread!r}\n".encode())
    out = Folded(len(folded.read_text(errors="replace").splitlines()), skipped=merged(skips))
    if threads_tsv is not None:
        threads.write_tsv(threads_tsv)
        out.samples = sum(threads.samples.values())
        out.threads = sorted({comm for _, comm in threads.samples})
    return out


@dataclass
class Folded:
    """What one fold wrote: its stack lines and, with threads_tsv, the samples and threads."""
    lines: int
    samples: int | None = None
    threads: list[str] = field(default_factory=list)
    skipped: dict[str, ThreadSkips] = field(default_factory=dict)   # comm -> skipped callers


def _mode(modes: Sequence[str], i: int) -> str:
    return modes[i] if i < len(modes) else "fp"


SITES_KEPT = 10       # the most frequent sites of a thread's skipped callers, in rep.json


def skipped_facts(threads: dict[str, ThreadSkips]) -> dict[str, SkippedThread]:
    """rep.json's collectors.perf.skipped: each thread's counts and its most frequent sites."""
    return {comm: SkippedThread(t.samples, t.at_risk, t.skipped, t.unknown,
                                dict(t.sites.most_common(SITES_KEPT)))
            for comm, t in sorted(threads.items())}


class InfernoFold:
    """ONE inferno-collapse-perf process writing `folded`, fed `perf script` bytes by feed();
    a ThreadCounter reads the same bytes on the way. Only inferno's stdin is a pipe (its
    stdout is the file, its stderr the err file), so writing it can never wait on its output.
    Leaving the `with` by an exception (Ctrl-C, a crash) kills inferno's process group."""

    def __init__(self, collapse: str, folded: Path, err: IO[bytes], piece_bytes: int = 1 << 20):
        self.threads = ThreadCounter()
        self._piece = piece_bytes
        with open(folded, "wb") as out:      # inferno holds its own descriptor of the file
            self._proc = procs.spawn([collapse], stdin=subprocess.PIPE, stdout=out, stderr=err)
        self._broken = False                 # inferno stopped reading (it died): see finish()

    def __enter__(self) -> "InfernoFold":
        return self

    def __exit__(self, kind, *_: Any) -> None:
        if kind is not None:
            procs.kill_group(self._proc, 5.0)

    def feed(self, src: IO[bytes], skips: SkipCounter | None = None) -> None:
        """Copy `src` to inferno until it ends, counting its samples per thread (and, given
        a SkipCounter, their skipped callers)."""
        while piece := src.read(self._piece):
            self.write(piece)
            self.threads.feed(piece)
            if skips is not None:
                skips.feed(piece)
        self.threads.close()
        if skips is not None:
            skips.close()

    def feeder(self, skips: SkipCounter) -> Callable[[IO[bytes]], None]:
        return lambda src: self.feed(src, skips)

    def write(self, piece: bytes) -> None:
        """`perf script` bytes for inferno (a router's share of them: fold_windows)."""
        if not self._broken:
            try:
                self._proc.stdin.write(piece)
            except BrokenPipeError:
                self._broken = True

    def finish(self) -> int:
        """Close inferno's input and wait for it to write the folded stacks; its status."""
        try:
            self._proc.stdin.close()
        except BrokenPipeError:
            pass
        rc = self._proc.wait(600)
        procs.forget(self._proc)
        return rc


def fold_windows(perf: str, collapse: str, perf_data: Sequence[Path],
                 windows: list[tuple[float, float, str]], folded: dict[str, Path], err_path: Path,
                 threads_tsv: dict[str, Path], modes: Sequence[str] = ()
                 ) -> tuple[dict[str, Folded], int]:
    """`perf script` of each file (one per unwinding mode, in `modes`), read once, its
    samples split by time window into one inferno-collapse-perf per key (analysis/profile/
    perfscript.SampleRouter): `windows` (start, end, key) in perf's clock (`perf record -k
    mono`: time.monotonic). Returns each key's Folded (skipped callers counted in the same
    bytes) and the samples outside every window (switching, settling, the idle server)."""
    sites = CallSites()
    skips = {k: [SkipCounter(sites, _mode(modes, i) == "dwarf") for i in range(len(perf_data))]
             for k in folded}
    now = [0]                                  # the file being read
    with open(err_path, "ab") as err, ExitStack() as stack:
        folds = {k: stack.enter_context(InfernoFold(collapse, folded[k], err)) for k in folded}

        def sink(k: str, b: bytes) -> None:
            folds[k].write(b)
            skips[k][now[0]].feed(b)
        router = SampleRouter(windows, sink, tuple(folded))
        rc_ps = []
        for i, d in enumerate(perf_data):
            now[0] = i
            rc_ps.append(_script(perf, d, _routed(router), err))
            for k in folded:
                skips[k][i].close()
        router.close()
        rcs = {k: f.finish() for k, f in folds.items()}
        if any(rc_ps) or any(rcs.values()):
            raise ProfileError(f"perf script (status {rc_ps}) | inferno-collapse-perf (status "
                               f"{rcs}) failed; see {err_path}")
    out = {}
    for k in folded:
        router.threads[k].write_tsv(threads_tsv[k])
        samples = router.threads[k].samples
        out[k] = Folded(len(folded[k].read_text(errors="replace").splitlines()),
                        sum(samples.values()), sorted({comm for _, comm in samples}),
                        merged(skips[k]))
    sites.close()
    return out, router.dropped


def _routed(router: SampleRouter) -> Callable[[IO[bytes]], None]:
    """Feed perf script's text to the router a MiB at a time, then close its file."""
    def feed(out: IO[bytes]) -> None:
        while piece := out.read(1 << 20):
            router.feed(piece)
        router.end_file()
    return feed


def _script(perf: str, perf_data: Path, consume: Callable[[IO[bytes]], None], err: IO[bytes]) -> int:
    """`perf script` of one file, its stdout read by `consume`; perf's exit status.
    --no-inline: a DWARF stack would otherwise list the functions the compiler inlined as
    frames of their own (dictGetNext under dictFindByHash), which a frame-pointer stack never
    does, so the same function's rows would differ between threads unwound either way."""
    ps = procs.spawn([perf, "script", "--no-inline", "-i", str(perf_data)], stdout=subprocess.PIPE,
                     stderr=err)
    try:
        consume(ps.stdout)
    except BaseException:
        procs.kill_group(ps, 5.0)          # a Ctrl-C while folding: no perf left behind
        raise
    finally:
        ps.stdout.close()
    rc = ps.wait(600)
    procs.forget(ps)
    return rc
