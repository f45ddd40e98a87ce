"""`stallscope pr github`: the two GitHub Actions workflows of the pull-request workflow
(docs/pr.md), for a repository of the server (a Redis or Valkey fork).

GitHub's documented pattern for untrusted pull requests, in two files, and the rule that
makes it hold: the job that holds a write token never shares a machine, a user or a cache
with a job that ran the PR's code.
- stallscope-pr.yml, `on: pull_request` (`labeled` with the label; nothing else by
  default): builds and measures the PR's merge base and head on the self-hosted runner. A
  pull_request run from a fork gets a read-only GITHUB_TOKEN and no secrets, and this file
  asks for nothing more (`permissions: contents: read`); its builds, datasets and noise
  store go to a cache of its own (STALLSCOPE_CACHE), never the runner's. It uploads the
  reports and pr.json (PR number, head, merge base) as an artifact.
- stallscope-pr-comment.yml (collectors/pr/trusted_workflow.py): runs from the default
  branch on a GitHub-hosted runner with stallscope at a pinned commit; posts the comment
  from the artifact (workflow_run) and removes the label after a push (pull_request_target).
  It never checks out or runs the PR's code.
Third-party actions are pinned by commit (collectors/pr/actions.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from collectors.pr.actions import CHECKOUT, UPLOAD, annotate
from analysis.inputs.option_specs import argv_for, taken_by
from collectors.pr.config import PrConfig
from collectors.pr.pr_cache import RUNNER_CHECK
from collectors.pr.runners import RunsOn

PR_NAME = "stallscope PR"
COMMENT_NAME = "stallscope PR comment"
PR_FILE = "stallscope-pr.yml"
COMMENT_FILE = "stallscope-pr-comment.yml"
PR_PATH = f".github/workflows/{PR_FILE}"      # where GitHub reads it; the comment job checks it
ARTIFACT = "stallscope-pr"
BUILD_MINUTES = 60        # two server builds (a fresh cache per job by default) + setup
CASE_MINUTES = 45         # a case's dataset, reps and profile reps beside its --budget
MAX_MINUTES = 7200        # GitHub's limit for a job on a self-hosted runner: 5 days
HOSTED_RUNNER = "ubuntu-24.04"   # GitHub-hosted: a fresh VM per job, never the measuring runner


@dataclass(frozen=True)
class Setup:
    """How the workflows reach the runners and stallscope (the command-line options)."""
    stallscope_repo: str                   # OWNER/NAME: the trusted jobs check it out ...
    stallscope_ref: str                    # ... at this commit (40 hex digits: pinned) ...
    stallscope_branch: str = "main"        # ... which this branch of it (its default) holds
    label: str = "stallscope"
    runner_labels: tuple[str, ...] = ("self-hosted",)
    runner_group: str | None = None        # the measuring job's runner group (required to render it)
    setup_on_runner: bool = False          # measuring job: check out + `make setup` (else on PATH)
    measure_pushes: bool = False           # also measure pushes to a labelled same-repository PR
    comment_runner: str = HOSTED_RUNNER    # runs-on of the trusted jobs
    pr_cache: str | None = None            # kept between PR jobs (PR jobs only); None: fresh per job


class _Dumper(yaml.SafeDumper):
    """Shell scripts as YAML literal blocks (`run: |`), readable in the generated file."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar(
    "tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


def dump(doc: dict) -> str:
    return annotate(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=110, allow_unicode=True))


def report_dir(case: str) -> str:
    """The case's directory in the artifact (a case may be 'mset-50keys@value=100')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", case)


def timeout_minutes(cfg: PrConfig) -> int:
    return min(MAX_MINUTES, BUILD_MINUTES + len(cfg.cases) * (CASE_MINUTES + cfg.budget_minutes()))


def checkout_stallscope(s: Setup) -> dict:
    """stallscope's own repository at the pinned commit (never the PR's code)."""
    return {"name": "Check out stallscope at the pinned commit", "uses": CHECKOUT,
            "with": {"repository": s.stallscope_repo, "ref": s.stallscope_ref, "path": "stallscope",
                     "persist-credentials": False}}


# GitHub serves every commit of a fork network through each of its repositories: a commit
# pushed only to a fork of stallscope checks out as OWNER/stallscope@SHA. So the pinned
# commit must be one the default branch holds; checked with git alone, before anything of
# the checkout runs.
_REF_CHECK = (
    'if ! git -C stallscope fetch --quiet --no-tags origin "+refs/heads/$BRANCH:refs/remotes/origin/$BRANCH"; then\n'
    '  echo "::error::cannot fetch the branch $BRANCH of $STALLSCOPE_REPO to check the pinned commit against '
    '(--stallscope-branch: its default branch)"; exit 1\n'
    'fi\n'
    'if ! git -C stallscope merge-base --is-ancestor "$REF" "refs/remotes/origin/$BRANCH"; then\n'
    '  echo "::error::the pinned stallscope commit $REF is not on $BRANCH of $STALLSCOPE_REPO (a fork\'s commit '
    'can be fetched through the main repository): pin a commit of the default branch"; exit 1\n'
    'fi\n'
    'echo "stallscope $REF is on $BRANCH of $STALLSCOPE_REPO"\n')


def stallscope_steps(s: Setup) -> list[dict]:
    """The pinned stallscope checked out, then checked to be on its default branch."""
    return [checkout_stallscope(s),
            {"name": "The pinned stallscope commit is on its default branch (not only in a fork)",
             "env": {"STALLSCOPE_REPO": s.stallscope_repo, "REF": s.stallscope_ref, "BRANCH": s.stallscope_branch},
             "run": _REF_CHECK}]


def _setup_steps(s: Setup) -> list[dict]:
    """The measuring job's stallscope: a checkout of its own repository at the pinned commit
    (never the PR's), or the one installed on the runner (an ephemeral runner's image)."""
    if s.setup_on_runner:
        return [*stallscope_steps(s),
                {"name": "Set up stallscope (idempotent; fast on a prepared runner)",
                 "run": 'make -C stallscope setup\necho "$GITHUB_WORKSPACE/stallscope/.venv/bin" >> "$GITHUB_PATH"\n'}]
    return [{"name": "stallscope on this runner",
             "run": "command -v stallscope || { echo '::error::stallscope is not on the PATH of this runner: "
                    "run make setup in a stallscope checkout and add its .venv/bin to the PATH of the runner, "
                    "or regenerate with --setup-stallscope'; exit 1; }\n"}]


# --pr-cache: one directory per head repository (lower case, as GitHub compares names) and PR,
# never the runner's own cache (pr_cache.RUNNER_CHECK: resolved on the runner).
_PR_CACHE_SCRIPT = (
    'if ! [[ "$PR" =~ ^[0-9]+$ && "$HEAD_REPO" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] '
    '|| [[ "$HEAD_REPO" =~ (^|/)\\.\\.?(/|$) ]]; then\n'
    '  echo "::error::the event names no head repository OWNER/NAME and PR number to key the build cache by"\n'
    '  exit 1\n'
    'fi\n'
    + RUNNER_CHECK +
    'echo "STALLSCOPE_CACHE=$pr_cache/${HEAD_REPO,,}/pr-$PR" >> "$GITHUB_ENV"\n')


def _cache_step(s: Setup) -> dict:
    """STALLSCOPE_CACHE for the rest of the job (builds, ccache, datasets, the noise store:
    collectors/variants/builder.cache_dir): a directory no trusted job reads. A PR's code runs
    here, so whatever it leaves in a cache is its own; the runner's cache (what scheduled and
    by-hand runs build with) is never opened. RUNNER_TEMP is emptied at each job's start.
    --pr-cache DIR is kept between jobs, one DIR/OWNER/REPO/pr-N per head repository and PR:
    no PR's job is handed a build another PR's job made (the build key is public data, so a
    shared cache let fork PR A plant the build PR B would reuse). It keys; it does not wall
    off: the PR's code runs as the runner's user, who can write anywhere under DIR
    (docs/pr.md: only ephemeral runners isolate jobs)."""
    if s.pr_cache:
        return {"name": "Build cache of this PR's jobs only (trusted jobs never read it)",
                "env": {"PR_CACHE": s.pr_cache, "HEAD_REPO": "${{ github.event.pull_request.head.repo.full_name }}",
                        "PR": "${{ github.event.pull_request.number }}"},
                "run": _PR_CACHE_SCRIPT}
    return {"name": "A build cache for this job only (trusted jobs never read it)",
            "run": 'echo "STALLSCOPE_CACHE=$RUNNER_TEMP/stallscope-cache" >> "$GITHUB_ENV"\n'}


def _run_args(cfg: PrConfig) -> str:
    """The config's options as `stallscope run` arguments: its fields are the declared
    options' keys, a value kept as written ("2%", "30m") read as the option reads it."""
    values = {o.name: o.parse(v) if isinstance(v, str) else v
              for o in taken_by("pr") for v in [getattr(cfg, o.key)]}
    return " ".join(argv_for("pr", values))


def _case_step(case: str, cfg: PrConfig) -> dict:
    # Values from the event go through env, never into the script text (no injection);
    # the run's stdout ends with its run directory (progress goes to stderr).
    script = (
        'server="$GITHUB_WORKSPACE/server"\n'
        'set +e\n'
        f'stallscope run "$CASE" {_run_args(cfg)} --no-progress --out "$OUT/runs" \\\n'
        '  --variant "base=git:$server@$MERGE_BASE" --variant "cand=git:$server@$HEAD_SHA" > "$RUNNER_TEMP/run.out"\n'
        'rc=$?\n'
        'set -e\n'
        'run_dir=$(tail -n 1 "$RUNNER_TEMP/run.out")\n'
        'if [ ! -f "$run_dir/manifest.json" ]; then\n'
        '  echo "::error::stallscope run $CASE stopped (exit $rc) before writing a run directory"; exit 1\n'
        'fi\n'
        'stallscope compare "$run_dir" --out "$OUT/reports/$REPORT"\n'
        'if [ "$rc" -eq 1 ]; then echo "::warning::$CASE: some reps failed; the report uses the others"; '
        'elif [ "$rc" -ne 0 ]; then exit "$rc"; fi\n')
    return {"name": f"{case}: merge base vs head",
            "env": {"CASE": case, "REPORT": report_dir(case),
                    "MERGE_BASE": "${{ steps.commits.outputs.merge_base }}",
                    "HEAD_SHA": "${{ github.event.pull_request.head.sha }}"},
            "run": script}


def _trigger_if(s: Setup) -> str:
    """When the measuring job runs: the label was added (by someone with triage or write
    access); with --measure-pushes also a push to a labelled PR whose branch is in this
    repository (pushed by someone with write access), never a fork's push. This is a
    courtesy, not the gate: a fork's pull_request run uses the fork's copy of this file
    (docs/pr.md, "Required repository settings")."""
    labeled = f"(github.event.action == 'labeled' && github.event.label.name == '{s.label}')"
    if not s.measure_pushes:
        return labeled
    return (f"{labeled} || (github.event.action == 'synchronize' && "
            f"contains(github.event.pull_request.labels.*.name, '{s.label}') && "
            "github.event.pull_request.head.repo.full_name == github.repository)")


def _concurrency(s: Setup) -> dict:
    """One measurement per PR and label at a time, on the job: a run started by another
    label (every `labeled` event starts the workflow) is in another group, so it cancels
    nothing; the same label added again, or a measured push, replaces the running one."""
    label = f"github.event.action == 'labeled' && github.event.label.name || '{s.label}'"
    return {"group": "stallscope-pr-${{ github.event.pull_request.number }}-${{ " + label + " }}",
            "cancel-in-progress": True}


def _commits_step() -> dict:
    return {"name": "Merge base of the PR (base and head as of the event)", "id": "commits",
            "env": {"BASE_SHA": "${{ github.event.pull_request.base.sha }}",
                    "HEAD_SHA": "${{ github.event.pull_request.head.sha }}",
                    "PR": "${{ github.event.pull_request.number }}"},
            "run": ('merge_base=$(git -C server merge-base "$BASE_SHA" "$HEAD_SHA")\n'
                    'echo "merge_base=$merge_base" >> "$GITHUB_OUTPUT"\n'
                    'mkdir -p "$OUT/reports"\n'
                    "printf '{\"pr\": %d, \"head_sha\": \"%s\", \"merge_base\": \"%s\", \"base_sha\": \"%s\"}\\n' "
                    '"$PR" "$HEAD_SHA" "$merge_base" "$BASE_SHA" > "$OUT/pr.json"\n'
                    'echo "PR #$PR: measuring $HEAD_SHA against its merge base $merge_base"\n')}


def measuring_runner(s: Setup) -> RunsOn:
    """Where the measuring job runs: a runner of the group with every label (runners.py says
    why a group: labels alone are no wall)."""
    if not s.runner_group:
        raise ValueError("the measuring job needs a runner group (Setup.runner_group; --runner-group)")
    return RunsOn(s.runner_group, s.runner_labels)


def render_pr(cfg: PrConfig, s: Setup, config_path: str | None) -> str:
    steps = [{"name": "Check out the pull request (head, with history for the merge base)", "uses": CHECKOUT,
              "with": {"ref": "${{ github.event.pull_request.head.sha }}", "fetch-depth": 0,
                       "path": "server", "persist-credentials": False}},
             *_setup_steps(s), _cache_step(s), _commits_step(), *[_case_step(c, cfg) for c in cfg.cases],
             {"name": "Upload the reports and pr.json", "if": "always()", "uses": UPLOAD,
              "with": {"name": ARTIFACT, "path": "stallscope-out/reports/\nstallscope-out/pr.json\n",
                       "if-no-files-found": "ignore", "retention-days": 30}}]
    job = {"if": _trigger_if(s), "runs-on": measuring_runner(s).yaml(), "timeout-minutes": timeout_minutes(cfg),
           "concurrency": _concurrency(s),
           "env": {"OUT": "${{ github.workspace }}/stallscope-out"}, "steps": steps}
    doc = {"name": PR_NAME,
           "on": {"pull_request": {"types": ["labeled", "synchronize"] if s.measure_pushes else ["labeled"]}},
           # Read-only, no secrets: this job runs the PR's code (it builds and starts it).
           "permissions": {"contents": "read"},
           "jobs": {"measure": job}}
    pushes = ("# and pushes to a labelled PR from a branch of this repository" if s.measure_pushes else
              "# (a later push is measured when the label is added again)")
    header = (f"# Generated by `stallscope pr github{' --config ' + config_path if config_path else ''}`; "
              "regenerate after editing the config (docs/pr.md).\n"
              f"# Runs when the label '{s.label}' is added to a PR\n{pushes}: builds its merge base and\n"
              f"# head and measures {', '.join(cfg.cases)} on a self-hosted runner of the group '{s.runner_group}'.\n"
              "# It runs the PR's code: a read-only token, no secrets, a build cache of its own. The\n"
              f"# comment is posted by {COMMENT_FILE} on a GitHub-hosted runner. The label is not\n"
              "# the gate (a fork's run uses the fork's copy of this file): docs/pr.md lists the\n"
              "# repository settings that are (approval of outside collaborators' runs, a runner\n"
              "# group for this repository only and never the schedule's, ephemeral runners).\n")
    return header + dump(doc)
