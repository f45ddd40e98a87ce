"""A local server that answers as api.github.com does for the calls stallscope makes, per
GitHub's REST documentation (API version 2022-11-28):

- GET  /repos/{owner}/{repo}/issues/{issue_number}/comments?per_page=&page=   (list, Link header)
- POST /repos/{owner}/{repo}/issues/{issue_number}/comments   {"body"} -> 201 + the comment
- PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}    {"body"} -> 200 + the comment
- GET  /repos/{owner}/{repo}/pulls/{pull_number}              -> the pull request (head.sha, head.ref,
                                                                 head.repo.full_name, labels[].name)
- DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name} -> 200 + the labels left;
                                                                 404 when it does not carry it
- GET  /user                                                   -> the token's account; 403 "Resource
                                                                 not accessible by integration" for
                                                                 an installation token (GITHUB_TOKEN)
- GET  /repos/{owner}/{repo}                                   -> the repository (owner.type, private,
                                                                 visibility, default_branch)
- GET  /orgs/{org}/actions/runner-groups?per_page=&page=       -> {total_count, runner_groups} (Link)
- GET  /orgs/{org}/actions/runner-groups/{id}/repositories     -> {total_count, repositories} (Link)
- GET  /repos/{owner}/{repo}/actions/runners?per_page=&page=   -> {total_count, runners} (Link)

The runner endpoints answer only ADMIN_TOKEN, a classic token with the admin:org scope (an
organization owner's); any other token gets 403 "Must have admin rights to Repository." with
X-OAuth-Scopes and X-Accepted-OAuth-Scopes, as GitHub answers a token without the scope.

Every request must carry Authorization: Bearer <token>, Accept: application/vnd.github+json,
X-GitHub-Api-Version: 2022-11-28 and a User-Agent (GitHub refuses requests without one);
a wrong token gets 401 {"message": "Bad credentials"}, as GitHub answers. Two tokens work:
TOKEN is a workflow's GITHUB_TOKEN (its comments are by github-actions[bot], type Bot, with
`performed_via_github_app` the GitHub Actions app), USER_TOKEN a personal token of the user
octo-perf. A comment's `user` is a simple user (`login`, `id`, `type`), as the REST API's
issue comment has it."""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

TOKEN = "ghs_local_test_token_0123456789"            # an installation token, as GITHUB_TOKEN is
USER_TOKEN = "github_pat_local_test_0123456789"      # a personal token of USERS[USER_TOKEN]
ADMIN_TOKEN = "ghp_local_org_owner_0123456789"       # a classic token of an organization owner, admin:org
DOCS = "https://docs.github.com/rest"
ACTIONS_APP = {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"}
USERS = {TOKEN: {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"},
         USER_TOKEN: {"login": "octo-perf", "id": 2, "type": "User"},
         ADMIN_TOKEN: {"login": "octo-owner", "id": 3, "type": "User"}}
LIST = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/issues/(\d+)/comments$")
ONE = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/issues/comments/(\d+)$")
PULL = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/pulls/(\d+)$")
LABEL = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/issues/(\d+)/labels/([^/]+)$")
REPO_PATH = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)$")
GROUPS = re.compile(r"^/orgs/([\w.-]+)/actions/runner-groups$")
GROUP_REPOS = re.compile(r"^/orgs/([\w.-]+)/actions/runner-groups/(\d+)/repositories$")
REPO_RUNNERS = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/actions/runners$")


@dataclass
class State:
    comments: dict[tuple[str, int], list[dict]] = field(default_factory=dict)   # (owner/repo, n)
    heads: dict[tuple[str, int], str] = field(default_factory=dict)             # PR head SHAs
    labels: dict[tuple[str, int], list[str]] = field(default_factory=dict)      # PR labels
    forks: dict[tuple[str, int], str] = field(default_factory=dict)             # head repo, if a fork
    refs: dict[tuple[str, int], str] = field(default_factory=dict)              # head branch, if not "topic"
    requests: list[tuple[str, str]] = field(default_factory=list)               # (method, path?query)
    next_origin: str | None = None     # Link rel="next" to this origin instead (a hostile answer)
    redirect_to: str | None = None     # answer a comment list with 307 to this origin instead
    user_forbidden: str | None = None  # answer GET /user with 403 and this message, whatever the token
    redirect_writes: tuple[int, str] | None = None   # answer POST and PATCH with (status, Location)
    next_id: int = 1_000_000
    repos: dict[str, dict] = field(default_factory=dict)          # owner/repo -> GET /repos/{owner}/{repo}
    groups: dict[str, list[dict]] = field(default_factory=dict)   # org -> its runner groups
    group_repos: dict[int, list[str]] = field(default_factory=dict)   # group id -> owner/repo it admits
    runners: dict[str, list[dict]] = field(default_factory=dict)  # owner/repo -> its own runners

    def repo(self, full: str, private: bool = False, org: bool = True, default_branch: str = "main") -> dict:
        owner = full.split("/")[0]
        self.repos[full] = {"id": len(self.repos) + 1, "name": full.split("/")[1], "full_name": full,
                            "private": private, "visibility": "private" if private else "public",
                            "owner": {"login": owner, "type": "Organization" if org else "User"},
                            "default_branch": default_branch, "fork": False}
        return self.repos[full]

    def group(self, org: str, name: str, visibility: str = "selected", repos: tuple[str, ...] = (),
              public: bool = False, workflows: tuple[str, ...] | None = None, default: bool = False) -> dict:
        """A runner group as the REST API shows it: `restricted_to_workflows` when `workflows`
        is given (its `selected_workflows`), `selected_repositories_url` when selected."""
        gid = sum(len(g) for g in self.groups.values()) + (1 if default else 2)
        g = {"id": gid, "name": name, "visibility": visibility, "default": default,
             "runners_url": f"https://api.github.com/orgs/{org}/actions/runner-groups/{gid}/runners",
             "inherited": False, "allows_public_repositories": public,
             "restricted_to_workflows": workflows is not None, "selected_workflows": list(workflows or []),
             "workflow_restrictions_read_only": False}
        if visibility == "selected":
            g["selected_repositories_url"] = f"https://api.github.com/orgs/{org}/actions/runner-groups/{gid}/repositories"
        self.groups.setdefault(org, []).append(g)
        self.group_repos[gid] = list(repos)
        return g

    def add(self, repo: str, n: int, body: str, login: str, kind: str = "User") -> dict:
        self.next_id += 1
        bot = login == "github-actions[bot]" and kind == "Bot"
        c = {"id": self.next_id, "node_id": f"IC_{self.next_id}",
             "url": f"https://api.github.com/repos/{repo}/issues/comments/{self.next_id}",
             "html_url": f"https://github.com/{repo}/pull/{n}#issuecomment-{self.next_id}",
             "issue_url": f"https://api.github.com/repos/{repo}/issues/{n}",
             "body": body, "user": {"login": login, "id": 41898282 if bot else 1, "type": kind},
             "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
             "author_association": "NONE" if bot else "MEMBER",
             "performed_via_github_app": ACTIONS_APP if bot else None}
        self.comments.setdefault((repo, n), []).append(c)
        return c


class Handler(BaseHTTPRequestHandler):
    state: State

    def _reply(self, code: int, doc, headers: dict[str, str] | None = None):
        raw = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _user(self) -> dict:
        return USERS[self.headers["Authorization"].removeprefix("Bearer ")]

    def _refused(self) -> bool:
        """GitHub's checks: the token, the media type and version, a User-Agent."""
        if self.headers.get("Authorization") not in {f"Bearer {t}" for t in USERS}:
            self._reply(401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"})
        elif self.headers.get("Accept") != "application/vnd.github+json" \
                or self.headers.get("X-GitHub-Api-Version") != "2022-11-28":
            self._reply(400, {"message": "Unsupported media type or API version", "documentation_url": DOCS})
        elif not self.headers.get("User-Agent"):
            self._reply(403, {"message": "Request forbidden by administrative rules."})
        else:
            return False
        return True

    def _body(self) -> str | None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Type") != "application/json":
            return None
        try:
            doc = json.loads(raw)
        except ValueError:
            return None
        ok = isinstance(doc, dict) and set(doc) == {"body"} and isinstance(doc["body"], str)
        return doc["body"] if ok and 0 < len(doc["body"]) <= 65536 else None

    def _page(self, url, items: list, key: str | None = None):
        """One page of a list as GitHub gives it: per_page (at most 100) and page from the
        query, the Link header's next, last, first and prev; `key`: the list inside
        {"total_count": N, key: [...]}."""
        q = parse_qs(url.query)
        per_page, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
        if not 1 <= per_page <= 100:
            return self._reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
        last = max(1, -(-len(items) // per_page))
        base = f"{self.state.next_origin or 'http://' + self.headers['Host']}{url.path}?per_page={per_page}&page="
        links = ([f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"'] if page < last else []) \
            + ([f'<{base}1>; rel="first"', f'<{base}{page - 1}>; rel="prev"'] if page > 1 else [])
        part = items[(page - 1) * per_page: page * per_page]
        self._reply(200, part if key is None else {"total_count": len(items), key: part},
                    {"Link": ", ".join(links)} if links else None)

    def _runners(self, url) -> bool:
        """The repository and runner endpoints; True when this was one of them."""
        if m := REPO_PATH.match(url.path):
            repo = self.state.repos.get(f"{m[1]}/{m[2]}")
            if repo is None:
                self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
            else:
                self._reply(200, repo)
            return True
        m = GROUPS.match(url.path) or GROUP_REPOS.match(url.path) or REPO_RUNNERS.match(url.path)
        if not m:
            return False
        if self.headers["Authorization"] != f"Bearer {ADMIN_TOKEN}":
            scopes = {"X-OAuth-Scopes": "repo, read:org", "X-Accepted-OAuth-Scopes": "admin:org"}
            self._reply(403, {"message": "Must have admin rights to Repository.", "status": "403",
                              "documentation_url": DOCS + "/actions/self-hosted-runner-groups"}, scopes)
        elif m.re is GROUPS:
            self._page(url, self.state.groups.get(m[1], []), "runner_groups")
        elif m.re is GROUP_REPOS:
            names = self.state.group_repos.get(int(m[2]), [])
            self._page(url, [self.state.repos.get(n) or {"full_name": n, "private": False} for n in names],
                       "repositories")
        else:
            self._page(url, self.state.runners.get(f"{m[1]}/{m[2]}", []), "runners")
        return True

    def do_GET(self):
        url = urlsplit(self.path)
        self.state.requests.append(("GET", self.path))
        if self._refused() or self._runners(url):
            return
        if url.path == "/user":
            if self.state.user_forbidden:          # e.g. a rate limit, or a token without the user scope
                return self._reply(403, {"message": self.state.user_forbidden, "documentation_url": DOCS})
            if self._user()["type"] == "Bot":
                return self._reply(403, {"message": "Resource not accessible by integration", "status": "403",
                                         "documentation_url": DOCS + "/users/users#get-the-authenticated-user"})
            return self._reply(200, dict(self._user()))
        if m := PULL.match(url.path):
            key = (f"{m[1]}/{m[2]}", int(m[3]))
            if key not in self.state.heads:
                return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
            head_repo = self.state.forks.get(key, key[0])
            return self._reply(200, {"number": key[1], "state": "open",
                                     "head": {"sha": self.state.heads[key], "ref": self.state.refs.get(key, "topic"),
                                              "repo": {"full_name": head_repo}},
                                     "base": {"sha": "0" * 40, "ref": "unstable", "repo": {"full_name": key[0]}},
                                     "labels": [{"id": i, "name": x, "color": "ededed"}
                                                for i, x in enumerate(self.state.labels.get(key, []))]})
        m = LIST.match(url.path)
        if not m:
            return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
        if self.state.redirect_to:
            return self._reply(307, {"message": "Temporary Redirect"},
                               {"Location": self.state.redirect_to + self.path})
        q = parse_qs(url.query)
        per_page, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
        if not 1 <= per_page <= 100:
            return self._reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
        repo, n = f"{m[1]}/{m[2]}", int(m[3])
        allc = self.state.comments.get((repo, n), [])
        last = max(1, -(-len(allc) // per_page))
        base = f"{self.state.next_origin or 'http://' + self.headers['Host']}{url.path}?per_page={per_page}&page="
        links = ([f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"'] if page < last else []) \
            + ([f'<{base}1>; rel="first"', f'<{base}{page - 1}>; rel="prev"'] if page > 1 else [])
        self._reply(200, allc[(page - 1) * per_page: page * per_page],
                    {"Link": ", ".join(links)} if links else None)

    def _redirected(self) -> bool:
        """A write answered with a redirect (a moved repository answers 301, as GitHub does)."""
        if not self.state.redirect_writes:
            return False
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        code, location = self.state.redirect_writes
        self._reply(code, {"message": "Moved Permanently", "url": location, "documentation_url": DOCS},
                    {"Location": location})
        return True

    def do_POST(self):
        self.state.requests.append(("POST", self.path))
        if self._refused() or self._redirected():
            return
        m = LIST.match(self.path)
        if not m:
            return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
        body = self._body()
        if body is None:
            return self._reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
        self._reply(201, self.state.add(f"{m[1]}/{m[2]}", int(m[3]), body, self._user()["login"],
                                        self._user()["type"]))

    def do_DELETE(self):
        self.state.requests.append(("DELETE", self.path))
        if self._refused():
            return
        m = LABEL.match(self.path)
        labels = self.state.labels.get((f"{m[1]}/{m[2]}", int(m[3])), []) if m else []
        if not m or unquote(m[4]) not in labels:
            return self._reply(404, {"message": "Label does not exist", "documentation_url": DOCS})
        labels.remove(unquote(m[4]))
        self._reply(200, [{"name": x} for x in labels])

    def do_PATCH(self):
        self.state.requests.append(("PATCH", self.path))
        if self._refused() or self._redirected():
            return
        m = ONE.match(self.path)
        found = [c for (repo, _), cs in self.state.comments.items() for c in cs
                 if m and repo == f"{m[1]}/{m[2]}" and c["id"] == int(m[3])]
        if not found:
            return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
        body = self._body()
        if body is None:
            return self._reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
        found[0].update(body=body, updated_at="2026-01-02T00:00:00Z")
        self._reply(200, found[0])

    def log_message(self, *a):
        pass


def serve():
    """(base URL, state) of a running server; a generator for a pytest fixture."""
    state = State()
    handler = type("GitHubLike", (Handler,), {"state": state})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", state
    finally:
        srv.shutdown()
        srv.server_close()
