"""`perf script` sample headers: which thread (comm, pid, tid) was sampled, when, how much
(period) of which event; and the count of samples per thread that perf.threads.tsv holds.

The stacks are folded by inferno-collapse-perf, not here: the perf collector
(collectors/profilers/perf/record.py) runs `perf script` once per rep and sends its bytes on
to inferno while ThreadCounter reads the same bytes for the sample headers (before, a second
`perf script -F tid,comm` pass counted them). perf's default layout:

    redis-server  9453   843.790248:    1001001 cpu-clock:
    \tffffffff8168c043 __lruvec_stat_mod_folio+0x43 ([kernel.kallsyms])
    \t           9e00d dbAdd+0x1d (/tmp/ss/src/redis-7.0.15/src/redis-server)
    <blank line>

A header is "comm [pid/]tid [cpu] time: [period] event:" (perf pads comm on the left, and
without a call graph the sampled frame follows on the same line). The comm may hold spaces
and number words ("worker 1"), so it is read from the right: it ends where a tid followed by
an optional [cpu] and a `seconds.fraction:` time stamp begins. Frame lines start with a tab.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import UserError

# One definition, compiled for str (parse_header) and for bytes (ThreadCounter reads perf
# script's bytes as they stream past). [0-9] rather than \d: the same digits in both.
_HEADER_PATTERN = (
    r"^[ ]*(?P<comm>[^\t\n ][^\n]*?)[ \t]+(?:(?P<pid>[0-9]+)/)?(?P<tid>[0-9]+)[ \t]+"
    r"(?:\[(?P<cpu>[0-9]+)\][ \t]+)?(?P<time>[0-9]+\.[0-9]+):[ \t]+"
    r"(?:(?P<period>[0-9]+)[ \t]+)?(?P<event>[^ \t\n]+?):?(?=[ \t\r]|$)")
_HEADER = re.compile(_HEADER_PATTERN)
_HEADER_BYTES = re.compile(_HEADER_PATTERN.encode())


class PerfScriptError(UserError, ValueError):
    """`perf script` text we cannot read; the message names the line."""


@dataclass(frozen=True)
class SampleHeader:
    """One sample's header line, as perf printed it."""
    comm: str                  # the thread's name, spaces kept ("worker 1")
    tid: int
    pid: int | None            # only when perf printed pid/tid
    cpu: int | None            # only when perf printed [cpu]
    time_s: float              # perf's clock, seconds
    period: int | None         # only when perf printed it (cpu-clock: nanoseconds)
    event: str                 # "cpu-clock", "cycles:u", ...


def parse_header(line: str) -> SampleHeader:
    """The header of one `perf script` sample; PerfScriptError when the line is none."""
    m = _HEADER.match(line.rstrip("\n"))
    if not m:
        raise PerfScriptError(f"not a `perf script` sample header: {line.strip()[:100]!r} "
                              "(expected 'comm [pid/]tid [cpu] time: [period] event:')")
    opt = lambda name: int(m[name]) if m[name] is not None else None  # noqa: E731
    return SampleHeader(comm=m["comm"], tid=int(m["tid"]), pid=opt("pid"), cpu=opt("cpu"),
                        time_s=float(m["time"]), period=opt("period"), event=m["event"])


class ThreadCounter:
    """Samples per (tid, comm) in `perf script` text fed as bytes in pieces of any size
    (a line may be split between two pieces): what `perf script -F tid,comm` counted,
    every sample of every event, the comm as perf printed it."""

    def __init__(self) -> None:
        self._counts: Counter = Counter()       # (tid bytes, comm bytes) -> samples
        self._tail = b""                        # the unfinished last line of the last piece
        self.unread = 0                         # header-like lines that were no header
        self.first_unread: str | None = None

    def feed(self, piece: bytes) -> None:
        end = piece.rfind(b"\n") + 1
        if not end:
            self._tail += piece
            return
        self._count(self._tail + piece[:end])
        self._tail = piece[end:]

    def count(self, tid: bytes, comm: bytes) -> None:
        """One sample of a thread, read elsewhere (SampleRouter)."""
        self._counts[(tid, comm)] += 1

    def close(self) -> None:
        """The text ended: count its last line when that had no newline."""
        if self._tail:
            self._count(self._tail + b"\n")
            self._tail = b""

    def _count(self, lines: bytes) -> None:
        # Splitting and dropping frame lines first is 4x faster than one multi-line regex
        # over the whole text: only the headers (a tenth of the bytes) meet the regex.
        match = _HEADER_BYTES.match
        for line in lines.split(b"\n"):
            if not line or line[0] == 9 or line.isspace():      # blank, or a frame (tab)
                continue
            m = match(line)
            if m:
                self._counts[m.group("tid", "comm")] += 1
            else:
                self.unread += 1
                if self.first_unread is None:
                    self.first_unread = line.decode(errors="replace").strip()

    @property
    def samples(self) -> dict[tuple[int, str], int]:
        """(tid, comm) -> samples, sorted by tid then comm."""
        return dict(sorted(((int(tid), comm.decode(errors="replace")), n)
                           for (tid, comm), n in self._counts.items()))

    def write_tsv(self, path: Path) -> None:
        """perf.threads.tsv: tid <TAB> comm <TAB> samples (docs/run-directory.md)."""
        with open(path, "w") as f:
            f.write("tid\tcomm\tsamples\n")
            for (tid, comm), n in self.samples.items():
                f.write(f"{tid}\t{comm}\t{n}\n")


class SampleRouter:
    """Routes `perf script` text, fed as bytes in pieces of any size, sample by sample: each
    sample (its header line and the frame lines under it, up to the next header) goes to the
    key whose time window holds the header's time stamp, or nowhere. How one `perf record`
    of paired windows (collectors/profilers/perf/paired.py, `perf record -k mono`: the
    stamps are CLOCK_MONOTONIC seconds, Python's time.monotonic) is split into each
    variant's samples: only the windows the server's counters measured, so a function's
    CPU time over them divides by exactly the operations counted in them.

    `windows`: (start s, end s, key), non-overlapping; `sink(key, bytes)` receives a key's
    lines in order (blank lines between samples kept). Each key's samples are counted per
    thread as ThreadCounter counts them; `dropped` counts samples outside every window."""

    def __init__(self, windows: list[tuple[float, float, str]], sink,
                 keys: tuple[str, ...] = ()) -> None:
        self._starts = sorted(windows)
        self._sink = sink
        self._tail = b""
        self._key: str | None = None          # the current sample's key (None: dropped)
        # `keys`: every key a caller expects, also one without a window (no samples then)
        self.threads: dict[str, ThreadCounter] = {k: ThreadCounter() for k in
                                                  dict.fromkeys([*keys, *(k for _, _, k in windows)])}
        self.dropped = 0

    def _key_of(self, t: float) -> str | None:
        i = bisect.bisect_right(self._starts, (t, float("inf"), "")) - 1
        if i >= 0:
            t0, t1, key = self._starts[i]
            if t0 <= t <= t1:
                return key
        return None

    def feed(self, piece: bytes) -> None:
        end = piece.rfind(b"\n") + 1
        if not end:
            self._tail += piece
            return
        self._route(self._tail + piece[:end])
        self._tail = piece[end:]

    def end_file(self) -> None:
        """One `perf script` ended (another may follow): its unfinished line is routed and
        its last sample closed with a blank line, so the next file's first header starts a
        sample of its own in inferno's input."""
        if self._tail:
            self._route(self._tail + b"\n")
            self._tail = b""
        if self._key is not None:
            self._sink(self._key, b"\n")
        self._key = None

    def close(self) -> None:
        self.end_file()
        for t in self.threads.values():
            t.close()

    def _route(self, lines: bytes) -> None:
        out: dict[str, list[bytes]] = {}
        match = _HEADER_BYTES.match
        for line in lines.split(b"\n")[:-1]:
            if line and line[0] != 9 and not line.isspace():
                m = match(line)
                if m:
                    self._key = self._key_of(float(m.group("time")))
                    if self._key is None:
                        self.dropped += 1
                    else:
                        self.threads[self._key].count(*m.group("tid", "comm"))
            if self._key is not None:
                out.setdefault(self._key, []).append(line)
        for key, kept in out.items():
            self._sink(key, b"\n".join(kept) + b"\n")
