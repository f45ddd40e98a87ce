"""The console script of installs made before the command layer moved to commands/: their
`stallscope` still imports collectors.cli:entry (pyproject now names commands.table:entry).
Such an install finds `commands` only where the checkout is on sys.path (a worktree run
with PYTHONPATH, as the tests run); `make setup` rewrites the script and maps the new
package. An entry point, not library, like collectors/__main__.py; remove it once no
checkout's .venv carries the old script."""
from commands.table import entry, main

__all__ = ["entry", "main"]
