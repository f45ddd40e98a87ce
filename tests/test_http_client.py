"""collectors/http_client.py: the one HTTP client (GitHub, Parca, webhooks) and token reader.
What may be repeated is retried, a write never; the token never leaves its origin."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from analysis.errors import UserError
from collectors import http_client
from collectors.http_client import Unreachable, read_token, send


@contextmanager
def serve(answers: list):
    """A local server answering each request with the next (status, headers) of `answers`
    (the last one again when they run out; "reset": close the connection without an
    answer). Yields (base URL, the requests seen as (method, path, Authorization))."""
    seen: list[tuple[str, str, str | None]] = []

    class H(BaseHTTPRequestHandler):
        def _any(self):
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer = answers[min(len(seen), len(answers)) - 1]
            if answer == "reset":
                self.close_connection = True
                return
            status, headers = answer
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
        do_GET = do_POST = do_PATCH = _any  # noqa: N815 (http.server API)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(autouse=True)
def no_waits(monkeypatch):
    monkeypatch.setattr(http_client, "BACKOFF_S", (0, 0))


@pytest.mark.heavy
def test_a_get_answered_503_or_reset_is_tried_again():
    with serve([(503, {}), "reset", (200, {})]) as (url, seen):
        assert send("GET", url + "/x").status == 200
    assert [s[0] for s in seen] == ["GET"] * 3
    with serve([(502, {})]) as (url, seen):
        assert send("GET", url + "/x").status == 502          # three tries, then the answer
    assert len(seen) == 3


@pytest.mark.heavy
def test_a_write_is_sent_once():
    """A POST whose answer was a 503 or lost may have been done: a second one would post a
    comment twice."""
    with serve([(503, {}), (201, {})]) as (url, seen):
        assert send("POST", url + "/c", {"body": "x"}).status == 503
    assert len(seen) == 1
    with serve(["reset", (201, {})]) as (url, seen):
        with pytest.raises(Unreachable, match="cannot reach"):
            send("PATCH", url + "/c", {"body": "x"})
    assert len(seen) == 1


@pytest.mark.heavy
def test_retry_after_is_waited_when_short_and_not_when_long(monkeypatch):
    waits = []
    monkeypatch.setattr(http_client.time, "sleep", waits.append)
    with serve([(429, {"Retry-After": "3"}), (200, {})]) as (url, _):
        assert send("GET", url).status == 200
    assert waits == [3.0]
    with serve([(429, {"Retry-After": "3600"}), (200, {})]) as (url, seen):
        assert send("GET", url).status == 429                  # the caller says "rate limit"
    assert len(seen) == 1 and waits == [3.0]


@pytest.mark.heavy
def test_a_redirect_keeps_the_token_home_and_a_write_in_place():
    with serve([(200, {})]) as (other, seen_other):
        with serve([(302, {"Location": other + "/elsewhere"})]) as (url, seen):
            r = send("GET", url + "/a", headers={"Authorization": "Bearer s3cret"})
            assert r.status == 302 and seen_other == []        # not followed with the token
            assert send("GET", url + "/a").status == 200        # no token: followed
            assert seen_other == [("GET", "/elsewhere", None)]
            assert send("POST", url + "/a", {"x": 1}).status == 302
            assert len(seen_other) == 1                          # a write is never replayed


def test_no_answer_is_unreachable_without_the_headers():
    with serve([(200, {})]) as (url, _):
        pass                                                     # closed: nobody listens now
    with pytest.raises(Unreachable) as e:
        send("GET", url + "/x", headers={"Authorization": "Bearer s3cret"})
    assert "connection refused" in str(e.value) and "s3cret" not in str(e.value)
    assert not e.value.timed_out


def test_one_token_reader(tmp_path, monkeypatch):
    monkeypatch.delenv("A_TOKEN", raising=False)
    monkeypatch.setenv("B_TOKEN", " tok-b\n")
    assert read_token(None, ("A_TOKEN", "B_TOKEN"), "GitHub") == "tok-b"
    f = tmp_path / "t"
    f.write_text("tok-file\n")
    assert read_token(str(f), ("B_TOKEN",), "GitHub") == "tok-file"      # the file wins
    f.write_text("\n")
    with pytest.raises(UserError, match=f"^{f}: the Parca token file is empty"):
        read_token(str(f), (), "Parca")
    monkeypatch.delenv("B_TOKEN")
    assert read_token(None, ("A_TOKEN", "B_TOKEN"), "GitHub") is None


def test_a_reply_longer_than_the_cap_is_not_read_further(monkeypatch):
    monkeypatch.setattr(http_client, "MAX_BODY_BYTES", 1)      # the server answers 2 bytes
    with serve([(200, {}), (404, {})]) as (url, _):
        with pytest.raises(http_client.ReplyTooLarge, match="larger than"):
            send("GET", url + "/big")
        monkeypatch.setattr(http_client, "MAX_BODY_BYTES", 2)  # exactly the cap: read whole
        assert send("GET", url + "/ok").body == b"{}"
