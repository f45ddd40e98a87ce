"""Which self-hosted runners the generated workflows may land on, and the check that the PR
workflow and the schedule's workflow never share one (docs/pr.md, "Runner isolation").

The PR workflow's measuring job runs a pull request's code; the schedule's jobs hold the
history URL and alert tokens and build with the runner's own cache. Labels alone never
kept them apart: a label is a string any job asks for, and a PR's run uses the fork's copy
of the workflow, so once one run is approved it can ask for the schedule's labels. A runner
group is a wall GitHub keeps (a runner is in one group; a group admits the repositories and
workflows its settings name), so both workflows target one: GitHub Actions'
`runs-on: {group: NAME, labels: [...]}`, a job then going only to a runner of that group
with all those labels.

An experiment's workflow (`stallscope experiment github`) is trusted too: it builds the
maintainers' variants with the runner's own cache, which a PR's job on that runner could
plant. `stallscope pr github`, `stallscope schedule github` and `stallscope experiment
github` each read the others' files before writing anything, to a file or to stdout
(`peers`): in the directory written to, and in the `.github/workflows` of the git work tree
that directory is in and of the one the command runs in (where a workflow printed or written
elsewhere is put); and refuse a PR target and a trusted one that could meet: the same
group, or labels one of which holds the other's (a runner with the larger set fits both; the
group settings are what keep them apart, and a mistaken group setting should not leave the
labels matching too)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import UserError
from analysis.inputs import yaml_lines

PR_ROLE = "the PR workflow (runs pull requests' code)"
SCHEDULE_ROLE = "the schedule's workflow (holds the alert tokens and history URL, builds with the own cache)"
EXPERIMENT_ROLE = "an experiment's workflow (builds trusted code with the runner's own cache)"
# the `name:` of each generated workflow: how a file in the directory is recognised
ROLES = {"stallscope PR": PR_ROLE, "stallscope scheduled profiling": SCHEDULE_ROLE}
# `stallscope experiment github NAME` names its workflow "stallscope experiment NAME over runners"
EXPERIMENT_PREFIX = "stallscope experiment "
EXPERIMENT_NAME = re.compile(rf"^{re.escape(EXPERIMENT_PREFIX)}\S+ over runners$")
GROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]*")
_MATRIX = re.compile(r"^\$\{\{\s*matrix\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}$")


def role_of(name: object) -> str | None:
    """The role of a generated workflow, from its `name:`; None for any other workflow."""
    if not isinstance(name, str):
        return None
    return ROLES.get(name) or (EXPERIMENT_ROLE if EXPERIMENT_NAME.match(name) else None)


class RunnersShared(UserError):
    """The PR workflow and the schedule's workflow could be given the same runner; exit 2."""


@dataclass(frozen=True)
class RunsOn:
    """A job's runner: a runner group and labels (`runs-on: {group, labels}`); group None
    for a file written before workflows named one (it may land on any group this
    repository may use)."""
    group: str | None
    labels: tuple[str, ...]

    def yaml(self) -> dict:
        return {"group": self.group, "labels": list(self.labels)}

    def __str__(self) -> str:
        group = f"runner group {self.group!r}" if self.group else "no runner group"
        return f"{group}, labels {', '.join(self.labels) or 'none'}"


@dataclass(frozen=True)
class Target:
    where: str           # "FILE, job NAME"
    role: str            # PR_ROLE | SCHEDULE_ROLE | EXPERIMENT_ROLE
    runs_on: RunsOn


def group_problem(name: str | None) -> str | None:
    if not name or not GROUP.fullmatch(name) or name != name.strip():
        return "give the name of a runner group (letters, digits, spaces and _ . -)"
    if name.casefold() == "default":
        return ("the Default group is where every new runner goes and, by default, every repository "
                "may use: give a group of its own")
    return None


def overlap(a: RunsOn, b: RunsOn) -> str | None:
    """Why jobs targeting `a` and `b` could be given the same runner, or None."""
    if a.group is None or b.group is None:
        return "one of them names no runner group (a file written before they did: regenerate it)"
    if a.group.casefold() == b.group.casefold():
        return f"both target the runner group {a.group!r}"
    la, lb = ({x.casefold() for x in r.labels} for r in (a, b))
    if la <= lb or lb <= la:
        small = a if la <= lb else b
        return (f"a runner with the labels {', '.join(sorted(la | lb))} fits both (the labels "
                f"{', '.join(small.labels)} ask for nothing the other's lack)")
    return None


def check_apart(new: list[Target], others: list[Target]) -> None:
    """RunnersShared naming every pair of a PR target and a trusted one (the schedule's, an
    experiment's) that could meet; trusted workflows may share runners with each other."""
    clashes = [f"{a.where} ({a.runs_on}) and {b.where} ({b.runs_on}): {why}"
               for a in new for b in others if (a.role == PR_ROLE) != (b.role == PR_ROLE)
               for why in [overlap(a.runs_on, b.runs_on)] if why]
    if clashes:
        raise RunnersShared(
            "the PR workflow and a trusted workflow (the schedule's, an experiment's) could run on the same "
            "runners: " + "; ".join(clashes)
            + ". A job of the PR workflow runs a pull request's code, which could then read the schedule's "
            "alert tokens and plant builds in a trusted job's cache: give each its own runner group, and labels "
            "of which neither holds the other's (docs/pr.md, \"Runner isolation\")")


# GitHub-hosted images (a `runs-on` string that names one needs no runner of the project's)
_HOSTED = re.compile(r"^(ubuntu|windows|macos)-[\w.-]+$")


def _runs_on(value: object, row: dict) -> RunsOn | None:
    """A job's `runs-on` as written by stallscope, `${{ matrix.X }}` read from the matrix
    row; None for a GitHub-hosted image (a string that is not an expression)."""
    def resolve(v: object) -> object:
        m = _MATRIX.match(v) if isinstance(v, str) else None
        return row.get(m.group(1)) if m else v
    value = resolve(value)
    if isinstance(value, str):      # a GitHub-hosted image, or one self-hosted label
        return None if _HOSTED.match(value) else RunsOn(None, (value,))
    if isinstance(value, list):
        return RunsOn(None, tuple(map(str, value)))
    if isinstance(value, dict):
        labels = resolve(value.get("labels")) or ()
        labels = [labels] if isinstance(labels, str) else labels
        group = resolve(value.get("group"))
        return RunsOn(str(group) if group else None, tuple(map(str, labels)))
    return None


def targets_in(directory: Path, skip: Path | None = None) -> list[Target]:
    """The self-hosted targets of the stallscope workflows in `directory` (recognised by
    their `name:`), but `skip` (the file about to be written)."""
    out = []
    for f in sorted([*directory.glob("*.yml"), *directory.glob("*.yaml")]) if directory.is_dir() else []:
        if skip is not None and f.resolve() == skip.resolve():
            continue
        try:
            text = f.read_text()
        except (OSError, UnicodeDecodeError):
            continue                     # not a workflow of ours: nothing to compare
        try:
            doc, _ = yaml_lines.load(text, str(f))
        except yaml_lines.YamlError as e:
            # one of ours that cannot be read could hide a shared runner: refuse, not skip
            if any(f"name: {n}" in text for n in [*ROLES, EXPERIMENT_PREFIX]):
                raise RunnersShared(f"{e}; fix or remove that workflow, then write this one again "
                                    "(its runners must be checked against this one's)") from None
            continue
        role = role_of(doc.get("name")) if isinstance(doc, dict) else None
        if role is None:
            continue
        for job_name, job in (doc.get("jobs") or {}).items():
            if not isinstance(job, dict):
                continue
            matrix = (job.get("strategy") or {}).get("matrix")
            # an expression (an experiment's points, fromJSON of the plan's output) has no rows
            # to read: the job's runs-on is then written out in full
            rows = (matrix.get("include") if isinstance(matrix, dict) else None) or [{}]
            for row in rows:
                ro = _runs_on(job.get("runs-on"), row if isinstance(row, dict) else {})
                if ro is not None:
                    label = f"{job_name} {row['job']}" if isinstance(row, dict) and row.get("job") else job_name
                    out.append(Target(f"{f}, job {label}", role, ro))
    return out


WORKFLOWS = Path(".github") / "workflows"


def _work_tree(start: Path) -> Path | None:
    """The git work tree `start` (or its nearest existing parent) is in: the first directory
    up from it that holds `.git` (a directory, or a worktree's file)."""
    here = start.absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return None


def workflow_dirs(written: Path | None) -> list[Path]:
    """Where the workflows a new one must be kept apart from can be: the directory of the
    file `written` (None: stdout), and the `.github/workflows` of the work tree that
    directory is in and of the current directory's (without a work tree,
    ./.github/workflows). Each once."""
    dirs = [written.parent] if written is not None else []
    for start in ([written.parent] if written is not None else []) + [Path.cwd()]:
        tree = _work_tree(start)
        dirs.append((tree if tree is not None else Path.cwd()) / WORKFLOWS)
    out, seen = [], set()
    for d in dirs:
        key = d.resolve()
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def peers(written: Path | None) -> list[Target]:
    """The self-hosted targets of the stallscope workflows in every one of `workflow_dirs`,
    but the file being written."""
    return [t for d in workflow_dirs(written) for t in targets_in(d, skip=written)]

