"""Server binaries: version, symbols and frame pointers (which decide perf's call-graph
mode), their companion tools, and `bin:` variants (a prebuilt binary: no build, only
these checks)."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.errors import UserError
from analysis.inputs.manifest import Variant
from collectors.variants.spec import VariantSpec
from collectors.host import versions

# Functions present in every Redis/Valkey server; used to check for frame pointers.
FP_PROBE_FUNCTIONS = ("dictFind", "processCommand", "aeProcessEvents", "call",
                      "hashtableFind", "lookupKey")
# The bundled jemalloc (je_ prefix) is built by its own configure, with its own flags: a
# server with frame pointers can still hold an allocator without them, whose samples then
# lose every caller (a truncated stack under the thread's name).
DEPS_FP_PROBE_FUNCTIONS = ("je_malloc_usable_size", "je_malloc_default", "je_free_default",
                           "je_calloc", "je_realloc")


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class BinaryFacts:
    version: str
    commit: str
    symbols: bool
    frame_pointers: bool
    deps_frame_pointers: bool | None = None   # bundled jemalloc; None: not bundled

    @property
    def callgraph(self) -> str:
        # perf's fp unwinding needs both; without them dwarf unwinding still gives stacks.
        return "fp" if self.symbols and self.frame_pointers else "dwarf"


class BinaryError(UserError):
    """A server binary that cannot be used; the message says which and why."""


def server_version(server_bin: str) -> tuple[str, str]:
    """(version, sha) from `redis-server --version` ("Redis server v=8.0.6 sha=00000000:0 ...")."""
    r = versions.version_output([server_bin, "--version"])
    if r.error:
        raise BinaryError(f"{server_bin}: cannot run it ({r.error}); is it an executable "
                          f"Redis/Valkey server for this machine?")
    out = r.text.strip()
    m = re.search(r"\bv=(\S+)", out)
    if r.returncode != 0 or not m:
        raise BinaryError(f"{server_bin} --version did not print a Redis/Valkey version "
                          f"(exit {r.returncode}): {out[:200]!r}")
    sha = re.search(r"\bsha=([0-9a-f]+)", out)
    return m.group(1), (sha.group(1) if sha else "")


def has_symbols(server_bin: str) -> bool:
    """True when the ELF file keeps its .symtab (function names for every static function)."""
    try:
        out = subprocess.run(["readelf", "-S", "-W", server_bin], capture_output=True,
                             text=True, timeout=30).stdout
    except FileNotFoundError:
        raise BinaryError("readelf not found: apt-get install binutils") from None
    return " .symtab " in out


def has_frame_pointers(server_bin: str, functions: tuple[str, ...] = FP_PROBE_FUNCTIONS
                       ) -> bool | None:
    """Heuristic: the probe functions set up %rbp as a frame pointer (push %rbp; mov
    %rsp,%rbp) in their first instructions; a majority of those found must do it. None when
    no probe function is in the binary (no symbols, or e.g. no bundled jemalloc)."""
    found = with_fp = 0
    for fn in functions:
        insns = _first_instructions(server_bin, fn)
        if not insns:
            continue
        found += 1
        if any(re.match(r"push\s+%rbp", i) for i in insns) and \
                any(re.match(r"mov\s+%rsp,%rbp", i) for i in insns):
            with_fp += 1
        if found >= 3:
            break
    return None if not found else with_fp * 2 > found


def _first_instructions(binary: str, function: str, n: int = 12) -> list[str]:
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={function}",
                              binary], capture_output=True, text=True, timeout=60).stdout
    except FileNotFoundError:
        raise BinaryError("objdump not found: apt-get install binutils") from None
    return [ln.split(":", 1)[1].strip() for ln in out.splitlines()
            if re.match(r"^\s+[0-9a-f]+:\s", ln)][:n]


def inspect_binary(server_bin: str) -> BinaryFacts:
    version, sha = server_version(server_bin)
    syms = has_symbols(server_bin)
    fp = bool(has_frame_pointers(server_bin)) if syms else False
    deps_fp = has_frame_pointers(server_bin, DEPS_FP_PROBE_FUNCTIONS) if syms else None
    return BinaryFacts(version, sha, syms, fp, deps_fp)


def companion_tools(server_bin: str) -> tuple[str | None, str | None]:
    """(benchmark_bin, cli_bin) for a server: beside it first (same build), then PATH."""
    d = Path(server_bin).resolve().parent
    base = Path(server_bin).name
    prefixes = ["valkey", "redis"] if base.startswith("valkey") else ["redis", "valkey"]

    def find(tool: str) -> str | None:
        for pre in prefixes:
            p = d / f"{pre}-{tool}"
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
        for pre in prefixes:
            w = shutil.which(f"{pre}-{tool}")
            if w:
                return str(Path(w).resolve())
        return None
    return find("benchmark"), find("cli")


def binary_variant(spec: VariantSpec, log: Callable[[str], None] = print) -> Variant:
    """A bin: variant: no build, just the checks."""
    p = Path(spec.source)
    if not p.is_file():
        raise BinaryError(f"variant {spec.name}: server binary {spec.source} does not exist")
    if not os.access(p, os.X_OK):
        raise BinaryError(f"variant {spec.name}: {spec.source} is not executable "
                          f"(chmod +x {spec.source})")
    server = str(p.resolve())
    log(f"[{spec.name}] checking {server}")
    facts = inspect_binary(server)
    bench, cli = companion_tools(server)
    note_missing_symbols(spec.name, facts, log)
    return Variant(
        name=spec.name, spec=spec.spec, kind="binary",
        source=f"prebuilt binary {server} (v{facts.version})",
        patches=[], make_flags=[], config=dict(spec.config),
        server_bin=server, benchmark_bin=bench, cli_bin=cli,
        binary_sha256=sha256_file(server), version=facts.version, commit=facts.commit,
        frame_pointers=facts.frame_pointers, deps_frame_pointers=facts.deps_frame_pointers,
        symbols=facts.symbols, callgraph=facts.callgraph)


def note_missing_symbols(name: str, facts: BinaryFacts, log: Callable[[str], None]) -> None:
    if not facts.symbols:
        log(f"[{name}] warning: binary has no symbol table (stripped); profiles will show "
            f"addresses, not function names; callgraph = dwarf")
    elif not facts.frame_pointers:
        log(f"[{name}] warning: binary lacks frame pointers; perf will unwind with "
            f"--call-graph dwarf (bigger, slower samples)")
