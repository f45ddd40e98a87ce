"""One error base (issue 28, item 3): every error the library raises for a command to
report derives from analysis/errors.py's UserError (exit 2) or Failed (exit 1), every
command ends through analysis/command_end.py, so the same error ends every command with
the same status, and docs/errors.md lists them all."""
from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import subprocess
import sys

import pytest

from analysis.command_end import end_command
from analysis.errors import BAD_INPUT, FAILED, Failed, UserError
from commands.table import ANALYSIS_COMMANDS, COMMANDS
from tests.conftest import REPO
from tests.test_architecture import GENERATED, module_files

# Not errors a command reports: a signal (a BaseException, so `except Exception` cannot
# swallow it) and an HTTP status the Parca client turns into ParcaError before it leaves.
NOT_REPORTED = {"collectors.host.procs.Interrupted", "collectors.profilers.parca.client._HttpError",
                "analysis.errors.StallscopeError"}     # the base of the two bases


def errors_in(modules) -> dict[str, type[BaseException]]:
    out = {}
    for name in modules:
        mod = importlib.import_module(name)
        for cls_name, cls in vars(mod).items():
            if (inspect.isclass(cls) and issubclass(cls, BaseException)
                    and cls.__module__ == name):
                out[f"{name}.{cls_name}"] = cls
    return out


def library_errors() -> dict[str, type[BaseException]]:
    # __main__ modules run a command when imported; they define no classes.
    return errors_in(n for n in module_files() if n not in GENERATED and not n.endswith("__main__"))


def strays(errors: dict[str, type[BaseException]]) -> list[str]:
    return sorted(q for q, cls in errors.items()
                  if q not in NOT_REPORTED and not issubclass(cls, (UserError, Failed)))


def test_every_library_error_derives_from_the_one_base():
    errors = library_errors()
    assert len(errors) >= 45          # the issue counted 46 classes: the scan sees them
    assert not strays(errors), f"derive these from analysis.errors.UserError or Failed: {strays(errors)}"


def test_the_scan_finds_a_stray_error(tmp_path, monkeypatch):
    """The check above can fail: a module with a bare `class X(Exception)` is reported."""
    (tmp_path / "straymod.py").write_text(
        "from analysis.errors import Failed\n"
        "class LooseError(Exception):\n    pass\n"
        "class KeptError(Failed, RuntimeError):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert strays(errors_in(["straymod"])) == ["straymod.LooseError"]


def _calls_in(module: str) -> set[str]:
    tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
    return {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
            for n in ast.walk(tree) if isinstance(n, ast.Call)}


@pytest.mark.parametrize("command", [c for c in COMMANDS], ids=lambda c: c.name)
def test_every_command_ends_through_the_one_ending(command):
    """Each command module calls end_command or run_command (pr's other actions: pr_post.run)."""
    modules = [command.module] + (["commands.pr_post"] if command.name == "pr" else [])
    assert any({"end_command", "run_command"} & _calls_in(m) for m in modules), command.module
    assert all(c in COMMANDS for c in ANALYSIS_COMMANDS)


def test_no_command_keeps_its_own_error_list():
    """The ending takes no tuples of error types: the status is the error's own."""
    params = inspect.signature(end_command).parameters
    assert not {"known", "failed"} & set(params)
    from collectors.command import run_command
    assert not {"known", "failed"} & set(inspect.signature(run_command).parameters)


def _stallscope(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "STALLSCOPE_DEBUG"}
    return subprocess.run([sys.executable, "-m", "collectors", *args], capture_output=True, text=True,
                          cwd=REPO, env={**env, "PYTHONPATH": str(REPO)}, timeout=120)


@pytest.mark.heavy
def test_the_same_error_ends_two_commands_with_the_same_status(tmp_path):
    """A variant spec that does not parse: `build` and `run` both exit 2 with the same
    sentence (before, `build` listed ValueError as bad input and `run` did too, but a
    BuildError was 1 from one and 2 from the other)."""
    build = _stallscope("build", "x=debsrc:nginx", "--cache", str(tmp_path))
    run = _stallscope("run", "mset-50keys", "--variant", "x=debsrc:nginx", "--variant", "y=debsrc:redis",
                      "--out", str(tmp_path / "runs"), "--size", "tiny")
    for r in (build, run):
        assert r.returncode == BAD_INPUT, r.stderr
        assert "debsrc package 'nginx' is not supported" in r.stderr, r.stderr


def test_docs_list_every_error_with_its_status():
    doc = (REPO / "docs/errors.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (\d) \|", doc, re.M))
    for q, cls in library_errors().items():
        if q in NOT_REPORTED or q.startswith("analysis.errors."):     # the bases themselves
            continue
        name = q.rsplit(".", 1)[1]
        assert name in rows, f"docs/errors.md has no row for {name} ({q})"
        assert int(rows[name]) == cls.status, f"docs/errors.md says {name} exits {rows[name]}, it exits {cls.status}"
    assert {int(v) for v in rows.values()} <= {FAILED, BAD_INPUT}
