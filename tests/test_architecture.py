"""The shape of the code: stages you can see in the tree, imports that point one way.

docs/architecture.md describes the layering; this test holds the code to it. The import
graph is read from the source (every `import` and `from ... import`, also inside
functions), so a lazy import cannot hide a cycle. The layers: commands -> collectors ->
analysis; nothing imports the commands, and only the commands parse a command line.
"""
from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = ("analysis", "collectors", "commands")
LIBRARY = ("analysis", "collectors")
# Entry points, not library: `python -m analysis`, `python -m collectors`, and the console
# script of installs made before the command layer moved (collectors.cli:entry; `make setup`
# rewrites it to commands.table:entry). Nothing imports them; each only hands argv to
# commands/. The only modules outside commands/ that may import it.
ENTRY_POINTS = {"analysis.__main__", "collectors.__main__", "collectors.cli"}
MODULE_LINES = 400          # "no module over ~400 lines"
FUNCTION_LINES = 60         # "no function over ~60 lines"
GENERATED = {"analysis.profile.profile_pb2"}   # protoc output, not ours to shape


def module_files() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((REPO / pkg).rglob("*.py")):
            parts = list(p.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Our modules that `name` imports (a `from pkg import mod` counts as pkg.mod)."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                and node.value in known:
            # a module named as a string is imported by importlib (the command tables, the
            # run plugins): it is an edge like any other
            found.add(node.value)
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph (module -> modules it imports), or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 80
    assert cycle_in(graph) is None, f"import cycle: {' -> '.join(cycle_in(graph) or [])}"


def test_the_cycle_check_finds_a_cycle():
    """The check above can fail: a graph with a back edge is caught, and the cycle named."""
    graph = import_graph()
    graph["analysis.inputs.manifest"] = graph["analysis.inputs.manifest"] | {"analysis.compare.engine"}
    cyc = cycle_in(graph)
    assert cyc is not None and "analysis.inputs.manifest" in cyc and "analysis.compare.engine" in cyc


def test_analysis_never_imports_collectors():
    bad = {m: sorted(i for i in deps if i.startswith("collectors"))
           for m, deps in import_graph().items() if m.startswith("analysis")}
    assert not {m: d for m, d in bad.items() if d}


def test_nothing_imports_the_commands():
    """commands/ is the top layer: a library module that imported a command would depend on
    argument parsing and exit statuses (the entry points above only forward argv)."""
    bad = {m: sorted(i for i in deps if i.split(".")[0] == "commands")
           for m, deps in import_graph().items()
           if m.split(".")[0] != "commands" and m not in ENTRY_POINTS}
    assert not {m: d for m, d in bad.items() if d}


def test_every_command_module_is_under_commands():
    """One direction, commands -> collectors -> analysis: the command table names every
    command module, and every command module is under commands/."""
    from commands.table import COMMANDS
    assert all(c.module.startswith("commands.") for c in COMMANDS)
    assert {c.module for c in COMMANDS} <= set(module_files())


# Library modules that may import argparse, each with the reason. None: options are declared
# as data (analysis/inputs/option_specs.py Option, collectors/collector.py RunFlag) and only
# commands/ makes them into a parser. A new entry needs a comment saying why it cannot wait.
ARGPARSE_ALLOWED: dict[str, str] = {}


def argparse_importers(files: dict[str, Path]) -> list[str]:
    """The modules of `files` under analysis/ or collectors/ (not entry points) whose source
    imports argparse anywhere (also inside a function or under TYPE_CHECKING)."""
    out = []
    for name, path in files.items():
        if name.split(".")[0] not in LIBRARY or name in ENTRY_POINTS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in node.names)) \
                    or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse"):
                out.append(name)
                break
    return out


def test_no_library_module_imports_argparse():
    """Only the command layer parses a command line (issue 28, item 2)."""
    found = argparse_importers(module_files())
    assert set(found) <= set(ARGPARSE_ALLOWED), \
        f"argparse imported outside commands/: {sorted(set(found) - set(ARGPARSE_ALLOWED))}"


def test_the_argparse_check_finds_an_import(tmp_path):
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from argparse import Namespace\n    return Namespace\n")
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import argparse\n")
    files = {"collectors.lazy": lazy, "analysis.typed": typed, "commands.ok": typed, "collectors.__main__": typed}
    assert argparse_importers(files) == ["collectors.lazy", "analysis.typed"]


def test_comparison_does_not_import_the_renderers():
    """Formatting lives with the renderers; only the command (commands/compare.py) runs both stages."""
    bad = {m: sorted(i for i in deps if i.startswith("analysis.report"))
           for m, deps in import_graph().items()
           if m.startswith(("analysis.compare", "analysis.stats", "analysis.inputs", "analysis.tma.model",
                            "analysis.tma.formats", "analysis.tma.funnel"))}
    assert not {m: d for m, d in bad.items() if d}


HISTORY_RENDERERS = {"analysis.history.alert_md", "analysis.history.trends", "analysis.history.trend_svg"}


def test_only_commands_and_the_sweep_import_the_renderers():
    """docs/architecture.md's sentence, held: in analysis/, outside analysis/report/, a module
    importing analysis.report is part of the sweep's own report or one of the history's
    renderers (the commands, commands/, run the report stage too)."""
    bad = {m: sorted(i for i in deps if i.startswith("analysis.report"))
           for m, deps in import_graph().items()
           if m.startswith("analysis.") and not m.startswith(("analysis.report", "analysis.sweep"))
           and m not in HISTORY_RENDERERS}
    assert not {m: d for m, d in bad.items() if d}


def test_the_report_package_never_imports_the_history():
    """One direction: the history renders its pages with report's helpers; a report of a run
    needs nothing of the history (issue 19: the two imported each other)."""
    bad = {m: sorted(i for i in deps if i.startswith("analysis.history"))
           for m, deps in import_graph().items() if m.startswith("analysis.report")}
    assert not {m: d for m, d in bad.items() if d}


def test_no_collector_imports_the_runner():
    bad = {m: sorted(i for i in deps if i.startswith("collectors.runner"))
           for m, deps in import_graph().items()
           if m.startswith(("collectors.profilers", "collectors.load", "collectors.host",
                            "collectors.variants", "collectors.workload", "collectors.collector"))}
    assert not {m: d for m, d in bad.items() if d}


def test_modules_and_functions_stay_small():
    big, long_fns = [], []
    for name, path in module_files().items():
        if name in GENERATED:
            continue
        text = path.read_text()
        if text.count("\n") > MODULE_LINES:
            big.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    long_fns.append(f"{name}.{node.name}: {n} lines")
    assert not big, f"modules over {MODULE_LINES} lines (split them by job): {big}"
    assert not long_fns, f"functions over {FUNCTION_LINES} lines: {long_fns}"


def test_architecture_doc_names_every_package():
    doc = (REPO / "docs" / "architecture.md").read_text()
    pkgs = sorted({".".join(p.relative_to(REPO).parts[:-1]) for pkg in PACKAGES
                   for p in (REPO / pkg).rglob("__init__.py")} - set(PACKAGES))
    missing = [p for p in pkgs if f"`{p.replace('.', '/')}/`" not in doc]
    assert not missing, f"docs/architecture.md does not describe: {missing}"


def _table_rows() -> list[str]:
    doc = (REPO / "docs" / "architecture.md").read_text()
    return [line for line in doc.splitlines() if line.startswith("| `")]


def documented(module: str, rows: list[str]) -> bool:
    """Whether docs/architecture.md's table names the module: its file anywhere in a row
    (`analysis/stats.py`), or its short name in backticks in its package's row."""
    parts = module.split(".")
    path, pkg = "/".join(parts), "/".join(parts[:-1]) + "/"
    for row in rows:
        first = row.split("|")[1]
        if f"`{path}.py`" in row or f"`{path}/`" in first:
            return True
        if f"`{pkg}`" in first and f"`{parts[-1]}`" in row:
            return True
    return False


def undocumented(files: dict[str, Path], rows: list[str]) -> list[str]:
    return [m for m, p in files.items()
            if m not in GENERATED and p.name != "__init__.py" and not documented(m, rows)]


def test_architecture_doc_names_every_module():
    missing = undocumented(module_files(), _table_rows())
    assert not missing, f"docs/architecture.md's table does not name: {missing} (add each to its package's row)"


def test_the_doc_check_finds_a_module_missing_from_the_table():
    files, rows = module_files(), _table_rows()
    before = undocumented(files, rows)
    # a module added to a documented package but not named in its row is caught ...
    files = {**files, "collectors.host.hugepages": REPO / "collectors" / "host" / "hugepages.py"}
    assert undocumented(files, rows) == before + ["collectors.host.hugepages"]
    # ... and so is a module whose name only appears in another package's row
    rows = [r.replace("`cpuid`", "`cpu_id`") for r in rows]
    assert "collectors.host.cpuid" in undocumented(module_files(), rows)


def test_modules_named_as_strings_are_edges():
    """collectors/runner/plugins.py names the profilers for importlib; the command table names the
    command modules: the graph holds those edges, so a cycle through them is caught too."""
    graph = import_graph()
    assert "collectors.profilers.perf" in graph["collectors.runner.plugins"]
    assert {"commands.run", "commands.compare"} <= graph["commands.table"]


STAGES = ("run", "compare", "demo", "funnel", "tma", "doctor", "cases", "build", "parca", "sweep", "experiment")


@pytest.mark.heavy
def test_stallscope_command_lists_every_stage():
    exe = Path(sys.executable).with_name("stallscope")
    if not exe.exists():
        pytest.fail(f"{exe} missing: `make setup` installs the stallscope command into .venv")
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    listed = {line.split()[0] for line in out.stdout.splitlines() if line.startswith("  ")}
    assert set(STAGES) <= listed, set(STAGES) - listed
    for stage in STAGES:
        h = subprocess.run([str(exe), stage, "--help"], capture_output=True, text=True, timeout=60)
        assert h.returncode == 0 and f"stallscope {stage}" in h.stdout, (stage, h.stdout[:200], h.stderr[-300:])
    bad = subprocess.run([str(exe), "frobnicate"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown command 'frobnicate'" in bad.stderr
