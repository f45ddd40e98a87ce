"""Skipped callers: frame-pointer stacks that lost the direct caller of a leaf in code
without frame pointers, counted in `perf script` text.

Frame-pointer unwinding (perf's `-g`) starts at the sampled instruction and then follows
%rbp. Code built without frame pointers (Debian's glibc, the vDSO) does not push a frame,
so while the sample is in it %rbp still holds its caller's frame, whose saved return address
points into the caller's caller: the stack reads `call;clock_gettime;__vdso_clock_gettime`
where msetGenericCommand called clock_gettime. The caller is skipped, not truncated (the
stack still reaches main), so every cumulative row misses the time its function spends
directly in such code (memcmp, memcpy, write, clock_gettime ...), and the truncation count
(analysis/profile/truncation.py) cannot see it.

The rule, per sample with user frames:
- **at risk**: its leaf-most user frames are in a shared object (`*.so*`), the vDSO or a
  PLT stub (the *leaf run*), and a frame of other code follows them;
- **skipped**: at risk, and the call instruction before that frame's return address does
  not call into a shared object: a direct call to one of its own functions (that function
  is the missing caller), or a call through a function pointer (a command's proc, a
  connection's write). What the call instruction is comes from `sites(dso, address)`
  (collectors/profilers/perf/callsites.py reads the object's file): `library` | `local` |
  `pointer` | None (not readable: counted `unknown`, not skipped).
A frame that follows a call into the PLT or through the GOT is a plausible caller: the
library code kept a frame (it pushed %rbp), or was entered straight from there (glibc's
gettimeofday is the vDSO's own, which keeps one).

DWARF-unwound stacks (perf's `--call-graph dwarf`) take each caller from the unwinding
tables, so the rule finds (almost) nothing skipped in them: that is how it is checked
(tests/test_skipped.py on recorded text of both). perf prints a DWARF stack's return
addresses one byte early (the call instruction's last byte, for its line numbers), so
with `dwarf` the address is moved back to the return address before it is read.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from analysis.profile.perfscript import _HEADER_BYTES

Sites = Callable[[str, int], "str | None"]

_FRAME = re.compile(rb"^\t\s*([0-9a-f]+) (.*) \((.*)\)$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
_LIBRARY = re.compile(r"(^|/)[^/]+\.so(\.[0-9A-Za-z_]+)*$")
KERNEL_START = 0xFFFF800000000000


def is_library(dso: str, sym: str = "") -> bool:
    """Code without a frame of its own: in a shared object or the vDSO (no frame pointers
    assumed), or a PLT stub (`clock_gettime@plt`, in the executable itself)."""
    return dso == "[vdso]" or bool(_LIBRARY.search(dso)) or _OFFSET.sub("", sym).endswith("@plt")


@dataclass
class ThreadSkips:
    """One thread's samples by the rule above."""
    samples: int = 0
    at_risk: int = 0
    skipped: int = 0
    unknown: int = 0
    # "frame listed -> leaf run's outermost function" of the skipped samples -> samples
    sites: Counter = field(default_factory=Counter)

    def add(self, other: "ThreadSkips") -> None:
        self.samples += other.samples
        self.at_risk += other.at_risk
        self.skipped += other.skipped
        self.unknown += other.unknown
        self.sites.update(other.sites)


class SkipCounter:
    """Fed `perf script` text in pieces of any size (like perfscript.ThreadCounter);
    `threads`: comm -> ThreadSkips. `dwarf` says how the text being fed was unwound
    (set it before each file: one perf record per unwinding mode)."""

    def __init__(self, sites: Sites, dwarf: bool = False) -> None:
        self.sites = sites
        self.dwarf = dwarf
        self.threads: dict[str, ThreadSkips] = {}
        self._tail = b""
        self._comm: str | None = None
        self._frames: list[tuple[int, str, str]] = []
        self._enough = False            # the frames read so far are all the rule needs

    def feed(self, piece: bytes) -> None:
        end = piece.rfind(b"\n") + 1
        if not end:
            self._tail += piece
            return
        lines = (self._tail + piece[:end]).split(b"\n")[:-1]
        self._tail = piece[end:]
        for line in lines:
            self._line(line)

    def close(self) -> None:
        """The end of one file's text: its last sample is counted."""
        if self._tail:
            self._line(self._tail)
            self._tail = b""
        self._sample()

    def _line(self, line: bytes) -> None:
        if line[:1] == b"\t":
            if self._comm is None or self._enough:
                return                  # the sample's frames past its first caller matter not
            m = _FRAME.match(line)
            if m:
                frame = (int(m[1], 16), m[2].decode(errors="replace"), m[3].decode(errors="replace"))
                self._frames.append(frame)
                if _is_user(frame) and not is_library(frame[2], frame[1]):
                    self._enough = True   # the first frame of other code: all the rule reads
            return
        if not line.strip():
            return
        self._sample()
        m = _HEADER_BYTES.match(line)
        # the thread's name as inferno-collapse-perf writes it (spaces become underscores)
        self._comm = m.group("comm").decode(errors="replace").replace(" ", "_") if m else None

    def _sample(self) -> None:
        if self._comm is not None:
            t = self.threads.setdefault(self._comm, ThreadSkips())
            t.samples += 1
            verdict, site = classify(self._frames, self.sites, self.dwarf)
            if verdict != "whole":
                t.at_risk += 1
                if verdict == "skipped":
                    t.skipped += 1
                    t.sites[site] += 1
                elif verdict == "unknown":
                    t.unknown += 1
        self._comm, self._frames, self._enough = None, [], False


def classify(frames: list[tuple[int, str, str]], sites: Sites, dwarf: bool = False
             ) -> tuple[str, str]:
    """(whole | plausible | skipped | unknown, "listed -> leaf function") for one sample's
    frames (address, symbol+offset, object), leaf first."""
    user = [f for f in frames if _is_user(f)]
    run = 0
    while run < len(user) and is_library(user[run][2], user[run][1]):
        run += 1
    if run == 0 or run == len(user):
        return "whole", ""
    addr, sym, dso = user[run]
    site = f"{_OFFSET.sub('', sym)} -> {_OFFSET.sub('', user[run - 1][1])}"
    if dso.startswith("["):                  # [unknown], an anonymous mapping: no file
        return "unknown", site
    kind = sites(dso, addr + 1 if dwarf else addr)
    if kind is None:
        return "unknown", site
    return ("plausible" if kind == "library" else "skipped"), site


def _is_user(frame: tuple[int, str, str]) -> bool:
    return frame[2] not in ("[kernel.kallsyms]", "inlined") and frame[0] < KERNEL_START


def merged(counters: list[SkipCounter]) -> dict[str, ThreadSkips]:
    """The threads of several counters (one per perf record of a rep) added up."""
    out: dict[str, ThreadSkips] = {}
    for c in counters:
        for comm, t in c.threads.items():
            out.setdefault(comm, ThreadSkips()).add(t)
    return out
