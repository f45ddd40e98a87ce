"""Alert delivery against a local HTTP server that checks the requests against GitHub's
documented REST shape (POST /repos/{owner}/{repo}/issues/{issue_number}/comments, headers
Accept: application/vnd.github+json, Authorization: Bearer, X-GitHub-Api-Version, JSON body
{"body": ...}, answer 201 with the comment), a generic webhook, and a file."""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collectors.schedule.deliver import GITHUB_API_VERSION, deliver
from collectors.schedule.model import Alert, ScheduleError

TOKEN = "ghp_test_token_0123456789"
COMMENTS = re.compile(r"^/repos/(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)/issues/(?P<n>[0-9]+)/comments$")


class GitHubLike(BaseHTTPRequestHandler):
    """Answers as api.github.com does for 'Create an issue comment'; 4xx for anything else."""
    received: list[dict] = []

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        rec = {"path": self.path, "headers": self.headers, "raw": raw}  # case-insensitive
        type(self).received.append(rec)
        m = COMMENTS.match(self.path)
        if self.path == "/hook":
            return self._answer(204, b"")
        if not m:
            return self._answer(404, b'{"message": "Not Found"}')
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._answer(401, b'{"message": "Bad credentials"}')
        if self.headers.get("Accept") != "application/vnd.github+json" or \
                self.headers.get("X-GitHub-Api-Version") != "2022-11-28":
            return self._answer(415, b'{"message": "Unsupported media type or API version"}')
        try:
            body = json.loads(raw)
        except ValueError:
            return self._answer(400, b'{"message": "Problems parsing JSON"}')
        if set(body) != {"body"} or not isinstance(body["body"], str) or not body["body"]:
            return self._answer(422, b'{"message": "Validation Failed"}')
        url = f"https://github.com/{m['owner']}/{m['repo']}/issues/{m['n']}#issuecomment-1"
        self._answer(201, json.dumps({"id": 1, "html_url": url, "body": body["body"]}).encode())

    def _answer(self, code: int, body: bytes):
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def api():
    GitHubLike.received = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), GitHubLike)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


MD = "### stallscope: regression in throughput:MSET\n\n-7.9 % [-9.1, -6.6] ..."


def test_github_comment_has_the_documented_shape(api, tmp_path, monkeypatch):
    tok = tmp_path / "token"
    tok.write_text(TOKEN + "\n")
    a = Alert("github", "octo-org/redis#42", token_file=str(tok), api_url=api)
    d = deliver(a, MD, {})
    assert d.status == 201 and d.where == "https://github.com/octo-org/redis/issues/42#issuecomment-1"
    (req,) = GitHubLike.received
    assert req["path"] == "/repos/octo-org/redis/issues/42/comments"
    assert req["headers"]["X-GitHub-Api-Version"] == GITHUB_API_VERSION
    assert json.loads(req["raw"]) == {"body": MD}
    # token from the environment instead of a file
    monkeypatch.setenv("GH_ALERT_TOKEN", TOKEN)
    assert deliver(Alert("github", "octo-org/redis#7", token_env="GH_ALERT_TOKEN", api_url=api), MD, {}).status == 201


def test_github_errors_say_what_went_wrong(api, tmp_path, monkeypatch):
    monkeypatch.setenv("WRONG", "nope")
    with pytest.raises(ScheduleError, match="GitHub answered 401 .*Bad credentials"):
        deliver(Alert("github", "o/r#1", token_env="WRONG", api_url=api), MD, {})
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with pytest.raises(ScheduleError, match=r"no GitHub token: set \$GITHUB_TOKEN"):
        deliver(Alert("github", "o/r#1", api_url=api), MD, {})
    with pytest.raises(ScheduleError, match="cannot read the GitHub token file: No such file"):
        deliver(Alert("github", "o/r#1", token_file=str(tmp_path / "none"), api_url=api), MD, {})
    with pytest.raises(ScheduleError, match="cannot reach"):
        deliver(Alert("webhook", "http://127.0.0.1:9/hook"), MD, {}, timeout=5)


def test_webhook_gets_json_and_file_gets_markdown(api, tmp_path):
    d = deliver(Alert("webhook", f"{api}/hook"), MD, {"job": "mset", "changes": [{"series": "throughput:MSET"}]})
    assert d.status == 204
    (req,) = GitHubLike.received
    assert req["headers"]["Content-Type"] == "application/json"
    assert json.loads(req["raw"]) == {"job": "mset", "changes": [{"series": "throughput:MSET"}], "markdown": MD}
    out = tmp_path / "alerts" / "mset.md"
    assert deliver(Alert("file", str(out)), MD, {}).where == str(out)
    assert out.read_text() == MD
