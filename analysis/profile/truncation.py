"""Truncated stacks: samples whose call chain stops before the thread's entry point.

A stack that does not reach `main` (via `__libc_start_call_main`) or a thread start
(`start_thread`, `clone3`) lost its callers: the unwinder met a frame without a frame
pointer (a bundled jemalloc built with -fomit-frame-pointer puts `je_malloc_usable_size`
straight under `redis-server`), so every caller above it, msetGenericCommand included,
misses those samples, and each cumulative share is understated by up to that much.
Flat shares are not affected: the leaf is right.

ENTRY_FRAMES is the set of bottom frames a whole user stack starts with, read off the
recorded profiles in tests/data (Redis main thread: `__libc_start_call_main`; io-threads
and bio threads: `start_thread`; glibc >= 2.34 with DWARF unwinding adds `clone3` or
`__clone3` below it; statically linked binaries and older glibc: `_start`,
`__libc_start_main`; kernel threads: `ret_from_fork`). Inner `[unknown]` frames are dropped
when folded stacks are read (analysis/profile/stacks.py), so a stack like
`redis-server;[unknown];je_malloc_usable_size` arrives here as one that starts at
`je_malloc_usable_size`.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from analysis.profile.stacks import Stacks

ENTRY_FRAMES = frozenset({
    "_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main", "main",
    "start_thread", "clone", "clone3", "__clone", "__clone3", "__GI___clone", "__GI___clone3",
    "thread_start",  # musl
    "ret_from_fork", "ret_from_fork_asm", "kthread",
})


@dataclass
class Truncation:
    """How much of one profile's weight has a truncated stack."""
    total: float
    truncated: float
    # where the truncated stacks start (their bottom function frame) -> weight
    roots: dict[str, float] = field(default_factory=dict)

    @property
    def share(self) -> float:
        """% of the profile's weight (0-100)."""
        return 100.0 * self.truncated / self.total if self.total else 0.0


def truncation(stacks: Stacks, entries: frozenset[str] = ENTRY_FRAMES) -> Truncation:
    roots: dict[str, float] = defaultdict(float)
    total = bad = 0.0
    for frames, w in stacks.weights.items():
        total += w
        fns = stacks.functions_of(frames)
        if fns and fns[0] in entries:
            continue
        bad += w
        roots[fns[0] if fns else "(no frames)"] += w
    return Truncation(total, bad, dict(sorted(roots.items(), key=lambda kv: (-kv[1], kv[0]))))
