"""The one way stallscope talks to GitHub's REST API (https://docs.github.com/en/rest):
issue comments (a pull request is an issue for comments), one pull request, its labels and
the token's own account, a repository, an organization's self-hosted runner groups with the
repositories each admits, and a repository's own runners (`stallscope pr check`), with the
documented headers (Accept: application/vnd.github+json,
Authorization: Bearer, X-GitHub-Api-Version: 2022-11-28). `stallscope pr comment` and the
schedule's alert delivery (collectors/schedule/deliver.py) both use it. It sends through
collectors/http_client.py (retries of what is safe to repeat; no write redirected, no token
sent to another origin). Standard library only: the PR workflow's comment job runs it with
nothing installed (docs/pr.md)."""
from __future__ import annotations

import json
import os
import re
from urllib.parse import quote, urljoin, urlsplit
from dataclasses import dataclass
from typing import Any, Iterator

from analysis.errors import UserError
from collectors.http_client import Reply, Unreachable, same_api, send

API_VERSION = "2022-11-28"
DEFAULT_API = "https://api.github.com"
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
# ... and for the reads of `stallscope pr check` ("REST API endpoints for self-hosted runner groups")
RUNNER_HINTS = {
    401: HINTS[401],
    403: "reading runner groups needs an organization owner's token, or that of a member with the "
         "'Manage organization runners and runner groups' permission: a classic token with the admin:org "
         "scope, or a fine-grained token with the organization permission 'Self-hosted runners' (read)",
    404: "no such organization or repository, or the token cannot see it; check --repo OWNER/REPO",
}
REPO_RUNNER_HINTS = {
    401: HINTS[401],
    403: "listing a repository's self-hosted runners needs admin on it: a classic token with the repo "
         "scope, or a fine-grained token with the repository permission 'Administration' (read)",
    404: RUNNER_HINTS[404],
}


class GitHubError(UserError):
    """A GitHub call that did not work, worded as one line with what to do."""


def _json(reply: Reply) -> Any:
    try:
        return json.loads(reply.text)
    except ValueError:
        raise GitHubError(f"GitHub answered {reply.status} with something that is not JSON: "
                          f"{reply.text[:200]!r}") from None


def message_of(reply: Reply) -> str:
    """The `message` of GitHub's error answer (its text when there is none)."""
    try:
        return str(json.loads(reply.text).get("message") or reply.text)
    except (ValueError, AttributeError):
        return reply.text


def _redirect_hint(url: str, reply: Reply) -> str:
    """What a redirect that was not followed pointed to, and why it was not followed."""
    location = (reply.headers.get("Location") if reply.headers is not None else None) or ""
    if not location:
        return "a redirect without a Location, not followed"
    target = urljoin(url, location)[:200]
    u = urlsplit(url)
    if same_api(target, f"{u.scheme}://{u.netloc}"):
        return (f"redirected to {target} (this API's origin); not followed: a write is not replayed at "
                "another URL (a renamed or moved repository? give its current --repo OWNER/REPO)")
    return (f"redirected to {target}, another origin; not followed with the token (is --api-url the "
            "API's own URL?)")


def _scopes(reply: Reply) -> str:
    """What a classic token's answer says of its scopes: " (the token's scopes: repo; this call
    takes: admin:org)", from X-OAuth-Scopes and X-Accepted-OAuth-Scopes; "" without them."""
    h = reply.headers
    has, takes = (h.get("X-OAuth-Scopes"), h.get("X-Accepted-OAuth-Scopes")) if h is not None else (None, None)
    if has is None or not takes:
        return ""
    return f" (the token's scopes: {has.strip()[:200] or 'none'}; this call takes: {takes.strip()[:200]})"


def explain(method: str, url: str, reply: Reply, hints: dict[int, str] = HINTS) -> str:
    """'GitHub answered 401 to GET URL: Bad credentials; the token is wrong ...'"""
    message = message_of(reply)
    hint = _redirect_hint(url, reply) if 300 <= reply.status < 400 else hints.get(reply.status)
    return (f"GitHub answered {reply.status} to {method} {url}: {str(message)[:300].strip()}"
            + (_scopes(reply) if reply.status == 403 else "") + (f"; {hint}" if hint else ""))


_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def next_link(link: str | None) -> str | None:
    """The rel="next" URL of a Link header (GitHub's pagination), or None on the last page."""
    for part in (link or "").split(","):
        m = _NEXT.search(part)
        if m:
            return m.group(1)
    return None


@dataclass(frozen=True)
class Author:
    """Who a comment is by, as the REST API's issue comment gives it: `user.login` and
    `user.type` ("User" or "Bot"; GitHub App logins end in "[bot]" and no account can take
    such a name)."""
    login: str
    type: str

    @staticmethod
    def named(login: str) -> "Author":
        return Author(login, "Bot" if login.endswith("[bot]") else "User")

    def wrote(self, comment: dict) -> bool:
        user = comment.get("user") or {}
        return user.get("login") == self.login and user.get("type") == self.type


# What a workflow's GITHUB_TOKEN posts as: the GitHub Actions app's bot account; what GET /user
# answers such a token (an installation token) with.
ACTIONS_BOT = Author("github-actions[bot]", "Bot")
INTEGRATION_403 = "Resource not accessible by integration"


class GitHub:
    """An authenticated client of one API base URL."""

    def __init__(self, token: str, api_url: str = DEFAULT_API, timeout: float = 30.0):
        self.api = api_url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
                        "X-GitHub-Api-Version": API_VERSION}

    def call(self, method: str, path_or_url: str, payload: Any = None, ok: tuple[int, ...] = (200,),
             hints: dict[int, str] = HINTS) -> Reply:
        url = path_or_url if "://" in path_or_url else self.api + path_or_url
        try:
            reply = send(method, url, payload, self.headers, self.timeout)
        except Unreachable as e:
            raise GitHubError(f"{e} (is the API URL right? --api-url or $GITHUB_API_URL, "
                              f"default {DEFAULT_API})") from None
        if reply.status not in ok:
            raise GitHubError(explain(method, url, reply, hints))
        return reply

    def issue_comments(self, repo: str, number: int) -> Iterator[dict]:
        """Every comment of issue/PR `number`, page after page, following the Link header's
        rel="next" URL (GitHub: "use the link header"; never built here) only when it is on
        this API's origin."""
        url = f"/repos/{repo}/issues/{number}/comments?per_page={PER_PAGE}&page=1"
        for page_url, page in self.pages(url, f"{repo}#{number}'s comments"):
            if not isinstance(page, list):
                raise GitHubError(f"GitHub answered GET {page_url} with {type(page).__name__}, not a list of comments")
            yield from page

    def pages(self, url: str | None, what: str, hints: dict[int, str] = HINTS) -> Iterator[tuple[str, Any]]:
        """(URL, answer) of each page of a list, following the Link header's rel="next" URL
        only while it is on this API's origin."""
        while url:
            reply = self.call("GET", url, hints=hints)
            yield url, _json(reply)
            url = next_link(reply.headers.get("Link"))
            if url is not None and not same_api(url, self.api):
                raise GitHubError(f"the Link header of {what} points the next page to "
                                  f"{url[:200]!r}, outside the API ({self.api}): not sending the token there")

    def listed(self, path: str, key: str, what: str, hints: dict[int, str]) -> list[dict]:
        """Every entry of a paginated list whose pages are `{"total_count": N, key: [...]}`."""
        out: list[dict] = []
        for url, page in self.pages(f"{path}?per_page={PER_PAGE}&page=1", what, hints):
            items = page.get(key) if isinstance(page, dict) else None
            if not isinstance(items, list):
                raise GitHubError(f"GitHub answered GET {url} without a list of {key}")
            out += [x for x in items if isinstance(x, dict)]
        return out

    def repository(self, repo: str) -> dict:
        """GET /repos/{repo}: its `owner.type`, `private`, `visibility`, `default_branch`."""
        doc = _json(self.call("GET", f"/repos/{repo}", hints=RUNNER_HINTS))
        if not isinstance(doc, dict):
            raise GitHubError(f"GitHub answered GET /repos/{repo} with {type(doc).__name__}, not a repository")
        return doc

    def runner_groups(self, org: str) -> list[dict]:
        """GET /orgs/{org}/actions/runner-groups ("List self-hosted runner groups for an
        organization"), every page."""
        return self.listed(f"/orgs/{org}/actions/runner-groups", "runner_groups", f"{org}'s runner groups",
                           RUNNER_HINTS)

    def group_repositories(self, org: str, group_id: int) -> list[dict]:
        """GET /orgs/{org}/actions/runner-groups/{id}/repositories ("List repository access to
        a self-hosted runner group in an organization"), every page."""
        return self.listed(f"/orgs/{org}/actions/runner-groups/{group_id}/repositories", "repositories",
                           f"runner group {group_id}'s repositories", RUNNER_HINTS)

    def repo_runners(self, repo: str) -> list[dict]:
        """GET /repos/{repo}/actions/runners ("List self-hosted runners for a repository")."""
        return self.listed(f"/repos/{repo}/actions/runners", "runners", f"{repo}'s runners", REPO_RUNNER_HINTS)

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        return _json(self.call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body}, ok=(201,)))

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        return _json(self.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body}))

    def pull(self, repo: str, number: int) -> dict:
        """GET /repos/{repo}/pulls/{n}: its `head.sha`, `head.repo.full_name`, `labels[].name`."""
        pr = _json(self.call("GET", f"/repos/{repo}/pulls/{number}"))
        if not isinstance(pr, dict):
            raise GitHubError(f"GitHub answered GET /repos/{repo}/pulls/{number} with {type(pr).__name__}, "
                              "not a pull request")
        return pr

    def remove_label(self, repo: str, number: int, label: str) -> None:
        """DELETE /repos/{repo}/issues/{n}/labels/{name} ("Remove a label from an issue"; a
        pull request is an issue for labels)."""
        self.call("DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}")

    def me(self) -> Author:
        """Who this token posts as: GET /user ("Get the authenticated user") for a personal
        or user token. An installation token cannot call it (403 "Resource not accessible by
        integration"); inside a workflow (GITHUB_ACTIONS=true) that is its GITHUB_TOKEN, whose
        comments are by github-actions[bot]. Any other 403 (a rate limit; another app's
        token outside Actions) is a GitHubError asking for --author: a wrong guess finds no
        comment of its own and posts a second one."""
        reply = self.call("GET", "/user", ok=(200, 403))
        if reply.status == 403:
            if message_of(reply) == INTEGRATION_403 and os.environ.get("GITHUB_ACTIONS") == "true":
                return ACTIONS_BOT
            raise GitHubError(f"GitHub answered 403 to GET {self.api}/user: {message_of(reply)[:300].strip()}; "
                              "which account this token posts as is not known (github-actions[bot] is assumed "
                              "only for that answer inside a workflow, GITHUB_ACTIONS=true): give --author LOGIN")
        user = _json(reply)
        login, kind = (user.get("login"), user.get("type")) if isinstance(user, dict) else (None, None)
        if not isinstance(login, str) or not login or kind not in ("User", "Bot"):
            raise GitHubError(f"GitHub answered GET /user without a login and type: {reply.text[:200]!r}")
        return Author(login, kind)


def pull_labels(pr: dict) -> list[str]:
    """The names of a pull request's labels (`labels[].name`)."""
    return [str(x.get("name")) for x in pr.get("labels") or [] if isinstance(x, dict)]


@dataclass(frozen=True)
class Posted:
    action: str        # created | updated
    id: int
    url: str           # the comment's html_url


def upsert_comment(gh: GitHub, repo: str, number: int, body: str, marker: str, author: Author) -> Posted:
    """Update our comment, or create it: one comment per pull request, however often it is
    posted. Ours is the first (oldest) comment that `author` wrote (the identity this token
    posts as, GitHub.me) and that starts with `marker`: anyone can write the marker into a
    comment of their own, and that comment is left alone."""
    found = next((c for c in gh.issue_comments(repo, number)
                  if author.wrote(c) and str(c.get("body") or "").startswith(marker)), None)
    if found is not None:
        c = gh.update_comment(repo, int(found["id"]), body)
        return Posted("updated", int(found["id"]), str(c.get("html_url") or ""))
    c = gh.create_comment(repo, number, body)
    return Posted("created", int(c.get("id") or 0), str(c.get("html_url") or ""))
