"""The docs name only what exists (issue 28, item 7): README's Layout table names every
package and top-level file of the tree and nothing that is gone, and every repository
path the README and docs/ mention exists."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import REPO

TOP = ("commands", "collectors", "analysis", "tests", "cases", "docs", "bench", "scripts", "reports")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\w/?)([-_]?\*)?" % "|".join(TOP))
# Paths a command writes, not files of the repository (reports/ is ignored by git).
OUTPUTS = ("reports/", "cases/x.yaml")


def layout_rows() -> dict[str, str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Layout"):]
    section = section[:section.index("\n## ", 4) if "\n## " in section[4:] else len(section)]
    return dict(re.findall(r"^\| `([^`]+)` \| (.*) \|$", section, re.M))


def test_layout_names_every_package_and_top_level_module():
    rows = layout_rows()
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    tops = {p.split("/")[0] for p in tracked if "/" in p} - {".ci"}
    assert {f"{t}/" for t in tops} <= set(rows), f"Layout table misses: {sorted({f'{t}/' for t in tops} - set(rows))}"
    for stage in ("commands", "collectors", "analysis"):
        named = set(re.findall(r"`(\w+/|\w+\.py)`", rows[f"{stage}/"]))
        here = {p.name + "/" for p in (REPO / stage).iterdir() if (p / "__init__.py").exists()}
        here |= {p.name for p in (REPO / stage).glob("*.py") if not p.name.startswith("__")}
        assert here <= named, f"{stage}/ row misses {sorted(here - named)}"
        # a sub-package (profilers' perf/, workload's suite/) may be named in its parent's words
        gone = {n for n in named if not any((REPO / stage).rglob(n.rstrip("/")))}
        assert not gone, f"{stage}/ row names what is not there: {sorted(gone)}"


def dead_paths(files: list[Path]) -> list[str]:
    dead = []
    for f in files:
        for i, line in enumerate(f.read_text().splitlines(), 1):
            for m in PATH.finditer(line):
                p, glob = m.group(1).rstrip("."), m.group(2)
                if p.startswith(OUTPUTS) or re.search(r"/[A-Z][A-Z_]+\b", p):   # outputs, NAME placeholders
                    continue
                if glob or p.endswith(("_", "-")):       # a prefix: noise-*, perf_topdown_
                    prefix = p + (glob or "").rstrip("*")
                    found = any((REPO / prefix).parent.glob(Path(prefix).name + "*"))
                else:
                    # `analysis/inputs/records.convert`: a module and a name in it
                    found = ((REPO / p).exists() or (REPO / (p + ".py")).exists()
                             or (REPO / (p.rsplit(".", 1)[0] + ".py")).exists())
                if not found:
                    dead.append(f"{f.relative_to(REPO)}:{i}: {p}")
    return dead


def test_every_path_the_docs_name_exists():
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "cases").rglob("*.md"))]
    assert not dead_paths(docs)


def test_the_path_check_finds_a_dead_path(tmp_path):
    doc = REPO / "docs" / "_probe_dead_path.md"
    try:
        doc.write_text("see collectors/build/builder.py and analysis/stats.py\n")
        assert dead_paths([doc]) == ["docs/_probe_dead_path.md:1: collectors/build/builder.py"]
    finally:
        doc.unlink()
