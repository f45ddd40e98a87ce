"""`stallscope pr github`: the two GitHub Actions workflows of the pull-request workflow
(docs/pr.md), for a repository of the server (a Redis or Valkey fork).

GitHub's documented pattern for untrusted pull requests, in two files:
- stallscope-pr.yml, `on: pull_request` (labelled PRs only): builds and measures the PR's
  merge base and head on the self-hosted runner. A pull_request run from a fork gets a
  read-only GITHUB_TOKEN and no secrets, and this file asks for nothing more
  (`permissions: contents: read`), so PR code that runs here can write nowhere. It uploads
  the reports and pr.json (PR number, head, merge base) as an artifact.
- stallscope-pr-comment.yml, `on: workflow_run`: runs from the default branch in the base
  repository's context, with a token that may write (`pull-requests: write`); so it never
  checks out or runs the PR's code, only downloads the artifact (data) and posts or updates
  the one comment (`stallscope pr comment`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from collectors.pr.config import PrConfig

PR_NAME = "stallscope PR"
COMMENT_NAME = "stallscope PR comment"
PR_FILE = "stallscope-pr.yml"
COMMENT_FILE = "stallscope-pr-comment.yml"
ARTIFACT = "stallscope-pr"
CHECKOUT = "actions/checkout@v4"
UPLOAD = "actions/upload-artifact@v4"
DOWNLOAD = "actions/download-artifact@v4"
BUILD_MINUTES = 60        # two server builds (cached on a runner that built them before) + setup
CASE_MINUTES = 45         # a case's dataset, reps and profile reps beside its --budget
MAX_MINUTES = 7200        # GitHub's limit for a job on a self-hosted runner: 5 days


@dataclass(frozen=True)
class Setup:
    """How the workflows reach the runner and stallscope (the command-line options)."""
    label: str = "stallscope"
    runner_labels: tuple[str, ...] = ("self-hosted",)
    stallscope_repo: str | None = None     # OWNER/NAME: check out and `make setup`; None: on PATH
    stallscope_ref: str = "main"
    labeled_only: bool = False             # re-measure only when the label is added again


class _Dumper(yaml.SafeDumper):
    """Shell scripts as YAML literal blocks (`run: |`), readable in the generated file."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar(
    "tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


def _dump(doc: dict) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=110, allow_unicode=True)


def report_dir(case: str) -> str:
    """The case's directory in the artifact (a case may be 'mset-50keys@value=100')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", case)


def timeout_minutes(cfg: PrConfig) -> int:
    return min(MAX_MINUTES, BUILD_MINUTES + len(cfg.cases) * (CASE_MINUTES + cfg.budget_minutes()))


def _setup_steps(s: Setup) -> list[dict]:
    """stallscope itself: a checkout of its own repository (never the PR's), or the one
    installed on the runner."""
    if s.stallscope_repo:
        return [{"name": "Check out stallscope", "uses": CHECKOUT,
                 "with": {"repository": s.stallscope_repo, "ref": s.stallscope_ref, "path": "stallscope",
                          "persist-credentials": False}},
                {"name": "Set up stallscope (idempotent; fast on a prepared runner)",
                 "run": 'make -C stallscope setup\necho "$GITHUB_WORKSPACE/stallscope/.venv/bin" >> "$GITHUB_PATH"\n'}]
    return [{"name": "stallscope on this runner",
             "run": "command -v stallscope || { echo '::error::stallscope is not on the PATH of this runner: "
                    "run make setup in a stallscope checkout and add its .venv/bin to the PATH of the runner, "
                    "or regenerate with --stallscope-repo'; exit 1; }\n"}]


def _run_args(cfg: PrConfig) -> str:
    args = [f"--size {cfg.size}", {"paired": "--paired", "unpaired": "--unpaired"}.get(cfg.pairing, "")]
    if cfg.reps:
        args.append(f"--reps {cfg.reps}")
    if cfg.precision:
        args.append(f"--precision {cfg.precision}" + (f" --budget {cfg.budget}" if cfg.budget else ""))
    return " ".join(a for a in args if a)


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
    labeled = f"(github.event.action == 'labeled' && github.event.label.name == '{s.label}')"
    if s.labeled_only:
        return labeled
    return (f"{labeled} || (github.event.action == 'synchronize' && "
            f"contains(github.event.pull_request.labels.*.name, '{s.label}'))")


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


def render_pr(cfg: PrConfig, s: Setup, config_path: str | None) -> str:
    steps = [{"name": "Check out the pull request (head, with history for the merge base)", "uses": CHECKOUT,
              "with": {"ref": "${{ github.event.pull_request.head.sha }}", "fetch-depth": 0,
                       "path": "server", "persist-credentials": False}},
             *_setup_steps(s), _commits_step(), *[_case_step(c, cfg) for c in cfg.cases],
             {"name": "Upload the reports and pr.json", "if": "always()", "uses": UPLOAD,
              "with": {"name": ARTIFACT, "path": "stallscope-out/reports/\nstallscope-out/pr.json\n",
                       "if-no-files-found": "ignore", "retention-days": 30}}]
    job = {"if": _trigger_if(s), "runs-on": list(s.runner_labels), "timeout-minutes": timeout_minutes(cfg),
           "env": {"OUT": "${{ github.workspace }}/stallscope-out"}, "steps": steps}
    types = ["labeled"] if s.labeled_only else ["labeled", "synchronize"]
    doc = {"name": PR_NAME,
           "on": {"pull_request": {"types": types}},
           # Read-only, no secrets: this job runs the PR's code (it builds and starts it).
           "permissions": {"contents": "read"},
           # A new push supersedes the measurement of the previous one.
           "concurrency": {"group": "stallscope-pr-${{ github.event.pull_request.number }}",
                           "cancel-in-progress": True},
           "jobs": {"measure": job}}
    header = (f"# Generated by `stallscope pr github{' --config ' + config_path if config_path else ''}`; "
              "regenerate after editing the config (docs/pr.md).\n"
              f"# Runs when a PR carries the label '{s.label}': builds its merge base and head and measures\n"
              f"# {', '.join(cfg.cases)} on the self-hosted runner. It runs the PR's code, so it has a\n"
              "# read-only token and no secrets (a fork's pull_request run gets nothing more anyway); the\n"
              f"# comment is posted by {COMMENT_FILE} (workflow_run) from the uploaded artifact.\n")
    return header + _dump(doc)


def render_comment(s: Setup) -> str:
    steps = [*_setup_steps(s),
             {"name": "Download the reports (data only: nothing in the artifact is run)", "uses": DOWNLOAD,
              "with": {"name": ARTIFACT, "path": "${{ runner.temp }}/stallscope-pr",
                       "run-id": "${{ github.event.workflow_run.id }}", "github-token": "${{ github.token }}"}},
             {"name": "Post or update the one stallscope comment",
              "env": {"GITHUB_TOKEN": "${{ github.token }}", "REPO": "${{ github.repository }}",
                      "HEAD_SHA": "${{ github.event.workflow_run.head_sha }}",
                      "RUN_URL": "${{ github.event.workflow_run.html_url }}",
                      "ART": "${{ runner.temp }}/stallscope-pr"},
              # pr.json comes from the PR's run: --require-head checks that PR's head is the
              # commit this trusted event says was measured, so it cannot aim at another PR.
              "run": ('stallscope pr comment "$ART/reports" --repo "$REPO" --pr-json "$ART/pr.json" \\\n'
                      '  --commit "$HEAD_SHA" --require-head --link "$RUN_URL"\n')}]
    perms = {"pull-requests": "write", "actions": "read"}
    if s.stallscope_repo:
        perms["contents"] = "read"      # to check out stallscope's own repository
    job = {"if": ("github.event.workflow_run.event == 'pull_request' && "
                  "github.event.workflow_run.conclusion == 'success'"),
           "runs-on": list(s.runner_labels), "timeout-minutes": 15, "steps": steps}
    doc = {"name": COMMENT_NAME,
           "on": {"workflow_run": {"workflows": [PR_NAME], "types": ["completed"]}},
           "permissions": perms,
           "jobs": {"comment": job}}
    header = ("# Generated by `stallscope pr github` (docs/pr.md). Posts the report of a finished\n"
              f"# '{PR_NAME}' run as one PR comment, updated in place on later pushes. workflow_run runs\n"
              "# from the default branch in the base repository's context with a write token, so this\n"
              "# file must never check out or run the PR's code: it reads the artifact as data only.\n"
              "# It takes effect once it is on the default branch.\n")
    return header + _dump(doc)


def write(cfg: PrConfig, s: Setup, out_dir: Path, config_path: str | None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / PR_FILE, out_dir / COMMENT_FILE]
    paths[0].write_text(render_pr(cfg, s, config_path))
    paths[1].write_text(render_comment(s))
    return paths
