"""`python -m analysis COMMAND ...`: the analysis stage alone (the full command is
`stallscope`, commands/table.py). An entry point, not library: nothing imports it, so it
may reach into the command layer (tests/test_architecture.py names it as the exception)."""
import sys

from commands.dispatch import dispatch
from commands.table import ANALYSIS_COMMANDS

sys.exit(dispatch(ANALYSIS_COMMANDS, sys.argv[1:], "python -m analysis",
                  ["Pure analysis of run directories and raw tool outputs (nothing is run)."]))
