"""`python -m analysis COMMAND ...`: pure analysis entry points (nothing is run)."""
from __future__ import annotations

import importlib
import sys

# command -> (module, one-line help). Each module has main(argv) -> int.
COMMANDS = {
    "funnel": ("analysis.tma.funnel_cli", "TMA top-down funnel: A1 A2 A3 --vs B1 B2 B3 (toplev/perf outputs)"),
    "compare": ("analysis.compare.cli", "rebuild report.md/report.html/results.json from a run directory"),
    "tma": ("analysis.tma.cli", "parse one toplev/perf TMA output and print the tree (debugging aid)"),
}


def usage() -> str:
    lines = ["usage: python -m analysis COMMAND [ARGS] (COMMAND --help for details)", "", "commands:"]
    lines += [f"  {name:<9} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"analysis: unknown command {cmd!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[cmd][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
