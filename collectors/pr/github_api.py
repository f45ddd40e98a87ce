"""The one way stallscope talks to GitHub's REST API (https://docs.github.com/en/rest):
issue comments (a pull request is an issue for comments) and one pull request, with the
documented headers (Accept: application/vnd.github+json, Authorization: Bearer,
X-GitHub-Api-Version: 2022-11-28). `stallscope pr comment` and the schedule's alert
delivery (collectors/schedule/deliver.py) both use it. stdlib urllib: no dependency."""
from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any, Iterator

API_VERSION = "2022-11-28"
DEFAULT_API = "https://api.github.com"
USER_AGENT = "stallscope"
PER_PAGE = 100            # the most GitHub lists in one page

# What a status means for a comment call, and what the user can do about it.
HINTS = {
    401: "the token is wrong, expired or revoked; give a valid one (--token-file or $GITHUB_TOKEN)",
    403: "the token may not write here (it needs 'pull requests: write' or 'issues: write' on the "
         "repository; a workflow from a fork gets a read-only token) or the rate limit is spent",
    404: "no such repository, issue or comment, or the token cannot see a private repository; "
         "check --repo OWNER/REPO and --pr N",
    422: "GitHub refused the content (validation failed); the body may be empty or too long",
}


class GitHubError(Exception):
    """A GitHub call that did not work, worded as one line with what to do."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Message
    text: str

    def json(self) -> Any:
        try:
            return json.loads(self.text)
        except ValueError:
            raise GitHubError(f"GitHub answered {self.status} with something that is not JSON: "
                              f"{self.text[:200]!r}") from None


def send(method: str, url: str, payload: Any = None, headers: dict[str, str] | None = None,
         timeout: float = 30.0) -> Reply:
    """One HTTP request with a JSON body (when `payload` is given); any status is returned,
    a connection that fails raises GitHubError ("cannot reach ...")."""
    data = None if payload is None else json.dumps(payload).encode()
    hdrs = {"User-Agent": USER_AGENT, **({"Content-Type": "application/json"} if data is not None else {}),
            **(headers or {})}
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Reply(resp.status, resp.headers, resp.read().decode(errors="replace"))
    except urllib.error.HTTPError as e:
        return Reply(e.code, e.headers, e.read().decode(errors="replace"))
    except (urllib.error.URLError, OSError) as e:
        raise GitHubError(f"cannot reach {url}: {getattr(e, 'reason', e)}") from None


def explain(method: str, url: str, reply: Reply) -> str:
    """'GitHub answered 401 to GET URL: Bad credentials; the token is wrong ...'"""
    try:
        message = json.loads(reply.text).get("message") or reply.text
    except (ValueError, AttributeError):
        message = reply.text
    hint = HINTS.get(reply.status)
    return (f"GitHub answered {reply.status} to {method} {url}: {str(message)[:300].strip()}"
            + (f"; {hint}" if hint else ""))


def read_token(token_file: str | None, env_names: tuple[str, ...]) -> str | None:
    """The token from `token_file` (GitHubError if unreadable or empty), else the first
    non-empty environment variable of `env_names`, else None."""
    if token_file:
        try:
            token = Path(token_file).expanduser().read_text().strip()
        except OSError as e:
            raise GitHubError(f"GitHub token file {token_file}: {e.strerror}") from None
        if not token:
            raise GitHubError(f"GitHub token file {token_file} is empty")
        return token
    for name in env_names:
        token = os.environ.get(name, "").strip()
        if token:
            return token
    return None


_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def next_link(link: str | None) -> str | None:
    """The rel="next" URL of a Link header (GitHub's pagination), or None on the last page."""
    for part in (link or "").split(","):
        m = _NEXT.search(part)
        if m:
            return m.group(1)
    return None


class GitHub:
    """An authenticated client of one API base URL."""

    def __init__(self, token: str, api_url: str = DEFAULT_API, timeout: float = 30.0):
        self.api = api_url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
                        "X-GitHub-Api-Version": API_VERSION}

    def call(self, method: str, path_or_url: str, payload: Any = None, ok: tuple[int, ...] = (200,)) -> Reply:
        url = path_or_url if "://" in path_or_url else self.api + path_or_url
        try:
            reply = send(method, url, payload, self.headers, self.timeout)
        except GitHubError as e:
            raise GitHubError(f"{e} (is the API URL right? --api-url or $GITHUB_API_URL, "
                              f"default {DEFAULT_API})") from None
        if reply.status not in ok:
            raise GitHubError(explain(method, url, reply))
        return reply

    def issue_comments(self, repo: str, number: int) -> Iterator[dict]:
        """Every comment of issue/PR `number`, page after page (Link: rel="next")."""
        url: str | None = f"/repos/{repo}/issues/{number}/comments?per_page={PER_PAGE}&page=1"
        while url:
            reply = self.call("GET", url)
            page = reply.json()
            if not isinstance(page, list):
                raise GitHubError(f"GitHub answered GET {url} with {type(page).__name__}, not a list of comments")
            yield from page
            url = next_link(reply.headers.get("Link"))

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        return self.call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body}, ok=(201,)).json()

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        return self.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body}).json()

    def pull(self, repo: str, number: int) -> dict:
        return self.call("GET", f"/repos/{repo}/pulls/{number}").json()


@dataclass(frozen=True)
class Posted:
    action: str        # created | updated
    id: int
    url: str           # the comment's html_url


def upsert_comment(gh: GitHub, repo: str, number: int, body: str, marker: str) -> Posted:
    """Update the comment whose body holds `marker` (the first one, oldest first), or
    create it: one comment per pull request, however often it is posted."""
    found = next((c for c in gh.issue_comments(repo, number) if marker in (c.get("body") or "")), None)
    if found is not None:
        c = gh.update_comment(repo, int(found["id"]), body)
        return Posted("updated", int(found["id"]), str(c.get("html_url") or ""))
    c = gh.create_comment(repo, number, body)
    return Posted("created", int(c.get("id") or 0), str(c.get("html_url") or ""))
