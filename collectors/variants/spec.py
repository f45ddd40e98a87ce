"""The variant grammar: NAME=SOURCE[+MODIFIER]... -> VariantSpec (docs/variants.md).

Only the grammar lives here. collectors.variants.builder turns a VariantSpec into the run
directory's "variants.<name>" record (analysis.inputs.manifest.Variant: binaries on disk,
checked by collectors.variants.binary for symbols and frame pointers).
"""
from __future__ import annotations

import os
import re
from typing import Callable
from dataclasses import dataclass, field

from analysis.errors import UserError

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
                                       uncommitted changes are not included: a dirty
                                       tree gets a warning; use dir: to build them).
    dir:PATH                           a source tree as it is on disk, committed or not (no
                                       git needed): copied without .git and build outputs,
                                       built like git:, cached by its content (an edit is
                                       a new build, an unchanged tree a cache hit).
    bin:PATH                           a prebuilt server binary; redis-benchmark/redis-cli
                                       (or valkey-*) are taken from beside it, else PATH.
  MODIFIER  repeatable, applied in order:
    +patch=FILE          apply FILE with patch -p1 (not for bin:)
    +make=VAR=VALUE      extra make variable, overrides the default of the same name
                         (not for bin:)
    +config=NAME=VALUE   server config override (passed as --NAME VALUE at start)
    +layout=N            link the server's objects in an order shuffled by N (the layout
                         shuffle number, an integer), to see whether a change survives
                         another code layout; `stallscope run --layouts N` adds it for you
                         (not for bin:)

Examples:
  base=debsrc:redis
  cand=debsrc:redis+patch=cases/patches/mset-bucket-prefetch.patch
  v=debsrc:valkey@9.1            old=debsrc:redis/trixie@8.0.2
  mine=git:~/src/redis@my-branch sys=bin:/usr/bin/redis-server
  wip=dir:~/src/redis            (the work tree as it is, uncommitted edits included)
  nopf=bin:/path/valkey-server+config=prefetch-batch-max-size=0
  o3=debsrc:redis+make=OPTIMIZATION=-O3
"""

KINDS = {"git": "git", "dir": "dir", "debsrc": "debsrc", "bin": "binary"}
DEBSRC_PACKAGES = ("redis", "valkey")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_MODIFIER_SPLIT = re.compile(r"\+(?=(?:patch|make|config|layout)=)")
_MAKE_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_CONFIG_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

class SpecError(UserError, ValueError):
    """A variant spec that does not parse; the message quotes it and gives the grammar."""


@dataclass
class VariantSpec:
    name: str
    spec: str                       # what the user typed after NAME=
    kind: str                       # git | dir | debsrc | binary
    source: str                     # package name, repository or tree path, or binary path
    ref: str | None = None          # git ref, or Debian/upstream version
    patches: list[str] = field(default_factory=list)
    make_flags: list[str] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)
    suite: str | None = None        # debsrc only: Debian suite (None = default)
    layout: int | None = None       # layout shuffle number (collectors/variants/linkorder.py); None: as upstream


def _apply_modifier(vs: VariantSpec, modifier: str, bad: Callable[[str], ValueError]) -> None:
    """One `+patch=FILE`, `+make=VAR=VALUE` or `+config=NAME=VALUE` onto the spec."""
    key, _, val = modifier.partition("=")
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
            raise bad(f"+config={val!r}: expected NAME=VALUE, e.g. +config=prefetch-batch-max-size=0")
        vs.config[cname] = cval
    elif key == "layout":
        if not re.fullmatch(r"\d{1,9}", val):
            raise bad(f"+layout={val!r}: expected a layout shuffle number, a whole number such as +layout=3")
        vs.layout = int(val)


def parse_variant(text: str) -> VariantSpec:
    """Parse NAME=SPEC. Raises ValueError saying what is wrong and what would be right."""
    def bad(msg: str) -> SpecError:
        return SpecError(f"variant {text!r}: {msg}\n\n{GRAMMAR}")

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
        raise bad(f"source {head!r} must start with debsrc:, git:, dir: or bin:")
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
        vs.source = os.path.expanduser(rest)   # dir:, bin:: '@' is a legal path character here

    for m in mods:
        _apply_modifier(vs, m, bad)
    if vs.kind == "binary" and (vs.patches or vs.make_flags or vs.layout is not None):
        raise bad("a prebuilt binary (bin:) cannot take +patch=, +make= or +layout=; "
                  "use debsrc:, git: or dir: to build a patched server")
    return vs
