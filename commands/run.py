"""`stallscope run`: run a case for two or more variants into runs/<run-id>/.

A thin shell: arguments (commands/run_arguments.py) -> RunRequest -> the run API
(collectors/runner/api.py: plan_run checks and builds, execute runs the reps), then the
report when asked. `--resume RUN_DIR` finishes an interrupted run.
"""
from __future__ import annotations

import sys
from typing import Callable

from analysis.compare.errors import CompareError
from analysis.inputs.rundir import RunDirError
from analysis.report.summary_text import text_lines
from analysis.report.writer import report_run
from collectors.command import run_command
from collectors.host import procs
from collectors.runner.api import execute, plan_run, resume_run
from commands.run_arguments import parser, request_from_args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    log = (lambda msg: print(msg, file=sys.stderr))
    # Now, not in Runner.run(): Ctrl-C during a build or apt-get source must end in the
    # one-line message below, not a KeyboardInterrupt traceback.
    procs.install_signal_handlers()
    return run_command("stallscope run", lambda: _run(args, argv, log),
                       "before the first rep (builds finished so far are cached)")


def _run(args, argv: list[str], log: Callable[[str], None]) -> int:
    if args.resume:
        plan = resume_run(args.resume, log, progress=not args.no_progress)
    else:
        plan = plan_run(request_from_args(args, argv), log)
    outcome = execute(plan)
    print(str(outcome.run_dir))
    if (args.report or outcome.report) and outcome.status in (0, 1):
        try:
            r, paths = report_run(outcome.run_dir)
        except (RunDirError, CompareError, ValueError) as e:
            # the run is made and kept: its status stands, the report can be redone
            log(f"stallscope run: the report failed: {e}; redo it with: stallscope compare {outcome.run_dir}")
        else:
            print("\n".join(text_lines(r)))
            print(f"wrote {paths['md']}, {paths['html']}, {paths['json']}")
    return outcome.status


if __name__ == "__main__":
    sys.exit(main())
