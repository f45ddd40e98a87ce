"""`python -m commands ...`: the `stallscope` command (commands/table.py)."""
import sys

from commands.table import main

sys.exit(main(prog="python -m commands"))
