"""`python -m analysis COMMAND ...`: the analysis stage alone (the full command is
`stallscope`, collectors/cli.py)."""
import sys

from analysis.commands import COMMANDS, dispatch

sys.exit(dispatch(COMMANDS, sys.argv[1:], "python -m analysis",
                  ["Pure analysis of run directories and raw tool outputs (nothing is run)."]))
