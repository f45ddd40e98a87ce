"""Alert delivery: the Markdown summary (rendered by analysis.report.alert_md) posted as a
GitHub issue or pull-request comment (REST API: POST /repos/{owner}/{repo}/issues/{n}/comments;
a pull request is an issue for comments), sent to a generic webhook as JSON, or written to
a file. The GitHub token comes from a file or an environment variable, never the schedule."""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from collectors.schedule.model import Alert, ScheduleError

GITHUB_API_VERSION = "2022-11-28"
USER_AGENT = "stallscope-schedule"


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
    if alert.token_file:
        try:
            token = Path(alert.token_file).expanduser().read_text().strip()
        except OSError as e:
            raise ScheduleError(f"GitHub token file {alert.token_file}: {e.strerror}") from None
        if not token:
            raise ScheduleError(f"GitHub token file {alert.token_file} is empty")
        return token
    token = os.environ.get(alert.token_env, "").strip()
    if not token:
        raise ScheduleError(f"no GitHub token: set ${alert.token_env} or give token-file: in the alert "
                            "(a token with 'issues: write' / 'pull requests: write' on the repository)")
    return token


def github_comment(alert: Alert, markdown: str, timeout: float) -> Delivered:
    repo, _, number = alert.target.partition("#")
    url = f"{alert.api_url.rstrip('/')}/repos/{repo}/issues/{number}/comments"
    headers = {"Accept": "application/vnd.github+json",
               "Authorization": f"Bearer {github_token(alert)}",
               "X-GitHub-Api-Version": GITHUB_API_VERSION}
    status, body = _post(url, {"body": markdown}, headers, timeout)
    if status != 201:
        raise ScheduleError(f"GitHub answered {status} to POST {url}: {body[:300]}")
    try:
        where = json.loads(body).get("html_url") or url
    except ValueError:
        where = url
    return Delivered("github", where, status)


def webhook(url: str, payload: dict, timeout: float) -> Delivered:
    status, body = _post(url, payload, {}, timeout)
    if not 200 <= status < 300:
        raise ScheduleError(f"webhook {url} answered {status}: {body[:300]}")
    return Delivered("webhook", url, status)


def _post(url: str, payload: dict, headers: dict[str, str], timeout: float) -> tuple[int, str]:
    data = json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": USER_AGENT, **headers})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as e:
        raise ScheduleError(f"cannot reach {url}: {getattr(e, 'reason', e)}") from None
