"""The profile model every CPU-profile view derives from: weighted stacks.

Like pprof's profile.proto reduced to what the reports need: a multiset of call
stacks (root first) with a weight each (samples, or nanoseconds for Parca/pprof
input). Folded files (`perf script | inferno-collapse-perf`) and pprof files
(analysis/profile/pprof.py) both become a `Stacks`; flat / cumulative / caller / callee /
per-thread views are computed here.

Frame names are normalised so one function matches across two builds: inferno's
annotation suffixes (`_[i]` inlined, `_[k]` kernel, `_[j]` jit) are removed, because
whether the compiler inlined a prefetch loop is exactly what differs between a base
and a candidate build and must not split one function into two rows. `[unknown]`
frames inside a stack (a broken unwind, not a function) are dropped; an `[unknown]`
leaf is kept so its cost is not silently given to its caller.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from analysis.errors import UserError

UNKNOWN = "[unknown]"
# inferno-collapse-perf annotations: inlined, kernel, jit
_SUFFIX = re.compile(r"_\[[ikj]\]$")
# The parts a compiler splits a function into, and its specialised copies: GCC's
# `f.part.0` (partial inlining), `.constprop.N`, `.isra.N`, `.cold`, `.lto_priv.N`, clang's
# `.llvm.N`. Which of them a build has depends on the code around the function, so a patch
# elsewhere in the file renames it (msetGenericCommand became msetGenericCommand.part.0 when
# a call was added to it): one name per function, or it reads as gone in one build and new
# in the other.
_CLONE = re.compile(r"(?:\.(?:part|constprop|isra|cold|lto_priv|localalias|llvm)(?:\.[0-9]+)?)+$")
# `comm-pid/tid` or `comm-pid` (inferno --pid / --tid) -> comm
_THREAD_IDS = re.compile(r"-\d+(?:/\d+)?$")


class FoldedError(UserError, ValueError):
    """A malformed folded-stacks file; the message starts with file:line."""


@dataclass
class Stacks:
    """Root-first stacks -> weight. With thread_frame, frame 0 is the thread name."""
    weights: dict[tuple[str, ...], float] = field(default_factory=dict)
    unit: str = "samples"          # "samples" or "nanoseconds"
    thread_frame: bool = True      # first frame is the thread name (comm)

    @property
    def total(self) -> float:
        return float(sum(self.weights.values()))

    def add(self, frames: tuple[str, ...], weight: float) -> None:
        self.weights[frames] = self.weights.get(frames, 0) + weight

    def functions_of(self, frames: tuple[str, ...]) -> tuple[str, ...]:
        """The function frames of a stack (the thread frame removed)."""
        return frames[1:] if self.thread_frame else frames


@dataclass
class FunctionCost:
    name: str
    flat: float          # weight where the function is the leaf (unit of the Stacks)
    cum: float           # weight of stacks containing it anywhere (once per stack)
    flat_share: float    # flat as % of the total weight (0-100)
    cum_share: float     # cum as % of the total weight (0-100)


def normalize_frame(frame: str) -> str:
    """One function name across builds: drop inferno's `_[i]`/`_[k]`/`_[j]` suffix and the
    compiler's clone suffixes (`.part.0`, `.constprop.1`, `.cold` ...)."""
    return _CLONE.sub("", _SUFFIX.sub("", frame.strip()))


def thread_name(frame: str) -> str:
    """`redis-server-123/456` -> `redis-server` (pids differ between reps)."""
    return _THREAD_IDS.sub("", frame)


def normalize_stack(frames: Iterable[str], thread_frame: bool = True) -> tuple[str, ...]:
    out: list[str] = []
    frames = list(frames)
    raw_last = None
    for i, raw in enumerate(frames):
        if thread_frame and i == 0:
            out.append(thread_name(raw.strip()))
            continue
        f = normalize_frame(raw)
        if f == UNKNOWN and i != len(frames) - 1:
            continue
        if out and out[-1] == f and raw.strip() != raw_last:
            continue        # f calling its own split-off part f.part.0: one frame (not recursion)
        out.append(f)
        raw_last = raw.strip()
    return tuple(out)


def parse_folded_lines(lines: Iterable[str], source: str = "<input>", *,
                       thread_frame: bool = True, unit: str = "samples",
                       normalized: bool = False) -> Stacks:
    """Folded lines -> Stacks. `normalized`: the frames were normalised already (a file
    write_folded wrote), so they are kept as they are; normalising twice would cut a
    thread named like `worker-2` down to `worker`."""
    st = Stacks(unit=unit, thread_frame=thread_frame)
    w = st.weights
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\n").rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not stack:
            raise FoldedError(f"{source}:{lineno}: expected 'frame;frame;... COUNT', got {line[:80]!r}")
        try:
            value = int(count)
        except ValueError:
            try:
                value = float(count)
            except ValueError:
                raise FoldedError(f"{source}:{lineno}: sample count {count!r} is not a number") from None
        if value < 0:
            raise FoldedError(f"{source}:{lineno}: negative sample count {value}")
        frames = tuple(stack.split(";")) if normalized else normalize_stack(stack.split(";"), thread_frame)
        if not frames or any(not f for f in frames):
            raise FoldedError(f"{source}:{lineno}: empty frame name in {stack[:80]!r}")
        w[frames] = w.get(frames, 0) + value
    return st


def read_folded(path: str | Path, *, thread_frame: bool = True, unit: str = "samples",
                normalized: bool = False) -> Stacks:
    """Read a folded-stacks file (`a;b;c 12` per line). Errors name file:line."""
    p = Path(path)
    try:
        with open(p, encoding="utf-8", errors="replace") as f:
            return parse_folded_lines(f, str(p), thread_frame=thread_frame, unit=unit,
                                      normalized=normalized)
    except FileNotFoundError:
        raise FoldedError(f"{p}: no such folded-stacks file") from None


def format_weight(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def write_folded(stacks: Stacks, path: str | Path) -> None:
    """Write folded stacks, sorted (stable diffs), integer counts when integral."""
    lines = sorted(";".join(k) + " " + format_weight(v) for k, v in stacks.weights.items() if v)
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""))


# ------------------------------------------------------------------ thread groups

THREAD_GROUPS = ("main", "io-threads", "background", "other")
_IO = re.compile(r"^io_thd_\d+$")
_BACKGROUND = re.compile(r"^(bio_|jemalloc_bg_thd|redis-rdb-|redis-aof-|valkey-rdb-|valkey-aof-)")
_MAIN = re.compile(r"^(redis|valkey|keydb)-(server|check-rdb)$")


def thread_group(name: str, main_names: Iterable[str] = ()) -> str:
    """Which group a thread name (comm) belongs to; the rules, in order:

    io-threads  `io_thd_<n>` (Redis >= 6 and Valkey name their I/O threads so)
    background  `bio_*` (close_file, aof_fsync, lazy_free), `jemalloc_bg_thd`, and the
                fork children `redis-rdb-*` / `redis-aof-*` (and valkey-)
    main        `redis-server`, `valkey-server`, `keydb-server` (the main thread keeps
                the executable's name; Debian's `redis-check-rdb` multi-call binary too),
                or any name in `main_names` (a renamed binary, comm is cut to 15 chars)
    other       everything else
    """
    if _IO.match(name):
        return "io-threads"
    if _BACKGROUND.match(name):
        return "background"
    if _MAIN.match(name) or name in set(main_names):
        return "main"
    return "other"


def thread_groups(stacks: Stacks, main_names: Iterable[str] = ()) -> dict[str, Stacks]:
    """Split by thread group (see thread_group); groups with no samples are left out."""
    if not stacks.thread_frame:
        raise ValueError("thread_groups: these stacks have no thread frame (thread_frame=False)")
    main_names = tuple(main_names)
    out: dict[str, Stacks] = {}
    for frames, v in stacks.weights.items():
        g = thread_group(frames[0], main_names)
        out.setdefault(g, Stacks(unit=stacks.unit, thread_frame=True)).add(frames, v)
    return {g: out[g] for g in THREAD_GROUPS if g in out}


def view(stacks: Stacks, name: str, main_names: Iterable[str] = ()) -> Stacks:
    """The stacks of one thread view: "all", or one thread group ("main", "io-threads",
    ...; empty when the group has no samples). Stacks without a thread frame have only
    the "all" view, whatever is asked."""
    if name == "all" or not stacks.thread_frame:
        return stacks
    return thread_groups(stacks, main_names).get(name, Stacks(unit=stacks.unit))


# ------------------------------------------------------------------------- views

def function_costs(stacks: Stacks) -> dict[str, FunctionCost]:
    """Flat and cumulative cost per function (thread frame excluded), largest flat first."""
    flat: dict[str, float] = defaultdict(float)
    cum: dict[str, float] = defaultdict(float)
    total = 0.0
    for frames, v in stacks.weights.items():
        fns = stacks.functions_of(frames)
        total += v
        if not fns:
            continue
        flat[fns[-1]] += v
        for fn in set(fns):    # once per stack, even under recursion
            cum[fn] += v
    pct = (100.0 / total) if total else 0.0
    out = {fn: FunctionCost(fn, flat.get(fn, 0.0), c, flat.get(fn, 0.0) * pct, c * pct)
           for fn, c in cum.items()}
    return dict(sorted(out.items(), key=lambda kv: (-kv[1].flat, -kv[1].cum, kv[0])))


ROOT = "(root)"


def callers(stacks: Stacks, fn: str) -> dict[str, float]:
    """Who calls `fn`, weighted by the samples under those calls (each caller once per
    stack). A call from the thread's bottom frame is reported as "(root)"."""
    acc: dict[str, float] = defaultdict(float)
    for frames, v in stacks.weights.items():
        fns = stacks.functions_of(frames)
        seen = set()
        for i, f in enumerate(fns):
            if f == fn:
                c = fns[i - 1] if i > 0 else ROOT
                if c not in seen:
                    seen.add(c)
                    acc[c] += v
    return dict(sorted(acc.items(), key=lambda kv: -kv[1]))


def callees(stacks: Stacks, fn: str) -> dict[str, float]:
    """What `fn` calls, weighted by the samples under those calls (each callee once per
    stack). The function's own (flat) time is not a callee; see function_costs."""
    acc: dict[str, float] = defaultdict(float)
    for frames, v in stacks.weights.items():
        fns = stacks.functions_of(frames)
        seen = set()
        for i in range(len(fns) - 1):
            if fns[i] == fn:
                c = fns[i + 1]
                if c not in seen:
                    seen.add(c)
                    acc[c] += v
    return dict(sorted(acc.items(), key=lambda kv: -kv[1]))


def merge(stacks_list: Iterable[Stacks]) -> Stacks:
    """Sum several profiles (e.g. the reps of one variant). Units must agree."""
    items = list(stacks_list)
    if not items:
        return Stacks()
    unit, tf = items[0].unit, items[0].thread_frame
    out = Stacks(unit=unit, thread_frame=tf)
    for s in items:
        if s.unit != unit or s.thread_frame != tf:
            raise ValueError(f"merge: cannot add {s.unit}/thread_frame={s.thread_frame} "
                             f"to {unit}/thread_frame={tf}")
        for k, v in s.weights.items():
            out.add(k, v)
    return out
