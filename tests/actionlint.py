"""Where actionlint is (`make setup` installs it, pinned, with `go install`) and how the tests
run it on a generated GitHub Actions workflow."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def actionlint() -> str:
    for d in (os.environ.get("GOBIN"), str(Path.home() / "go" / "bin")):
        if d and (Path(d) / "actionlint").exists():
            return str(Path(d) / "actionlint")
    found = shutil.which("actionlint")
    if not found:
        pytest.fail("actionlint missing: `make setup` installs it (go install .../actionlint@v1.7.12)")
    return found


def lint(files: list[Path], runner_labels: list[str]) -> subprocess.CompletedProcess:
    """actionlint on `files`, told the custom labels of the self-hosted runners (its
    config file, given explicitly: it finds .github/actionlint.yaml only in a git work tree)."""
    cfg = files[0].parent / "actionlint-test.yaml"
    cfg.write_text(f"self-hosted-runner:\n  labels: [{', '.join(runner_labels)}]\n")
    try:
        return subprocess.run([actionlint(), "-no-color", "-config-file", str(cfg), *map(str, files)],
                              capture_output=True, text=True, timeout=120)
    finally:
        cfg.unlink()
