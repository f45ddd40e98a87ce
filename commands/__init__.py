"""The command layer: one module per `stallscope` command (commands/table.py lists them),
each a thin shell over the library (analysis/, collectors/): parse the arguments, call the
library, print, and end through the one error base (analysis/command_end.py,
collectors/command.py). Only this package parses a command line; nothing imports it but the
entry points (`python -m collectors`, `python -m analysis`)."""
