"""A local server that answers as api.github.com does for the calls stallscope makes, per
GitHub's REST documentation (API version 2022-11-28):

- GET  /repos/{owner}/{repo}/issues/{issue_number}/comments?per_page=&page=   (list, Link header)
- POST /repos/{owner}/{repo}/issues/{issue_number}/comments   {"body"} -> 201 + the comment
- PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}    {"body"} -> 200 + the comment
- GET  /repos/{owner}/{repo}/pulls/{pull_number}              -> the pull request (head.sha)

Every request must carry Authorization: Bearer <TOKEN>, Accept: application/vnd.github+json,
X-GitHub-Api-Version: 2022-11-28 and a User-Agent (GitHub refuses requests without one);
a wrong token gets 401 {"message": "Bad credentials"}, as GitHub answers."""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "ghs_local_test_token_0123456789"
DOCS = "https://docs.github.com/rest"
LIST = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/issues/(\d+)/comments$")
ONE = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/issues/comments/(\d+)$")
PULL = re.compile(r"^/repos/([\w.-]+)/([\w.-]+)/pulls/(\d+)$")


@dataclass
class State:
    comments: dict[tuple[str, int], list[dict]] = field(default_factory=dict)   # (owner/repo, n)
    heads: dict[tuple[str, int], str] = field(default_factory=dict)             # PR head SHAs
    requests: list[tuple[str, str]] = field(default_factory=list)               # (method, path?query)
    next_id: int = 1_000_000

    def add(self, repo: str, n: int, body: str, login: str) -> dict:
        self.next_id += 1
        c = {"id": self.next_id, "node_id": f"IC_{self.next_id}",
             "url": f"https://api.github.com/repos/{repo}/issues/comments/{self.next_id}",
             "html_url": f"https://github.com/{repo}/pull/{n}#issuecomment-{self.next_id}",
             "issue_url": f"https://api.github.com/repos/{repo}/issues/{n}",
             "body": body, "user": {"login": login, "id": 1, "type": "User"},
             "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
             "author_association": "MEMBER"}
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

    def _refused(self) -> bool:
        """GitHub's checks: the token, the media type and version, a User-Agent."""
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
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

    def do_GET(self):
        url = urlsplit(self.path)
        self.state.requests.append(("GET", self.path))
        if self._refused():
            return
        if m := PULL.match(url.path):
            head = self.state.heads.get((f"{m[1]}/{m[2]}", int(m[3])))
            if head is None:
                return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
            return self._reply(200, {"number": int(m[3]), "state": "open", "head": {"sha": head, "ref": "topic"},
                                     "base": {"sha": "0" * 40, "ref": "unstable"}})
        m = LIST.match(url.path)
        if not m:
            return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
        q = parse_qs(url.query)
        per_page, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
        if not 1 <= per_page <= 100:
            return self._reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
        repo, n = f"{m[1]}/{m[2]}", int(m[3])
        allc = self.state.comments.get((repo, n), [])
        last = max(1, -(-len(allc) // per_page))
        base = f"http://{self.headers['Host']}{url.path}?per_page={per_page}&page="
        links = ([f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"'] if page < last else []) \
            + ([f'<{base}1>; rel="first"', f'<{base}{page - 1}>; rel="prev"'] if page > 1 else [])
        self._reply(200, allc[(page - 1) * per_page: page * per_page],
                    {"Link": ", ".join(links)} if links else None)

    def do_POST(self):
        self.state.requests.append(("POST", self.path))
        if self._refused():
            return
        m = LIST.match(self.path)
        if not m:
            return self._reply(404, {"message": "Not Found", "documentation_url": DOCS})
        body = self._body()
        if body is None:
            return self._reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
        self._reply(201, self.state.add(f"{m[1]}/{m[2]}", int(m[3]), body, "github-actions[bot]"))

    def do_PATCH(self):
        self.state.requests.append(("PATCH", self.path))
        if self._refused():
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
