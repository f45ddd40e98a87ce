"""Where zizmor is (GitHub Actions' static analyser; `make setup` installs it, pinned in
requirements.txt, into the venv beside this interpreter) and how the tests run it on the
generated workflows."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def zizmor() -> str:
    here = Path(sys.executable).parent / "zizmor"
    if here.exists():
        return str(here)
    found = shutil.which("zizmor")
    if not found:
        pytest.fail("zizmor missing: `make setup` installs it (requirements.txt: zizmor==1.32.0)")
    return found


def audit(files: list[Path]) -> list[dict]:
    """zizmor's findings on `files`, every persona's (auditor: the most it reports), as its
    JSON gives them; the ones an inline `# zizmor: ignore[rule]` comment keeps are left out
    by zizmor itself. Offline: no GitHub API, no token."""
    r = subprocess.run([zizmor(), "--offline", "--no-config", "--persona", "auditor", "--format", "json",
                        "--no-progress", "--no-exit-codes", *map(str, files)], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        pytest.fail(f"zizmor failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def high(findings: list[dict]) -> list[str]:
    """The high-severity findings, as 'RULE at FILE:LINE'."""
    out = []
    for f in findings:
        if f["determinations"]["severity"] == "High":
            loc = f["locations"][0]
            out.append(f"{f['ident']} at {loc['symbolic']['key']['Local']['verbatim_path']}:"
                       f"{loc['concrete']['location']['start_point']['row'] + 1}")
    return out
