"""Alert delivery: the Markdown summary (rendered by analysis.history.alert_md) posted as a
GitHub issue or pull-request comment (REST API: POST /repos/{owner}/{repo}/issues/{n}/comments;
a pull request is an issue for comments), sent to a generic webhook as JSON, or written to
a file. The GitHub token comes from a file or an environment variable, never the schedule
(collectors/http_client.py reads it; the webhook is sent through that module too)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collectors.http_client import Unreachable, read_token, send
from collectors.pr.github_api import API_VERSION as GITHUB_API_VERSION  # noqa: F401 (the header it sends)
from collectors.pr.github_api import GitHub, GitHubError
from collectors.schedule.model import Alert, ScheduleError


@dataclass(frozen=True)
class Delivered:
    kind: str
    where: str                 # the comment's html_url, the webhook URL, or the file path
    status: int | None = None  # HTTP status


def deliver(alert: Alert, markdown: str, payload: dict, timeout: float = 30.0) -> Delivered:
    if alert.kind == "github":
        return github_comment(alert, markdown, timeout)
    if alert.kind == "webhook":
        return webhook(alert.target, {**payload, "markdown": markdown}, timeout)
    path = Path(alert.target)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown)
    return Delivered("file", str(path))


def github_token(alert: Alert) -> str:
    token = read_token(alert.token_file, (alert.token_env,), "GitHub", ScheduleError)
    if not token:
        raise ScheduleError(f"no GitHub token: set ${alert.token_env} or give token-file: in the alert "
                            "(a token with 'issues: write' / 'pull requests: write' on the repository)")
    return token


def github_comment(alert: Alert, markdown: str, timeout: float) -> Delivered:
    """A new comment each time (an alert is an event; `stallscope pr comment` keeps one)."""
    repo, _, number = alert.target.partition("#")
    try:
        c = GitHub(github_token(alert), alert.api_url, timeout).create_comment(repo, int(number), markdown)
    except GitHubError as e:
        raise ScheduleError(str(e)) from None
    return Delivered("github", str(c.get("html_url") or alert.target), 201)


def webhook(url: str, payload: dict, timeout: float) -> Delivered:
    try:
        reply = send("POST", url, payload, {}, timeout)
    except Unreachable as e:
        raise ScheduleError(str(e)) from None
    if not 200 <= reply.status < 300:
        raise ScheduleError(f"webhook {url} answered {reply.status}: {reply.text[:300]}")
    return Delivered("webhook", url, reply.status)
