"""A source tree as it is on disk: `dir:PATH` (its files, their content key, the copy that is
built) and what a `git:` work tree holds that its commit does not (the warning).

Which files of a `dir:` tree count (the same set is hashed and copied):

- in a git work tree (git on PATH and PATH inside one): the files git sees, tracked or
  untracked, but none a .gitignore names (`git ls-files --cached --others
  --exclude-standard`; a tracked file deleted from the tree is left out). Redis' and
  Valkey's .gitignore name every build output (objects, the binaries, the deps' archives,
  `.make-*`, `release.h`), so an in-place `make` changes nothing here;
- elsewhere (a tarball's tree, no git): every file under PATH but `.git` and the build
  outputs known by name (`BUILD_OUTPUT_SUFFIXES`, `BUILD_OUTPUT_NAMES`, `.make-*`) or by
  their first bytes (an ELF file, an ar archive). Files a configure step writes (the bundled
  jemalloc's Makefile and headers) are not told from sources there: the first in-place build
  changes such a tree's key once.

The content key is the sha256 over the files in path order, each as its path relative to
PATH, its mode as git tells it (100644 a file, 100755 an executable, 120000 a symlink, whose
target is its bytes), its size and its bytes. Where the tree is and its timestamps are not in
it: the same files anywhere are one build.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from analysis.errors import UserError

BUILD_OUTPUT_SUFFIXES = (".o", ".xo", ".so", ".d", ".a", ".lo", ".la", ".gcda", ".gcno", ".log",
                         ".rdb", ".aof")
BUILD_OUTPUT_NAMES = {"release.h", "Makefile.dep", ".prerequisites", "compile_commands.json"}
SKIP_DIRS = {".git", "appendonlydir", ".ccls-cache", "__pycache__"}
BINARY_MAGIC = (b"\x7fELF", b"!<arch>\n")
CHUNK = 1 << 20


class TreeError(UserError):
    """A dir: path that is not a source tree to build; the message says what to give."""


@dataclass
class Tree:
    """A dir: tree's files and the key over them."""
    root: Path
    files: list[str]        # relative paths, sorted
    digest: str             # sha256 hex over paths, modes, sizes and bytes
    selected_by: str        # "git ls-files" or "walk" (no git work tree)
    bytes: int = 0

    def ident(self) -> dict:
        """The source identity of builder's cache key and build.json."""
        return {"kind": "dir", "path": str(self.root), "content": self.digest,
                "files": len(self.files), "bytes": self.bytes, "selected_by": self.selected_by}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _git_files(root: Path) -> list[str] | None:
    """The files git sees under root (None: not a git work tree, or no git)."""
    inside = _git(root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != b"true":
        return None
    p = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if p is None or p.returncode != 0:
        return None
    names = {n.decode("utf-8", "surrogateescape") for n in p.stdout.split(b"\0") if n}
    out = []
    for n in names:
        full = root / n
        if full.is_dir() and not full.is_symlink():      # a nested repository or submodule
            out += [f"{n.rstrip('/')}/{m}" for m in _walk(full)]
        elif full.is_symlink() or full.is_file():
            out.append(n)
    return out


def _is_output(path: Path, name: str) -> bool:
    if name.endswith(BUILD_OUTPUT_SUFFIXES) or name in BUILD_OUTPUT_NAMES or name.startswith(".make-"):
        return True
    if path.is_symlink():
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head.startswith(BINARY_MAGIC)


def _walk(root: Path) -> list[str]:
    out = []
    for d, dirs, names in os.walk(root):
        links = [x for x in dirs if (Path(d) / x).is_symlink()]     # os.walk lists them as dirs
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.endswith(".dSYM") and x not in links]
        rel = Path(d).relative_to(root)
        for n in names + links:
            p = Path(d) / n
            if n != ".git" and (p.is_symlink() or p.is_file()) and not _is_output(p, n):
                out.append(str(rel / n) if str(rel) != "." else n)
    return out


def _mode(st: os.stat_result) -> bytes:
    if stat.S_ISLNK(st.st_mode):
        return b"120000"
    return b"100755" if st.st_mode & 0o111 else b"100644"


def content_digest(root: Path, files: list[str]) -> tuple[str, int]:
    """(sha256 hex, bytes read) over the files as the module docstring says."""
    h, total = hashlib.sha256(), 0
    for rel in files:
        p = root / rel
        st = p.lstat()
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0" + _mode(st) + b"\0")
        if stat.S_ISLNK(st.st_mode):
            data = os.readlink(p).encode("utf-8", "surrogateescape")
            h.update(str(len(data)).encode() + b"\0" + data)
            continue
        h.update(str(st.st_size).encode() + b"\0")
        with open(p, "rb") as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
                total += len(chunk)
    return h.hexdigest(), total


def read_tree(path: str | Path, name: str = "") -> Tree:
    """The dir: tree at path: its files and content key. TreeError when it is no source tree."""
    root = Path(path).expanduser().resolve()
    who = f"variant {name}: " if name else ""
    if not root.is_dir():
        raise TreeError(f"{who}dir:{path}: no such directory; give the top of a Redis or Valkey "
                        f"source tree (the one with Makefile and src/)")
    if not (root / "Makefile").is_file() or not (root / "src").is_dir():
        raise TreeError(f"{who}dir:{path} has no Makefile and src/: give the top of a Redis or "
                        f"Valkey source tree")
    files = _git_files(root)
    how = "git ls-files"
    if files is None:
        files, how = _walk(root), "walk"
    files.sort()
    digest, total = content_digest(root, files)
    return Tree(root, files, digest, how, total)


def copy_tree(tree: Tree, dest: Path) -> None:
    """The tree's files into dest (which must not exist), modes and symlinks kept; the copy is
    hashed again, so an edit made while it was copied cannot hide under the key."""
    dest.mkdir(parents=True)
    for rel in tree.files:
        src, out = tree.root / rel, dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        else:
            shutil.copy2(src, out)
    again, _ = content_digest(dest, tree.files)
    if again != tree.digest:
        raise TreeError(f"dir:{tree.root} changed while it was copied (content {tree.digest[:12]} "
                        f"became {again[:12]}); run again when the edit is saved")


def uncommitted(repo: Path) -> list[str]:
    """The paths `git status` lists in repo's work tree (changed, staged, untracked and not
    ignored); [] for a clean tree, a bare repository, or when git cannot tell."""
    p = _git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
    if p is None or p.returncode != 0:
        return []
    entries = [e.decode("utf-8", "surrogateescape") for e in p.stdout.split(b"\0") if e]
    return [e[3:] for e in entries if len(e) > 3 and e[2] == " "]


def warn_if_dirty(repo: Path, path_given: str, ref: str, commit: str,
                  say: Callable[[str], None]) -> None:
    """A git: variant of a dirty work tree: its warning, said before the build."""
    warning = dirty_warning(repo, path_given, ref, commit)
    if warning:
        say(warning)


def dirty_warning(repo: Path, path_given: str, ref: str, commit: str) -> str | None:
    """The warning a git: variant of a dirty work tree gets (None: a clean tree)."""
    changed = uncommitted(repo)
    if not changed:
        return None
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (f"warning: {repo} has uncommitted changes ({len(changed)} "
            f"{'path' if len(changed) == 1 else 'paths'}: {shown}), which git:{path_given}@{ref} "
            f"does not include: it builds commit {commit[:12]} as committed. To measure the work "
            f"tree as it is, give dir:{path_given} (e.g. --variant mine=dir:{path_given})")
