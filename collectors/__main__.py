"""`python -m collectors COMMAND ...`: everything that runs things."""
from __future__ import annotations

import importlib
import sys

# command -> (module, one-line help). Each module has main(argv) -> int.
COMMANDS = {
    "run": ("collectors.runner.cli", "run a case for two or more variants into runs/<run-id>/ (--resume to finish one)"),
    "demo": ("collectors.runner.demo", "the main job: Debian-source Redis vs + cases/patches MSET prefetch, then report"),
    "build": ("collectors.build.cli", "build (or fetch from cache) one variant and print where its binaries are"),
    "cases": ("collectors.workload.cases_cli", "list cases, show one resolved, or import a redis-benchmarks-specification suite file"),
    "doctor": ("collectors.doctor", "which collectors work on this machine, and why not"),
    "parca": ("collectors.profilers.parca_cli", "fetch a merged CPU profile for a time window from a Parca server"),
}


def usage() -> str:
    lines = ["usage: python -m collectors COMMAND [ARGS] (COMMAND --help for details)", "", "commands:"]
    lines += [f"  {name:<7} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"collectors: unknown command {cmd!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[cmd][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
