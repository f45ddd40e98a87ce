"""`python -m collectors ...`: an alias of the `stallscope` command (commands/table.py). An
entry point, not library: nothing imports it, so it may reach into the command layer
(tests/test_architecture.py names it as the exception)."""
import sys

from commands.table import main

sys.exit(main(prog="python -m collectors"))
