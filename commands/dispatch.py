"""The dispatcher every command table uses (commands/table.py holds the tables).

A command is a module with `main(argv) -> int`, imported only when it runs (so `--help`
is instant and a stage's dependencies load only for that stage).
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    stage: str        # prepare | collect | analyse | keep ... (printed in table order)
    name: str
    module: str
    help: str


ALIASES = {"report": "compare"}


def usage(commands: list[Command], prog: str, intro: list[str]) -> str:
    lines = [f"usage: {prog} COMMAND [ARGS]   ({prog} COMMAND --help for each command)", "", *intro]
    stage = None
    width = max((len(c.name) for c in commands), default=8)
    for c in commands:
        if c.stage != stage:
            lines += ["", f"{c.stage}:"]
            stage = c.stage
        lines.append(f"  {c.name:<{width}} {c.help}")
    aliases = [f"{a} = {t}" for a, t in ALIASES.items() if any(c.name == t for c in commands)]
    if aliases:
        lines += ["", "aliases: " + ", ".join(aliases)]
    return "\n".join(lines)


def dispatch(commands: list[Command], argv: list[str], prog: str, intro: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(commands, prog, intro))
        return 0
    name = ALIASES.get(argv[0], argv[0])
    cmd = next((c for c in commands if c.name == name), None)
    if cmd is None:
        print(f"{prog}: unknown command {argv[0]!r}\n\n{usage(commands, prog, intro)}", file=sys.stderr)
        return 2
    return int(importlib.import_module(cmd.module).main(argv[1:]) or 0)
