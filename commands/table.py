"""`stallscope COMMAND ...`: the one command over every stage, in pipeline order.

Every command module is in this package (commands/dispatch.py runs the one named).
`python -m collectors` is an alias; `python -m analysis` serves the analysis commands alone,
which load nothing of collectors/.
"""
from __future__ import annotations

import signal
import sys

from commands.dispatch import Command, dispatch

ANALYSIS_COMMANDS: list[Command] = [
    Command("analyse", "compare", "commands.compare",
            "compare the variants of a run directory: report.md, report.html, results.json, flame graphs"),
    Command("analyse", "funnel", "commands.funnel",
            "TMA top-down funnel of toplev/perf outputs: A1 A2 A3 --vs B1 B2 B3"),
    Command("analyse", "tma", "commands.tma", "parse one toplev/perf TMA output and print its tree"),
    Command("keep", "history", "commands.history",
            "history of runs (SQLite/PostgreSQL): ingest, change points, marks, compare, trend pages, alerts"),
]

COMMANDS: list[Command] = [
    Command("prepare", "cases", "commands.cases",
            "list the cases, show one resolved, or import a redis-benchmarks-specification suite file"),
    Command("prepare", "build", "commands.build",
            "build (or take from the cache) one variant and print where its binaries are"),
    Command("prepare", "doctor", "commands.doctor",
            "which collectors work on this machine (perf, PMU, toplev, Parca ...) and how to fix the rest"),
    Command("collect", "run", "commands.run",
            "run a case for two or more variants into runs/<run-id>/ (--resume finishes one)"),
    Command("collect", "sweep", "commands.sweep",
            "run a case over axes (key counts, value sizes ...) for two or more variants: table + crossover plot"),
    Command("collect", "experiment", "commands.experiment",
            "one seed experiment (cases/experiments/): the seed's table on this machine, its numbers beside ours"),
    Command("collect", "demo", "commands.demo",
            "the main job: Redis vs Redis + the MSET bucket-prefetch patch, run and reported"),
    Command("collect", "parca", "commands.parca",
            "fetch a merged CPU profile of a time window from a Parca server"),
    *ANALYSIS_COMMANDS,
    Command("keep", "bisect", "commands.bisect",
            "the commit of a range that changed a case's throughput, and the functions it moved"),
    Command("keep", "schedule", "commands.schedule",
            "scheduled profiling: run a schedule file's due jobs into the history; systemd / GitHub Actions"),
    Command("keep", "pr", "commands.pr",
            "pull requests: GitHub workflows that measure a labelled PR and keep one comment; post it by hand"),
]

INTRO = ["stallscope: did a change remove memory stalls, where, and what did it buy?",
         "Pipeline: cases + variants -> run -> runs/<run-id>/ -> compare -> reports/<run-id>/",
         "(docs/architecture.md names every stage and the files between them)"]


def main(argv: list[str] | None = None, prog: str = "stallscope") -> int:
    return dispatch(COMMANDS, sys.argv[1:] if argv is None else argv, prog, INTRO)


def entry() -> None:
    """The console script `make setup` installs (pyproject [project.scripts])."""
    # `stallscope cases list | head` should end quietly, as any Unix tool does.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
