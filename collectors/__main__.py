"""`python -m collectors ...`: an alias of the `stallscope` command (collectors/cli.py)."""
import sys

from collectors.cli import main

sys.exit(main(prog="python -m collectors"))
