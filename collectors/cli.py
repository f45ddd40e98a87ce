"""`stallscope COMMAND ...`: the one command over every stage, in pipeline order.

The collecting stages are listed here; the analysis stage's commands come from
analysis/commands.py (which also holds the dispatcher). `python -m collectors` is an alias.
"""
from __future__ import annotations

import signal
import sys

from analysis.commands import COMMANDS as ANALYSIS_COMMANDS
from analysis.commands import Command, dispatch

COMMANDS: list[Command] = [
    Command("prepare", "cases", "collectors.workload.cases_cli",
            "list the cases, show one resolved, or import a redis-benchmarks-specification suite file"),
    Command("prepare", "build", "collectors.variants.cli",
            "build (or take from the cache) one variant and print where its binaries are"),
    Command("prepare", "doctor", "collectors.doctor",
            "which collectors work on this machine (perf, PMU, toplev, Parca ...) and how to fix the rest"),
    Command("collect", "run", "collectors.runner.cli",
            "run a case for two or more variants into runs/<run-id>/ (--resume finishes one)"),
    Command("collect", "sweep", "collectors.sweep.cli",
            "run a case over axes (key counts, value sizes ...) for two or more variants: table + crossover plot"),
    Command("collect", "experiment", "collectors.sweep.experiment.cli",
            "one seed experiment (cases/experiments/): the seed's table on this machine, its numbers beside ours"),
    Command("collect", "demo", "collectors.runner.demo",
            "the main job: Redis vs Redis + the MSET bucket-prefetch patch, run and reported"),
    Command("collect", "parca", "collectors.profilers.parca.cli",
            "fetch a merged CPU profile of a time window from a Parca server"),
    *ANALYSIS_COMMANDS,
    Command("keep", "bisect", "collectors.bisect.cli",
            "the commit of a range that changed a case's throughput, and the functions it moved"),
    Command("keep", "schedule", "collectors.schedule.cli",
            "scheduled profiling: run a schedule file's due jobs into the history; systemd / GitHub Actions"),
    Command("keep", "pr", "collectors.pr.cli",
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
