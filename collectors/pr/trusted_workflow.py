"""stallscope-pr-comment.yml: the trusted half of the PR workflow (docs/pr.md). It runs from
the default branch, in the base repository's context, with a token that may write; so
every job of it runs on a GitHub-hosted runner (a fresh VM per job: nothing a PR's code left
on the measuring runner can reach it), runs stallscope from its own repository at a pinned
commit with the standard library only (`python3 -S`; nothing installed, no PATH lookup of
a `stallscope` someone could have replaced), and never checks out or runs the PR's code.

- comment (`workflow_run` of "stallscope PR", completed and successful, from the workflow
  file at .github/workflows/stallscope-pr.yml: a fork can add a workflow of the same name
  elsewhere): downloads the artifact and posts or updates the one comment, only on a PR
  from the head repository and branch the event measured (pr.json, which names the PR, is
  the PR's own claim), while its head is the measured commit and it carries the label. One
  run per PR branch at a
  time (its concurrency group), so two runs cannot both create the comment.
- unlabel (`pull_request_target`, `synchronize`): a push to a labelled PR removes the label,
  so the new code is measured only when a maintainer adds it again. With --measure-pushes,
  pushes to branches of this repository keep it (they are measured); forks' pushes do not.
  pull_request_target runs this file from the base branch with a write token: it reads the
  event, calls the API, and checks out nothing of the PR."""
from __future__ import annotations

from collectors.pr.actions import DOWNLOAD
from collectors.pr.workflow import (ARTIFACT, COMMENT_NAME, PR_NAME, PR_PATH, Setup, stallscope_steps,
                                    dump)

RUN = "python3 -S -m commands.pr_post"       # from the stallscope checkout: standard library only


def _comment_if() -> str:
    path = "github.event.workflow_run.path"
    return ("github.event_name == 'workflow_run' && github.event.workflow_run.event == 'pull_request' && "
            "github.event.workflow_run.conclusion == 'success' && "
            f"({path} == '{PR_PATH}' || startsWith({path}, '{PR_PATH}@'))")


def _comment_job(s: Setup) -> dict:
    post = {"name": "Post or update the one stallscope comment",
            "env": {"GITHUB_TOKEN": "${{ github.token }}", "REPO": "${{ github.repository }}",
                    "HEAD_SHA": "${{ github.event.workflow_run.head_sha }}",
                    "HEAD_REPO": "${{ github.event.workflow_run.head_repository.full_name }}",
                    "HEAD_BRANCH": "${{ github.event.workflow_run.head_branch }}",
                    "RUN_URL": "${{ github.event.workflow_run.html_url }}",
                    "ART": "${{ runner.temp }}/stallscope-pr", "LABEL": s.label},
            # pr.json comes from the PR's run and names the PR: a head SHA can be copied to
            # another PR, so the PR must also be from the head repository and branch this
            # trusted event measured, and (a run of this repository's branch) one of its
            # pull_requests ($GITHUB_EVENT_PATH); --require-head: its head is still the
            # commit measured; --author: the GITHUB_TOKEN posts as github-actions[bot].
            "run": ('cd "$GITHUB_WORKSPACE/stallscope"\n'
                    f'{RUN} comment "$ART/reports" --reports-only --repo "$REPO" --pr-json "$ART/pr.json" \\\n'
                    '  --commit "$HEAD_SHA" --require-head --require-label "$LABEL" \\\n'
                    '  --head-repo "$HEAD_REPO" --head-branch "$HEAD_BRANCH" --run-event "$GITHUB_EVENT_PATH" \\\n'
                    "  --author 'github-actions[bot]' --link \"$RUN_URL\"\n")}
    return {"if": _comment_if(), "runs-on": s.comment_runner, "timeout-minutes": 15,
            "permissions": {"actions": "read", "contents": "read", "pull-requests": "write"},
            "concurrency": {"group": "stallscope-pr-comment-${{ github.event.workflow_run.head_repository.full_name }}"
                                     "-${{ github.event.workflow_run.head_branch }}",
                            "cancel-in-progress": False},
            "steps": [*stallscope_steps(s),
                      {"name": "Download the reports (data only: nothing in the artifact is run)",
                       "uses": DOWNLOAD,
                       "with": {"name": ARTIFACT, "path": "${{ runner.temp }}/stallscope-pr",
                                "run-id": "${{ github.event.workflow_run.id }}",
                                "github-token": "${{ github.token }}"}},
                      post]}


def _unlabel_if(s: Setup) -> str:
    cond = ("github.event_name == 'pull_request_target' && "
            f"contains(github.event.pull_request.labels.*.name, '{s.label}')")
    if s.measure_pushes:      # a branch of this repository is measured on push: it keeps the label
        cond += " && github.event.pull_request.head.repo.full_name != github.repository"
    return cond


def _unlabel_job(s: Setup) -> dict:
    return {"if": _unlabel_if(s), "runs-on": s.comment_runner, "timeout-minutes": 5,
            "permissions": {"contents": "read", "pull-requests": "write"},
            "steps": [*stallscope_steps(s),
                      {"name": "Remove the label: the new push is measured when it is added again",
                       "env": {"GITHUB_TOKEN": "${{ github.token }}", "REPO": "${{ github.repository }}",
                               "PR": "${{ github.event.pull_request.number }}", "LABEL": s.label},
                       "run": ('cd "$GITHUB_WORKSPACE/stallscope"\n'
                               f'{RUN} unlabel --repo "$REPO" --pr "$PR" --label "$LABEL"\n')}]}


# zizmor (the tests run it on every generated workflow) calls both triggers "fundamentally
# insecure": each runs from the default branch with a token that may write, which is what
# this file needs and why its jobs never touch the PR's code. Each kept finding is ignored
# on its line with the reason, and docs/pr.md ("zizmor") says the same.
ZIZMOR_IGNORES = {
    "workflow_run": "the comment needs a write token, which a fork's pull_request run never has; this job "
                    "runs no PR code and reads the artifact as data",
    "pull_request_target": "removing the label after a push needs a write token; this job reads only the "
                           "event's number and labels and checks out nothing of the PR",
}


def _ignore_comments(text: str) -> str:
    for trigger, why in ZIZMOR_IGNORES.items():
        text = text.replace(f"\n  {trigger}:\n", f"\n  {trigger}: # zizmor: ignore[dangerous-triggers] {why}\n", 1)
    return text


def render_comment(s: Setup) -> str:
    doc = {"name": COMMENT_NAME,
           "on": {"workflow_run": {"workflows": [PR_NAME], "types": ["completed"]},
                  "pull_request_target": {"types": ["synchronize"]}},
           "permissions": {},          # each job asks for what it needs
           "jobs": {"comment": _comment_job(s), "unlabel": _unlabel_job(s)}}
    header = ("# Generated by `stallscope pr github` (docs/pr.md). Trusted jobs, from the default branch:\n"
              f"# 'comment' posts the report of a finished '{PR_NAME}' run as one PR comment (updated in\n"
              "# place later); 'unlabel' removes the label after a push, so new code is measured only\n"
              "# when a maintainer adds it again. Both hold a write token, so both run on a GitHub-hosted\n"
              "# runner with stallscope at a pinned commit, and neither checks out or runs the PR's code:\n"
              "# the artifact is read as data. Keep it that way. It takes effect on the default branch.\n")
    return header + _ignore_comments(dump(doc))
