"""A tiny real git repository for tests of commit ranges: n commits on `main`, one file each
time, subjects "commit 0" .. "commit n-1"."""
from __future__ import annotations

import subprocess
from pathlib import Path


def small_repo(where: Path, n: int = 4) -> tuple[Path, list[str]]:
    """(the repository, its commits oldest first)."""
    r = where / "repo"
    r.mkdir()

    def git(*a: str) -> str:
        return subprocess.run(["git", "-C", str(r), *a], check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    shas = []
    for i in range(n):
        (r / "f").write_text(str(i))
        git("add", "f")
        git("commit", "-q", "-m", f"commit {i}")
        shas.append(git("rev-parse", "HEAD"))
    return r, shas
