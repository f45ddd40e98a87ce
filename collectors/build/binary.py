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

from analysis.inputs.manifest import Variant
from collectors.build.spec import VariantSpec

# Functions present in every Redis/Valkey server; used to check for frame pointers.
FP_PROBE_FUNCTIONS = ("dictFind", "processCommand", "aeProcessEvents", "call",
                      "hashtableFind", "lookupKey")


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

    @property
    def callgraph(self) -> str:
        # perf's fp unwinding needs both; without them dwarf unwinding still gives stacks.
        return "fp" if self.symbols and self.frame_pointers else "dwarf"


class BinaryError(Exception):
    """A server binary that cannot be used; the message says which and why."""


def server_version(server_bin: str) -> tuple[str, str]:
    """(version, sha) from `redis-server --version` ("Redis server v=8.0.6 sha=00000000:0 ...")."""
    try:
        p = subprocess.run([server_bin, "--version"], capture_output=True, text=True, timeout=20)
    except OSError as e:
        raise BinaryError(f"{server_bin}: cannot run it ({e.strerror}); is it an executable "
                          f"Redis/Valkey server for this machine?") from None
    out = (p.stdout + p.stderr).strip()
    m = re.search(r"\bv=(\S+)", out)
    if p.returncode != 0 or not m:
        raise BinaryError(f"{server_bin} --version did not print a Redis/Valkey version "
                          f"(exit {p.returncode}): {out[:200]!r}")
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


def has_frame_pointers(server_bin: str) -> bool:
    """Heuristic: probe functions (dictFind, processCommand, ...) set up %rbp as a frame
    pointer (push %rbp; mov %rsp,%rbp) in their first instructions. A majority of the probes
    found must do it. Without symbols there is nothing to probe: False."""
    found = with_fp = 0
    for fn in FP_PROBE_FUNCTIONS:
        try:
            out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={fn}",
                                  server_bin], capture_output=True, text=True, timeout=60).stdout
        except FileNotFoundError:
            raise BinaryError("objdump not found: apt-get install binutils") from None
        insns = [ln.split(":", 1)[1].strip() for ln in out.splitlines()
                 if re.match(r"^\s+[0-9a-f]+:\s", ln)][:12]
        if not insns:
            continue
        found += 1
        if any(re.match(r"push\s+%rbp", i) for i in insns) and \
                any(re.match(r"mov\s+%rsp,%rbp", i) for i in insns):
            with_fp += 1
        if found >= 3:
            break
    return found > 0 and with_fp * 2 > found


def inspect_binary(server_bin: str) -> BinaryFacts:
    version, sha = server_version(server_bin)
    syms = has_symbols(server_bin)
    fp = has_frame_pointers(server_bin) if syms else False
    return BinaryFacts(version, sha, syms, fp)


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
        frame_pointers=facts.frame_pointers, symbols=facts.symbols, callgraph=facts.callgraph)


def note_missing_symbols(name: str, facts: BinaryFacts, log: Callable[[str], None]) -> None:
    if not facts.symbols:
        log(f"[{name}] warning: binary has no symbol table (stripped); profiles will show "
            f"addresses, not function names; callgraph = dwarf")
    elif not facts.frame_pointers:
        log(f"[{name}] warning: binary lacks frame pointers; perf will unwind with "
            f"--call-graph dwarf (bigger, slower samples)")
