"""memtier_benchmark command lines as redis-benchmarks-specification suite files write
them (one shell-quoted string): parsed into long option names and values."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from analysis.errors import UserError

# memtier_benchmark defaults (memtier_benchmark --help, 2.x) for options a suite omits.
MEMTIER_DEFAULTS = {"clients": 50, "threads": 4, "key-minimum": 0, "key-maximum": 10_000_000,
                    "data-size": 32, "key-prefix": "memtier-", "pipeline": 1}
SHORT = {"c": "clients", "t": "threads", "n": "requests", "d": "data-size", "x": "run-count",
         "P": "protocol", "s": "server", "p": "port", "R": "random-data", "S": "unix-socket"}
FLAGS = {"hide-histogram", "random-data", "distinct-client-seed", "cluster-mode", "no-expiry",
         "randomize", "reconnect-on-error", "verify-only", "hdr-file-prefix-none"}
# Output and transport options: nothing to translate, and nothing lost for a case.
OUTPUT_OPTS = {"hide-histogram", "print-percentiles", "json-out-file", "hdr-file-prefix",
               "run-count", "server", "port", "unix-socket", "protocol", "print-all-runs"}
# Options whose meaning the workload already carries.
WORKLOAD_OPTS = {"command", "clients", "threads", "pipeline", "test-time", "requests", "key-minimum",
                 "key-maximum", "key-prefix", "data-size", "command-key-pattern", "key-pattern", "ratio",
                 "command-ratio", "key-stddev", "key-median"}


class MemtierArgsError(UserError, ValueError):
    """Arguments that cannot be read; the message starts with where they came from."""


@dataclass
class MemtierArgs:
    opts: dict[str, list[str]]      # long option name -> values, in order
    stray: list[str]                # words that are not options
    # Every option in command-line order: --command-ratio and --command-key-pattern
    # belong to the --command before them, which opts alone cannot tell.
    order: list[tuple[str, str]] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        return self.opts[name][-1] if name in self.opts else default

    def int(self, name: str, where: str) -> int:
        v = self.get(name, MEMTIER_DEFAULTS.get(name))
        try:
            return int(v)
        except (TypeError, ValueError):
            raise MemtierArgsError(f"{where}: memtier --{name} {v!r} is not an integer") from None


def parse_memtier(arguments: str, where: str) -> MemtierArgs:
    """memtier_benchmark's command line (as one string, shell-quoted) -> options."""
    try:
        words = shlex.split(arguments or "")
    except ValueError as e:
        raise MemtierArgsError(f"{where}: cannot split the memtier arguments: {e}") from None
    opts: dict[str, list[str]] = {}
    order: list[tuple[str, str]] = []
    stray: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") or (w.startswith("-") and len(w) == 2 and w[1] in SHORT):
            name, eq, value = (w[2:].partition("=") if w.startswith("--") else (SHORT[w[1]], "", ""))
            if not eq:
                if name in FLAGS:
                    value = ""
                elif i + 1 < len(words):
                    i += 1
                    value = words[i]
                else:
                    raise MemtierArgsError(f"{where}: memtier option {w} has no value")
            opts.setdefault(name, []).append(value)
            order.append((name, value))
        else:
            stray.append(w)
        i += 1
    return MemtierArgs(opts, stray, order)
