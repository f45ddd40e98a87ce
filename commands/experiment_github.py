"""`stallscope experiment github`: write the GitHub Actions workflow that runs one experiment
over many runners (collectors/sweep/experiment/workflow.py renders it)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.inputs.option_specs import SIZE
from collectors.pr import runners
from collectors.sweep.experiment.file import load_experiment
from collectors.sweep.experiment.workflow import render, targets
from collectors.workload.casefile import CaseError
from commands.options import add_option


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stallscope experiment github",
        description="Write a GitHub Actions workflow that runs one experiment over many self-hosted "
                    "runners: a plan job (--emit-matrix), one job per point (--point, fail-fast off), "
                    "and a merge job (--merge) that uploads the report.",
        epilog="Example:\n  stallscope experiment github mset-15043 --runner-group bench-trusted \\\n"
               "      --runner-labels self-hosted,bare-metal --max-parallel 4 --out .github/workflows/mset-15043.yml\n\n"
               "The runner group is required: its settings (organization, Actions, Runner groups) keep it to\n"
               "trusted workflows, so a pull request's job, which picks its own runs-on, cannot land on these\n"
               "runners and plant builds in their cache. A PR workflow whose runners could be these, in the\n"
               "directory of --out or in the .github/workflows of its git work tree or of the current one, is\n"
               "refused, whether the workflow goes to a file or to stdout (docs/pr.md, \"Runner isolation\").",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="an experiment (cases/experiments/NAME.yaml)")
    p.add_argument("--runner-group", required=True, metavar="NAME",
                   help="the runner group every job runs in: one kept to trusted workflows, never the "
                        "PR workflow's (required)")
    p.add_argument("--runner-labels", default="self-hosted,linux", metavar="L1,L2",
                   help="labels of the runners every job runs on, within the group (default self-hosted,linux)")
    p.add_argument("--max-parallel", type=int, default=4, metavar="N",
                   help="points running at once (default 4)")
    p.add_argument("--timeout", type=int, default=360, metavar="MINUTES",
                   help="one point's job timeout in minutes (default 360)")
    add_option(SIZE, p, "experiment github")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="a case override every point runs with (repeat)")
    p.add_argument("--only", action="append", default=[], metavar="PART[:AXIS=VALUE,...]",
                   help="only these rows (repeat)")
    p.add_argument("--out", metavar="FILE", help="write the workflow here (default: stdout)")
    return p


def main(argv: list[str]) -> int:
    a = parser().parse_args(argv)
    try:
        load_experiment(a.name)            # a typo fails here, not on the runners
    except CaseError as e:
        print(f"stallscope experiment github: error: {e}", file=sys.stderr)
        return 2
    labels = [x.strip() for x in a.runner_labels.split(",") if x.strip()]
    if not labels or a.max_parallel < 1 or a.timeout < 1:
        print("stallscope experiment github: error: give --runner-labels, and --max-parallel and "
              "--timeout of at least 1", file=sys.stderr)
        return 2
    problem = runners.group_problem(a.runner_group)
    if problem:
        print(f"stallscope experiment github: error: --runner-group {a.runner_group!r}: {problem}", file=sys.stderr)
        return 2
    runs_on = runners.RunsOn(a.runner_group, tuple(labels))
    args = ["--size", a.size, *[x for s in a.set for x in ("--set", s)],
            *[x for o in a.only for x in ("--only", o)]]
    text = render(a.name, args, runs_on, a.max_parallel, a.timeout)
    out = Path(a.out) if a.out else None
    try:        # to a file or to stdout: a PR workflow's runners are never these
        runners.check_apart(targets(str(out) if out else "the workflow printed", runs_on), runners.peers(out))
    except runners.RunnersShared as e:
        print(f"stallscope experiment github: error: {e}", file=sys.stderr)
        return 2
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"stallscope experiment github: wrote {a.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
