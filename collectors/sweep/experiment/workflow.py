"""`stallscope experiment github NAME`: a GitHub Actions workflow that runs one experiment
over a fleet of self-hosted runners (docs/experiments.md, "Over many runners"):

  plan   --emit-matrix: the points, as the job's output
  point  one job per point (a matrix, fail-fast off, at most --max-parallel at once):
         --point ID on a runner of the group with the labels, both variants on that machine; the
         point's directory uploaded as an artifact
  merge  every point artifact downloaded into one directory, --merge, the report uploaded
         (also when some points failed: the report lists them as not run)

Every job runs the same `stallscope experiment NAME ...` arguments, so the points agree on
the plan; --merge refuses any that do not. Every job runs in one runner group, which the
repository's settings keep to trusted workflows (collectors/pr/runners.py: a PR's job there
could plant builds in the runners' cache). Third-party actions are pinned by commit
(collectors/pr/actions.py); checkouts keep no credentials (`persist-credentials: false`)."""
from __future__ import annotations

import shlex

import yaml

from collectors.pr.actions import CHECKOUT, DOWNLOAD, UPLOAD, annotate
from collectors.pr.runners import EXPERIMENT_PREFIX, EXPERIMENT_ROLE, RunsOn, Target

CHECKOUT_STEP = {"uses": CHECKOUT, "with": {"persist-credentials": False}}
SETUP = {"name": "Set up stallscope (idempotent; fast on a prepared runner)", "run": "make setup"}
ARTIFACT = "stallscope-point-"
JOBS = ("plan", "point", "merge")     # every one on the same runners


class _Dumper(yaml.SafeDumper):
    """Readable YAML: no &anchors for the repeated runner labels and setup step, and
    multi-line scripts as `|` blocks."""
    def ignore_aliases(self, data) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _str)


def _steps(run: str, name: str, env: dict | None = None) -> list[dict]:
    step = {"name": name, "run": f". .venv/bin/activate\n{run}\n"}
    if env:
        step["env"] = env
    return [CHECKOUT_STEP, SETUP, step]


def targets(where: str, runs_on: RunsOn) -> list[Target]:
    """The workflow's self-hosted targets (every job runs on the same runners), for the check
    that no PR workflow could share them (collectors/pr/runners.py)."""
    return [Target(f"{where}, job {job}", EXPERIMENT_ROLE, runs_on) for job in JOBS]


def render(name: str, args: list[str], runs_on: RunsOn, max_parallel: int, timeout_min: int) -> str:
    """The workflow; every job runs in runs_on's runner group with its labels (a group the
    repository's settings keep to this workflow: docs/pr.md, "Runner isolation")."""
    cmd = shlex.join(["stallscope", "experiment", name, *args])
    runner = runs_on.yaml()
    plan = {"runs-on": runner, "timeout-minutes": 60,
            "outputs": {"matrix": "${{ steps.plan.outputs.matrix }}"},
            # an assignment, so a failing plan fails the step (bash -e)
            "steps": _steps(f'matrix=$({cmd} --emit-matrix)\necho "matrix=$matrix" >> "$GITHUB_OUTPUT"',
                            "The points, as a matrix")}
    plan["steps"][-1]["id"] = "plan"
    point_steps = _steps(f'{cmd} --point "$POINT" --out points --no-progress',
                         "Run one point (both variants on this runner)",
                         {"POINT": "${{ matrix.point }}"})
    point_steps.append({"name": "Upload the point's directory", "if": "always()", "uses": UPLOAD,
                        "with": {"name": ARTIFACT + "${{ matrix.point }}", "path": "points/",
                                 "if-no-files-found": "ignore"}})
    point = {"name": "${{ matrix.point }} (${{ matrix.labels }})", "needs": "plan",
             "strategy": {"fail-fast": False, "max-parallel": max_parallel,
                          "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"},
             "runs-on": runner, "timeout-minutes": timeout_min, "steps": point_steps}
    merge_steps = [CHECKOUT_STEP, SETUP,
                   {"name": "Download every point", "uses": DOWNLOAD,
                    "with": {"pattern": ARTIFACT + "*", "path": "points", "merge-multiple": True}},
                   {"name": "Merge the points and report",
                    "run": ". .venv/bin/activate\n"
                           "stallscope experiment --merge points --out experiments --report-out report\n"},
                   {"name": "Upload the report", "if": "always()", "uses": UPLOAD,
                    "with": {"name": f"stallscope-{name}-report", "path": "report/\nexperiments/*/experiment.json\n",
                             "if-no-files-found": "ignore"}}]
    # the merge runs when the plan did, also after failed points (listed as not run)
    merge = {"needs": ["plan", "point"], "if": "${{ always() && needs.plan.result == 'success' }}",
             "runs-on": runner, "timeout-minutes": 60, "steps": merge_steps}
    doc = {"name": f"{EXPERIMENT_PREFIX}{name} over runners",      # how runners.role_of knows it
           "on": {"workflow_dispatch": {}},
           "permissions": {"contents": "read"},
           "jobs": dict(zip(JOBS, (plan, point, merge)))}
    header = (f"# Generated by `stallscope experiment github {name}`; regenerate after changing the\n"
              "# experiment or its options. Needs self-hosted runners in the runner group below, with\n"
              "# its labels, each prepared by `make setup`; every point runs both variants on one\n"
              "# runner. Keep the group to trusted workflows: a PR's job on these runners could\n"
              "# plant builds in their cache (docs/pr.md, \"Runner isolation\").\n")
    return header + annotate(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100))
