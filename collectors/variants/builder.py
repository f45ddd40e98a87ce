"""Build (or fetch from the cache) one variant: source -> patches -> make -> checked binaries.

Builds are cached under <cache>/builds/<hash>/ keyed by (source identity, patch contents,
final make flags), so a second run builds nothing. A build happens in a temporary
directory renamed into place only when complete (a killed build leaves no half "cached"
build), under a lock file so two processes never build the same thing twice.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Callable

from analysis.clock import now_iso
from analysis.errors import Failed, StallscopeError
from analysis.inputs.manifest import Variant
from collectors.variants import aptsource, worktree
from collectors.variants.binary import binary_variant, inspect_binary, note_missing_symbols, sha256_file
from collectors.variants.linkorder import apply_layout
from collectors.variants.spec import VariantSpec

# Bump when the way a build is made changes, so old cache entries are not reused.
BUILD_RECIPE = 2   # 2: CFLAGS reaches the bundled deps (frame pointers in jemalloc)
JOBS = 2


class BuildError(Failed):
    """A build that failed; the message names the step, the file and how to look further."""


def cache_dir() -> Path:
    """${STALLSCOPE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/stallscope}"""
    env = os.environ.get("STALLSCOPE_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "stallscope"


def records_dir() -> Path:
    """Where this host's measured records live (noise.json, sample_cost.json: what the next
    run's reps and perf rate are planned from): ${STALLSCOPE_RECORDS}, else the build cache.
    The test suite points it at a directory of its own: runs made beside other tests are not
    the host's quiet figures and must not plan a user's runs."""
    env = os.environ.get("STALLSCOPE_RECORDS")
    return Path(env).expanduser() if env else cache_dir()


def default_make_flags() -> list[str]:
    """-O2 with -g and frame pointers everywhere, bundled jemalloc, no TLS/systemd/modules.

    -O2 (not Redis' default -O3 -flto) keeps functions out of each other so profiles
    attribute time to the function that spends it. CFLAGS on the make command line reaches
    the bundled deps too (make passes command-line variables to sub-makes): jemalloc's
    configure appends it to its own -O3, lua and hiredis/libvalkey add it to theirs. Without
    it jemalloc is built without frame pointers and every sample in the allocator loses its
    callers (10-15% of an MSET profile: truncated stacks, understated cumulative shares)."""
    return ["OPTIMIZATION=-O2", "CFLAGS=-g -fno-omit-frame-pointer", "MALLOC=jemalloc",
            "BUILD_TLS=no", "USE_SYSTEMD=no", "BUILD_WITH_MODULES=no"]


def merge_make_flags(defaults: list[str], extra: list[str]) -> list[str]:
    """User VAR=VALUE flags replace defaults of the same VAR, order kept."""
    out = {f.split("=", 1)[0]: f for f in defaults}
    for f in extra:
        out[f.split("=", 1)[0]] = f
    return list(out.values())


class Progress:
    def __init__(self, name: str, log: Callable[[str], None]):
        self.name, self.log = name, log

    def __call__(self, msg: str) -> None:
        self.log(f"[{self.name}] {msg}")


def _fmt_s(s: float) -> str:
    return f"{int(s // 60)} min {s % 60:04.1f} s" if s >= 60 else f"{s:.1f} s"


# ---------------------------------------------------------------- sources

def _resolve_source(spec: VariantSpec, cache: Path, say: Progress, update: bool = True) -> dict:
    """Identity of the source (goes into the cache key) without fetching the tree; update=False:
    a debsrc: version from the apt lists already there (none: AptSourceError)."""
    if spec.kind == "debsrc":
        suite = spec.suite or aptsource.DEFAULT_SUITE
        env = aptsource.AptEnv(cache / "apt" / suite, suite=suite)
        if update and env.update():
            say(f"updated private apt lists for suite {suite} ({env.sources_list})")
        version = env.resolve(spec.source, spec.ref)
        return {"kind": "debsrc", "package": spec.source, "version": version, "suite": suite}
    if spec.kind == "git":
        repo = Path(spec.source)
        if not (repo / ".git").exists() and not (repo / "HEAD").exists():
            raise BuildError(f"variant {spec.name}: {repo} is not a git checkout "
                             f"(no .git); give git:PATH@REF of a Redis/Valkey clone")
        ref = spec.ref or "HEAD"
        p = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                            f"{ref}^{{commit}}"], capture_output=True, text=True)
        if p.returncode != 0:
            raise BuildError(f"variant {spec.name}: git ref {ref!r} not found in {repo} "
                             f"(git -C {repo} branch -a / git tag list the refs)")
        commit = p.stdout.strip()
        worktree.warn_if_dirty(repo, spec.source, ref, commit, say)   # before the build
        return {"kind": "git", "repo": str(repo.resolve()), "ref": ref, "commit": commit}
    if spec.kind == "dir":
        return worktree.read_tree(spec.source, spec.name).ident()
    raise BuildError(f"variant {spec.name}: kind {spec.kind} is not built")


def _fetch_source(spec: VariantSpec, ident: dict, cache: Path, dest: Path, say: Progress) -> None:
    """Put the pristine source tree at `dest` (which must not exist)."""
    if ident["kind"] == "debsrc":
        pkg, ver = ident["package"], ident["version"]
        pristine = cache / "sources" / f"{pkg}_{ver.replace(':', '%3a')}"
        with _locked(cache / "sources" / f".{pristine.name}.lock"):
            if not (pristine / ".complete").is_file():
                say(f"fetching source: apt-get source {pkg}={ver} (suite {ident['suite']}, "
                    f"Debian patches applied by dpkg-source)")
                tmp = pristine.with_name(pristine.name + f".tmp{os.getpid()}")
                shutil.rmtree(tmp, ignore_errors=True)
                env = aptsource.AptEnv(cache / "apt" / ident["suite"], suite=ident["suite"])
                env.write()
                tree = env.fetch(pkg, ver, tmp)
                tree.rename(tmp / "tree")
                (tmp / ".complete").write_text(ver + "\n")
                shutil.rmtree(pristine, ignore_errors=True)
                tmp.rename(pristine)
            else:
                say(f"source {pkg} {ver}: cached ({pristine})")
        shutil.copytree(pristine / "tree", dest, symlinks=True)
    elif ident["kind"] == "dir":
        tree = worktree.read_tree(ident["path"], spec.name)
        if tree.digest != ident["content"]:
            raise BuildError(f"variant {spec.name}: dir:{ident['path']} changed since it was read; "
                             f"run again when the edit is saved")
        say(f"copying {ident['path']} as it is ({len(tree.files)} files, content "
            f"{tree.digest[:12]}, chosen by {tree.selected_by})")
        worktree.copy_tree(tree, dest)
    else:
        say(f"exporting {ident['repo']} at {ident['ref']} ({ident['commit'][:12]}) with git archive")
        dest.mkdir(parents=True)
        p = subprocess.Popen(["git", "-C", ident["repo"], "archive", "--format=tar",
                              ident["commit"]], stdout=subprocess.PIPE)
        with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
            tf.extractall(dest, filter="tar")
        if p.wait() != 0:
            raise BuildError(f"git archive of {ident['repo']} {ident['commit']} failed")


# ---------------------------------------------------------------- patches

def _patch_records(spec: VariantSpec) -> list[dict[str, str]]:
    out = []
    for f in spec.patches:
        p = Path(f).expanduser()
        if not p.is_file():
            raise BuildError(f"variant {spec.name}: patch file {f} does not exist")
        out.append({"file": str(f), "sha256": sha256_file(p), "path": str(p.resolve())})
    return out


def apply_patch(patch: Path, tree: Path, label: str | None = None) -> None:
    """patch -p1 with a dry run first, so a failing patch leaves the tree untouched and the
    error names the patch, the file and the hunk that did not apply."""
    label = label or str(patch)
    for dry in (True, False):
        args = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch", "-i",
                str(patch.resolve())] + (["--dry-run"] if dry else [])
        try:
            p = subprocess.run(args, cwd=tree, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise BuildError("patch not found: apt-get install patch") from None
        if p.returncode != 0:
            lines = (p.stdout + p.stderr).strip().splitlines()
            failed = [ln for ln in lines if "FAILED" in ln or "malformed" in ln
                      or "can't find file" in ln or "Reversed" in ln or "No file to patch" in ln]
            current = [ln for ln in lines if ln.startswith("checking file") or
                       ln.startswith("patching file")]
            where = f" (in {current[-1].split(' ', 2)[-1]})" if current else ""
            detail = "\n  ".join(failed or lines[-8:])
            raise BuildError(f"patch {label} does not apply to this source{where}:\n  {detail}\n"
                             f"(tried: cd <source> && {shlex.join(args)}); rebase the patch on "
                             f"this version")


# ---------------------------------------------------------------- build

class _locked:
    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


CCACHE_LINKS = Path("/usr/lib/ccache")     # Debian's ccache: cc, gcc ... -> ccache


def compiler_env(tree: Path, cache: Path) -> dict[str, str]:
    """The environment make runs in: through ccache when it is installed (Debian's
    masquerade directory first on PATH), so a build that differs from a cached one by a
    patch recompiles only the files the patch touched. Every build happens in its own
    temporary directory: paths are hashed relative to it (CCACHE_BASEDIR) and the working
    directory is left out of the hash (CCACHE_NOHASHDIR), else nothing would ever hit.
    STALLSCOPE_NO_CCACHE=1 turns it off."""
    env = {**os.environ, "LC_ALL": "C"}
    if CCACHE_LINKS.is_dir() and shutil.which("ccache") and not os.environ.get("STALLSCOPE_NO_CCACHE"):
        env.update(PATH=f"{CCACHE_LINKS}:{env.get('PATH', '')}", CCACHE_DIR=str(cache / "ccache"),
                   CCACHE_BASEDIR=str(tree.parent), CCACHE_NOHASHDIR="1",
                   CCACHE_COMPILERCHECK="content", CCACHE_MAXSIZE="5G")
    return env


def _run_make(tree: Path, flags: list[str], logfile: Path, say: Progress, cache: Path) -> None:
    cmd = ["make", f"-j{JOBS}"] + flags
    say(f"building: {shlex.join(cmd)} (log: {logfile})")
    t0 = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(60):
            say(f"building ... {_fmt_s(time.monotonic() - t0)} elapsed")
    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        with open(logfile, "w") as lf:
            lf.write(f"$ {shlex.join(cmd)}\n")
            lf.flush()
            env = compiler_env(tree, cache)
            if "CCACHE_DIR" in env:
                lf.write(f"# through ccache ({env['CCACHE_DIR']})\n")
                lf.flush()
            rc = subprocess.run(cmd, cwd=tree, stdout=lf, stderr=subprocess.STDOUT, env=env).returncode
    except FileNotFoundError:
        raise BuildError("make not found: apt-get install build-essential") from None
    finally:
        done.set()
    if rc != 0:
        # The temporary build directory is removed; keep its log where the message says.
        kept = logfile.parent.with_name(f"failed-{logfile.parent.name.split('-')[1]}.log")
        shutil.copy(logfile, kept)
        tail = "\n  ".join(logfile.read_text(errors="replace").splitlines()[-25:])
        raise BuildError(f"make failed (exit {rc}) after {_fmt_s(time.monotonic() - t0)}; "
                         f"full log: {kept}; last lines:\n  {tail}")
    say(f"built in {_fmt_s(time.monotonic() - t0)}")


def _find_binaries(tree: Path) -> dict[str, str]:
    src = tree / "src"
    out = {}
    for role, names in (("server", ("valkey-server", "redis-server")),
                        ("benchmark", ("valkey-benchmark", "redis-benchmark")),
                        ("cli", ("valkey-cli", "redis-cli"))):
        for n in names:
            if (src / n).is_file():
                out[role] = n
                break
        else:
            raise BuildError(f"make succeeded but {src} has none of {', '.join(names)}")
    return out


def build_key(ident: dict, patches: list[dict[str, str]], flags: list[str],
              layout: int | None = None) -> str:
    # A git commit names its tree wherever it is cloned and whatever ref reached it: keyed by
    # the commit alone, `git:R@unstable` and `git:R@<its hash>` (a schedule's run and the
    # bisection after it) share one build.
    # A dir: tree likewise by its content alone (collectors/variants/worktree.py).
    source = ({"kind": "git", "commit": ident["commit"]} if ident.get("kind") == "git" else
              {"kind": "dir", "content": ident["content"]} if ident.get("kind") == "dir" else ident)
    blob = json.dumps({"recipe": BUILD_RECIPE, "source": source,
                       "patches": [p["sha256"] for p in patches], "make": flags,
                       # only when asked: every build made before +layout= keeps its key
                       **({"layout": layout} if layout is not None else {})},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _describe(ident: dict, version: str) -> tuple[str, str]:
    """(human source description, commit) for the manifest."""
    if ident["kind"] == "debsrc":
        return (f"{ident['package']} {version} (Debian source {ident['version']}, "
                f"suite {ident['suite']})", ident["version"])
    if ident["kind"] == "dir":
        return (f"dir {ident['path']} as it is (content {ident['content'][:12]}, {ident['files']} "
                f"files), v{version}", f"dir-{ident['content'][:16]}")
    return (f"git {ident['repo']} @ {ident['ref']} ({ident['commit'][:12]}), v{version}",
            ident["commit"])


def build_variant(spec: VariantSpec, cache: Path | None = None,
                  log: Callable[[str], None] = print) -> Variant:
    """Build `spec` (or take it from the cache) and check the binaries; a bin: variant is
    only checked. `cache` defaults to cache_dir()."""
    say = Progress(spec.name, log)
    if spec.kind == "binary":
        return binary_variant(spec, log)
    cache = Path(cache) if cache else cache_dir()
    ident = _resolve_source(spec, cache, say)
    patches = _patch_records(spec)
    builds = cache / "builds"
    # The key holds the user's flags; the defaults are fixed by BUILD_RECIPE (in the key),
    # and the final flags are recorded in build.json.
    key = build_key(ident, patches, spec.make_flags, spec.layout)
    final = builds / key
    if not (final / "build.json").is_file():
        with _locked(builds / f".{key}.lock"):
            if not (final / "build.json").is_file():   # another process may have built it
                _build_into(spec, ident, patches, cache, final, say)
    else:
        say(f"cache hit: {final}")
    rec = json.loads((final / "build.json").read_text())
    bins = {r: str(final / "tree" / "src" / n) for r, n in rec["binaries"].items()}
    say(f"checking {bins['server']}")
    facts = inspect_binary(bins["server"])
    note_missing_symbols(spec.name, facts, log)
    source, commit = _describe(ident, facts.version)
    return Variant(
        name=spec.name, spec=spec.spec, kind=spec.kind, source=source,
        patches=[{"file": p["file"], "sha256": p["sha256"]} for p in patches],
        make_flags=rec["make_flags"], config=dict(spec.config),
        server_bin=bins["server"], benchmark_bin=bins["benchmark"], cli_bin=bins["cli"],
        binary_sha256=rec["binary_sha256"], version=facts.version, commit=commit,
        layout=_layout_record(rec.get("layout")),
        frame_pointers=facts.frame_pointers, deps_frame_pointers=facts.deps_frame_pointers,
        symbols=facts.symbols, callgraph=facts.callgraph)


def cached_build(spec: VariantSpec, cache: Path | None = None) -> Path | None:
    """spec's build directory when the cache holds it, told offline and without building (the
    run's preflight: disk for the builds to come); None when it does not, or cannot tell."""
    if spec.kind == "binary":
        return None
    cache = Path(cache) if cache else cache_dir()
    try:
        ident = _resolve_source(spec, cache, Progress(spec.name, lambda _m: None), update=False)
        final = cache / "builds" / build_key(ident, _patch_records(spec), spec.make_flags, spec.layout)
    except (StallscopeError, OSError):
        return None
    return final if (final / "build.json").is_file() else None


def _layout_record(rec: dict | None) -> dict | None:
    """The manifest's note of a +layout= build: the seed, the variable and the first
    objects of the order (build.json keeps the whole order)."""
    if not rec:
        return None
    return {"seed": rec["seed"], "variable": rec["variable"], "objects": rec["objects"],
            "first": rec["order"][:5]}


def _build_into(spec: VariantSpec, ident: dict, patches: list[dict[str, str]], cache: Path,
                final: Path, say: Progress) -> None:
    tmp = final.with_name(f".tmp-{final.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        tree = tmp / "tree"
        _fetch_source(spec, ident, cache, tree, say)
        for p in patches:
            say(f"patching: {p['file']} (sha256 {p['sha256'][:12]})")
            apply_patch(Path(p["path"]), tree, p["file"])
        layout = None
        if spec.layout is not None:
            layout = apply_layout(tree, spec.layout)
            say(f"layout: {layout['variable']} ({layout['objects']} objects) linked in the "
                f"order of layout shuffle number {spec.layout}")
        flags = merge_make_flags(default_make_flags(), spec.make_flags)
        _run_make(tree, flags, tmp / "build.log", say, cache)
        binaries = _find_binaries(tree)
        rec = {"recipe": BUILD_RECIPE, "source": ident, "patches": patches, "make_flags": flags,
               "binaries": binaries,
               "binary_sha256": sha256_file(tree / "src" / binaries["server"]),
               "built": now_iso(), **({"layout": layout} if layout else {})}
        # build.json is written last: its presence is what marks a build complete.
        (tmp / "build.json").write_text(json.dumps(rec, indent=2) + "\n")
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
