"""Variants: what a server under test is (a build plus configuration), as data classes.

A variant is written on the command line as NAME=SPEC (grammar in docs/variants.md and
GRAMMAR below). `parse_variant` turns it into a VariantSpec; collectors.build turns a
VariantSpec into a BuiltVariant (binaries on disk, checked for symbols and frame
pointers): the "variants.<name>" record of the run directory (analysis.inputs.manifest.Variant).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from analysis.inputs.manifest import Variant

GRAMMAR = """\
Variant spec grammar:   NAME=SOURCE[+MODIFIER]...

  NAME      letters, digits, '_', '-', '.' (starts with a letter); names the variant's
            directory in runs/<run-id>/ and its column in reports.
  SOURCE    one of
    debsrc:PACKAGE[/SUITE][@VERSION]   Debian source package (redis or valkey), fetched
                                       with apt-get source through a private apt config;
                                       SUITE defaults to forky; VERSION is an upstream
                                       version prefix (9.1 -> 9.1.x) or a Debian version.
    git:PATH[@REF]                     a local git checkout at REF (default HEAD), exported
                                       with git archive (your work tree is not touched;
                                       uncommitted changes are not included).
    bin:PATH                           a prebuilt server binary; redis-benchmark/redis-cli
                                       (or valkey-*) are taken from beside it, else PATH.
  MODIFIER  repeatable, applied in order:
    +patch=FILE          apply FILE with patch -p1 (not for bin:)
    +make=VAR=VALUE      extra make variable, overrides the default of the same name
                         (not for bin:)
    +config=NAME=VALUE   server config override (passed as --NAME VALUE at start)

Examples:
  base=debsrc:redis
  cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch
  v=debsrc:valkey@9.1            old=debsrc:redis/trixie@8.0.2
  mine=git:~/src/redis@my-branch sys=bin:/usr/bin/redis-server
  nopf=bin:/path/valkey-server+config=prefetch-batch-max-size=0
  o3=debsrc:redis+make=OPTIMIZATION=-O3
"""

KINDS = {"git": "git", "debsrc": "debsrc", "bin": "binary"}
DEBSRC_PACKAGES = ("redis", "valkey")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_MODIFIER_SPLIT = re.compile(r"\+(?=(?:patch|make|config)=)")
_MAKE_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_CONFIG_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

# Functions present in every Redis/Valkey server; used to check for frame pointers.
FP_PROBE_FUNCTIONS = ("dictFind", "processCommand", "aeProcessEvents", "call",
                      "hashtableFind", "lookupKey")


@dataclass
class VariantSpec:
    name: str
    spec: str                       # what the user typed after NAME=
    kind: str                       # git | debsrc | binary
    source: str                     # package name, repository path or binary path
    ref: str | None = None          # git ref, or Debian/upstream version
    patches: list[str] = field(default_factory=list)
    make_flags: list[str] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    suite: str | None = None        # debsrc only: Debian suite (None = default)


def parse_variant(text: str) -> VariantSpec:
    """Parse NAME=SPEC. Raises ValueError saying what is wrong and what would be right."""
    def bad(msg: str) -> ValueError:
        return ValueError(f"variant {text!r}: {msg}\n\n{GRAMMAR}")

    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise bad("expected NAME=SPEC, e.g. base=debsrc:redis")
    if not _NAME_RE.match(name):
        raise bad(f"name {name!r} must start with a letter and use only letters, digits, _ - .")
    spec = spec.strip()
    parts = _MODIFIER_SPLIT.split(spec)
    head, mods = parts[0], parts[1:]
    kind_word, sep, rest = head.partition(":")
    if not sep or kind_word not in KINDS:
        raise bad(f"source {head!r} must start with debsrc:, git: or bin:")
    if not rest:
        raise bad(f"{kind_word}: needs a {'package' if kind_word == 'debsrc' else 'path'}")
    vs = VariantSpec(name=name, spec=spec, kind=KINDS[kind_word], source=rest)

    if vs.kind == "debsrc":
        pkg, _, ver = rest.partition("@")
        pkg, _, suite = pkg.partition("/")
        if pkg not in DEBSRC_PACKAGES:
            raise bad(f"debsrc package {pkg!r} is not supported; use one of {', '.join(DEBSRC_PACKAGES)}")
        if "@" in rest and not ver:
            raise bad("empty version after '@'")
        if "/" in rest.partition("@")[0] and not suite:
            raise bad("empty suite after '/'")
        if suite and not re.match(r"^[a-z][a-z0-9-]*$", suite):
            raise bad(f"suite {suite!r} is not a Debian suite name (e.g. trixie, forky, sid)")
        vs.source, vs.ref, vs.suite = pkg, ver or None, suite or None
    elif vs.kind == "git":
        path, at, ref = rest.rpartition("@") if "@" in rest else (rest, "", "")
        if at and not ref:
            raise bad("empty git ref after '@'")
        vs.source, vs.ref = os.path.expanduser(path), ref or None
    else:
        vs.source = os.path.expanduser(rest)   # '@' is a legal path character here

    for m in mods:
        key, _, val = m.partition("=")
        if not val:
            raise bad(f"+{key}= needs a value")
        if key == "patch":
            vs.patches.append(val)
        elif key == "make":
            if not _MAKE_VAR_RE.match(val):
                raise bad(f"+make={val!r}: expected VAR=VALUE, e.g. +make=OPTIMIZATION=-O3")
            vs.make_flags.append(val)
        elif key == "config":
            cname, eq, cval = val.partition("=")
            if not eq or not _CONFIG_NAME_RE.match(cname):
                raise bad(f"+config={val!r}: expected NAME=VALUE, e.g. "
                          f"+config=prefetch-batch-max-size=0")
            vs.config[cname] = cval
    if vs.kind == "binary" and (vs.patches or vs.make_flags):
        raise bad("a prebuilt binary (bin:) cannot take +patch= or +make=; "
                  "use debsrc: or git: to build a patched server")
    return vs


# A built variant is exactly the manifest's "variants.<name>" record.
BuiltVariant = Variant


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


def binary_variant(spec: VariantSpec, log: Callable[[str], None] = print) -> BuiltVariant:
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
    return BuiltVariant(
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


def build_variant(spec: VariantSpec, cache_dir: Path | None = None,
                  log: Callable[[str], None] = print) -> BuiltVariant:
    """Build (or take from the cache) and check `spec`; see collectors.build."""
    from collectors.build import builder as build  # build imports this module
    return build.build_variant(spec, cache_dir, log)


def cache_dir() -> Path:
    """${STALLSCOPE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/stallscope}"""
    from collectors.build import builder as build
    return build.cache_dir()
