"""The one `perf script` collapser: raw `perf script` text -> folded stacks and per-thread
sample counts, in one pass.

The collector (collectors/profilers/perf_record.py) streams `perf script` through it once
per rep and writes perf.folded and perf.threads.tsv from what it saw; analysis reads a run
directory that only kept `perf script` text with it. The folding is inferno-collapse-perf's
with its default options, line for line (inferno 0.12.8, src/collapse/perf.rs), so
perf.folded is byte-for-byte what `perf script | inferno-collapse-perf` wrote before
(tests/test_perfscript.py checks that against the real inferno on recorded and live
recordings; bench/run.py figure 2 compares the two rates):

    redis-server 23630 [001]  552.310394:    1001001 cpu-clock:
    \tffffffff813349dd native_write_msr+0xd ([kernel.kallsyms])
    \t          5b21f3 dictFind+0x43 (/usr/bin/redis-server)
    <blank line>

- the header's comm is everything before the first all-digit word (`tid` or `pid/tid`),
  spaces become `_`; the event is the word before the second colon, the period (when
  perf printed one) the word before it;
- only the first event type seen is folded (cpu-clock and page-faults are not mixed);
  a sample weighs its period, else 1 (for cpu-clock the period is nanoseconds of CPU);
- a frame is `addr symbol (module)`: the `+0x..` offset is cut, `[unknown]` becomes
  `[<module basename>]`, a symbol starting with `(` is skipped, `;` becomes `:`, a C++
  argument list is cut (not Go's `.(*T)` nor `(anonymous namespace)`), Rust hashes are
  demangled, `a->b` is split with `_[i]` on the inlined part.

The thread counts are what `perf script -F tid,comm` counted: every sample of every
event, per (tid, comm), the comm as perf printed it (spaces kept).
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable

from analysis.profile.stacks import Stacks, normalize_stack

# inferno's event_line_parts: the first all-digit word (pid/tid allowed) ends the comm
_EVENT = re.compile(r"^(.*?) ([0-9/]+) ")
# the thread as `perf script -F tid,comm` names it: parsed from the right (comm may hold
# digit words); cpu and period optional
_THREAD = re.compile(r"^\s*(?P<comm>.+?)\s+(?:\d+/)?(?P<tid>\d+)\s+(?:\[\d+\]\s+)?\d+\.\d+:")
_RUST_HASH = re.compile(r"h[0-9a-fA-F]{16}$")
_RUST_ESCAPES = {"$SP$": "@", "$BP$": "*", "$RF$": "&", "$LT$": "<", "$GT$": ">",
                 "$LP$": "(", "$RP$": ")", "$C$": ",", "$u7e$": "~", "$u20$": " ",
                 "$u27$": "'", "$u3d$": "=", "$u5b$": "[", "$u5d$": "]", "$u7b$": "{",
                 "$u7d$": "}", "$u3b$": ";", "$u2b$": "+", "$u21$": "!", "$u22$": "\""}
_HEX = set("0123456789abcdefABCDEF")


class PerfScriptError(ValueError):
    """`perf script` text we cannot read; the message starts with source:line."""


@dataclass
class PerfScriptInfo:
    """What else the ingestion saw, beside the stacks."""
    samples: int               # samples folded (each weighs its period, see module doc)
    skipped: int               # samples of other event types (not the first one seen)
    event: str | None          # the event kept, e.g. "cpu-clock"
    threads: dict[int, str]    # tid -> thread name (comm, spaces as `_`), first seen
    unread: int = 0            # lines that were not perf script (skipped, as inferno does)


def _strip_offset(func: str) -> str:
    at = func.rfind("+0x")
    if at >= 0 and all(c in _HEX for c in func[at + 3:]):
        return func[:at]
    return func


def _rust_symbol(sym: str) -> str:
    """inferno's fix_partially_demangled_rust_symbol: `..` -> `::`, `$LT$` -> `<`, ...
    and the trailing `::h<16 hex>` hash cut."""
    if len(sym) < 17 or not _RUST_HASH.match(sym[-17:]):
        return sym
    rest = sym[:-17]
    if rest.endswith("::"):
        rest = rest[:-2]
    if rest.startswith("_$"):
        rest = rest[1:]
    out: list[str] = []
    while rest:
        if rest[0] == ".":
            two = rest.startswith("..")
            out.append("::" if two else ".")
            rest = rest[2 if two else 1:]
        elif rest[0] == "$":
            esc = next((e for e in _RUST_ESCAPES if rest.startswith(e)), None)
            if esc is None:
                out.append(rest)
                break
            out.append(_RUST_ESCAPES[esc])
            rest = rest[len(esc):]
        else:
            m = re.search(r"[$.]", rest)
            cut = m.start() if m else len(rest)
            out.append(rest[:cut])
            rest = rest[cut:]
    return "".join(out)


def _tidy(func: str) -> str:
    """inferno's tidy_generic: `;` -> `:`, a top-level argument list cut."""
    func = func.replace(";", ":")
    if "(" not in func:
        return func
    depth, last_dot = 0, -1
    for i, c in enumerate(func):
        if c in "<{[":
            depth += 1
        elif c in ">}])":
            depth -= 1
        elif c == "(":
            if depth == 0 and last_dot != i and not func.startswith("(anonymous namespace)", i):
                return func[:i]
            depth += 1
        elif c == ".":
            last_dot = i + 1
    return func


def _frame(func: str, module: str, java: bool) -> str:
    if func == "[unknown]" and module != "[unknown]":
        func = "[" + module[module.rfind("/") + 1:] + "]"
    func = _tidy(func)
    if java and func.startswith("L") and "/" in func:
        func = func[1:]              # Lorg/x/Y;.m -> org/x/Y:.m
    return func


def _frame_names(line: str, java: bool) -> tuple[str, ...] | None:
    """inferno's on_stack_line: the frames of one `addr symbol (module)` line, callee
    first (reversed again when the stack is joined); () for a skipped frame, None when the
    line is no frame line."""
    _addr, sep, rest = line.lstrip().partition(" ")
    func, sep2, module = rest.rpartition(" ")
    if not sep or not sep2 or len(module) < 2 or module[0] != "(" or module[-1] != ")":
        return None
    func = _strip_offset(func.strip() or " ")
    if func.startswith("("):
        return ()                       # a process name, as inferno (and the perl) skip
    names = [_frame(f, module[1:-1], java) for f in _rust_symbol(func).split("->")]
    names[1:] = [n if "_[i]" in n else n + "_[i]" for n in names[1:]]
    return tuple(reversed(names))


@dataclass
class PerfScriptFolder:
    """Folds `perf script` text fed to it (several recordings summed, as one inferno
    stdin did). `strict`: a line that is not perf script raises PerfScriptError (a file
    given by hand); otherwise it is counted and skipped (a live recording, like inferno)."""
    strict: bool = True
    folded: dict[str, int] = field(default_factory=dict)       # inferno's folded lines
    thread_samples: Counter = field(default_factory=Counter)   # (tid, comm) -> samples
    event: str | None = None
    periods: bool = False       # perf printed sample periods
    kept = skipped = unread = 0
    first_unread: str | None = None
    _seen: dict[str, tuple[str, ...] | None] = field(default_factory=dict, repr=False)

    def feed(self, lines: Iterable[str | bytes], source: str = "<stdin>") -> None:
        stack: list[str] = []
        pname, period, in_event, take = "", 1, False, True
        for lineno, raw in enumerate(lines, 1):
            line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            if line.startswith("#"):
                continue
            line = line.rstrip()
            if not line:
                self._emit(pname, stack, period)
                stack, in_event = [], False
            elif in_event:
                if take and not self._stack_line(line, stack, pname.startswith("java")):
                    self._unread(source, lineno, f"cannot read stack frame {line.strip()[:80]!r}")
            else:
                head = self._event_line(line, source, lineno)
                if head is None:
                    continue
                pname, period, take, single = head
                in_event = True
                if single and take:
                    self._stack_line(single, stack, pname.startswith("java"))
                    in_event = False
                    self._emit(pname, stack, period)
                    stack = []
        self._emit(pname, stack, period)

    def _emit(self, pname: str, stack: list[str], period: int) -> None:
        if stack:
            key = pname + ";" + ";".join(reversed(stack))
            self.folded[key] = self.folded.get(key, 0) + period
            self.kept += 1
            stack.clear()

    def _event_line(self, line: str, source: str, lineno: int):
        m = _EVENT.match(line)
        parts = line[m.end():].split(":", 2) if m else []
        # inferno takes a header without an event; by hand (strict) that is no perf script
        if not m or (self.strict and len(parts) < 2):
            what = ("stack frame with no sample header before it" if line[0] in " \t" else
                    f"not a `perf script` sample header: {line[:80]!r} (expected 'comm tid "
                    "time: period event:' - was the output made with -F?)")
            self._unread(source, lineno, what)
            return None
        t = _THREAD.match(line)
        if t:
            self.thread_samples[(int(t["tid"]), " ".join(t["comm"].split()))] += 1
        elif m[2].rpartition("/")[2]:      # no time printed: inferno's words
            self.thread_samples[(int(m[2].rpartition("/")[2]), m[1].strip())] += 1
        event, period = None, None
        if len(parts) >= 2:
            words = parts[1].split(" ")
            event = words[-1]
            if len(words) >= 2 and words[-2].isascii() and words[-2].isdigit():
                period = int(words[-2])
        if event is not None:
            if self.event is None:
                self.event = event
                self.periods = period is not None
            elif event != self.event:
                self.skipped += 1
                return "", 1, False, None
        single = None
        if len(parts) == 3:
            post = parts[2]
            cut = min((i for i in (post.find(":"), post.find(" ")) if i >= 0), default=-1)
            single = post[cut + 1:].strip() or None
        return m[1].strip().replace(" ", "_"), (1 if period is None else period), True, single

    def _stack_line(self, line: str, stack: list[str], java: bool) -> bool:
        """One frame line (leaf first) onto `stack`; False when it is no frame line.
        `java`: the thread's name starts with java (inferno's tidy_java). A recording
        repeats its frame lines (same address, same symbol): each is read once."""
        key = ("j" if java else "") + line
        names = self._seen.get(key, False)
        if names is False:
            names = self._seen[key] = _frame_names(line, java)
        if names is None:
            return False
        stack.extend(names)
        return True

    def _unread(self, source: str, lineno: int, what: str) -> None:
        msg = f"{source}:{lineno}: {what}"
        if self.strict:
            raise PerfScriptError(msg)
        self.unread += 1
        self.first_unread = self.first_unread or msg

    def folded_text(self) -> str:
        """inferno's output: `stack count` lines in byte order."""
        return "".join(f"{k} {v}\n" for k, v in sorted(self.folded.items()))

    def write_folded(self, path: str | Path) -> int:
        text = self.folded_text()
        Path(path).write_text(text, encoding="utf-8")
        return len(self.folded)

    def write_threads(self, path: str | Path) -> None:
        """perf.threads.tsv: tid, comm, samples (docs/run-directory.md)."""
        rows = "".join(f"{tid}\t{comm}\t{n}\n" for (tid, comm), n in sorted(self.thread_samples.items()))
        Path(path).write_text("tid\tcomm\tsamples\n" + rows, encoding="utf-8")

    def stacks(self) -> Stacks:
        """The folded stacks as the profile model reads perf.folded (frames normalised)."""
        unit = "samples"
        if self.periods:
            unit = "nanoseconds" if self.event in ("cpu-clock", "task-clock") else "events"
        st = Stacks(unit=unit, thread_frame=True)
        for key, w in self.folded.items():
            st.add(normalize_stack(key.split(";")), w)
        return st

    def info(self) -> PerfScriptInfo:
        threads: dict[int, str] = {}
        for tid, comm in self.thread_samples:
            threads.setdefault(tid, comm.replace(" ", "_"))
        return PerfScriptInfo(self.kept, self.skipped, self.event, threads, self.unread)


def collapse_perf_script_info(lines: Iterable[str], source: str = "<stdin>") -> tuple[Stacks, PerfScriptInfo]:
    """Collapse `perf script` text; returns the stacks and what else was seen."""
    folder = PerfScriptFolder()
    folder.feed(lines, source)
    return folder.stacks(), folder.info()


def collapse_perf_script(lines: Iterable[str], source: str = "<stdin>") -> Stacks:
    """`perf script` text -> Stacks (thread frame = comm), as inferno-collapse-perf does."""
    return collapse_perf_script_info(lines, source)[0]


def open_perf_script(path: Path) -> IO[str]:
    """A `perf script` text file, gzip when it ends in .gz."""
    if path.suffix == ".gz":
        import gzip
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_perf_script(path: str | Path) -> tuple[Stacks, PerfScriptInfo]:
    """Read a `perf script` text file (gzip when it ends in .gz)."""
    folder = fold_file(path)
    return folder.stacks(), folder.info()


def fold_file(path: str | Path) -> PerfScriptFolder:
    p = Path(path)
    folder = PerfScriptFolder()
    try:
        with open_perf_script(p) as f:
            folder.feed(f, str(p))
    except FileNotFoundError:
        raise PerfScriptError(f"{p}: no such perf script file") from None
    return folder


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(
        prog="python -m analysis.profile.perfscript",
        description="Collapse `perf script` text into folded stacks (first frame = thread name), "
                    "as inferno-collapse-perf does, and count each thread's samples.",
        epilog="examples:\n  perf script -i perf.data | python -m analysis.profile.perfscript - -o perf.folded\n"
               "  python -m analysis.profile.perfscript perf.script.gz -o perf.folded --threads perf.threads.tsv",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="perf script text file (.gz ok), or - for stdin")
    ap.add_argument("-o", "--output", required=True, help="folded stacks file to write")
    ap.add_argument("--threads", help="also write perf.threads.tsv (tid, comm, samples) here")
    a = ap.parse_args(argv)
    try:
        if a.input == "-":
            folder = PerfScriptFolder()
            folder.feed(sys.stdin, "<stdin>")
        else:
            folder = fold_file(a.input)
    except PerfScriptError as e:
        print(f"perfscript: error: {e}", file=sys.stderr)
        return 2
    n = folder.write_folded(a.output)
    if a.threads:
        folder.write_threads(a.threads)
    info = folder.info()
    print(f"{info.samples} samples ({info.event}), {n} stacks, "
          f"{len(info.threads)} threads -> {a.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
