"""The console script of installs made before the command layer moved to commands/: their
`stallscope` still imports collectors.cli:entry (pyproject now names commands.table:entry;
`make setup` rewrites the script). An entry point, not library, like collectors/__main__.py;
remove it once no checkout's .venv carries the old script."""
from commands.table import entry, main

__all__ = ["entry", "main"]
