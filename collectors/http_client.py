"""The one HTTP client and the one token reader: the GitHub REST client
(collectors/pr/github_api.py), the Parca query client (collectors/profilers/parca/client.py)
and the schedule's webhook delivery (collectors/schedule/deliver.py) all send through here.

Built on the standard library's urllib, not a third-party client: the PR workflow's comment
job runs `python3 -S` from a pinned checkout with nothing installed (docs/pr.md), and it
posts through this module. What it adds to urllib:

- Retries of what is safe to repeat: a GET or HEAD answered 429, 502, 503 or 504, or whose
  connection was reset, is sent again after BACKOFF_S (or the answer's Retry-After, up to
  RETRY_AFTER_MAX_S). A POST, PATCH or DELETE is sent once: a comment whose answer was lost
  may have been made, and a second POST would make it twice. A refused connection or a
  timeout is not retried either (nobody listening, or a slow server: the user's error
  message should not wait).
- The token stays home: a redirect is followed for a GET or HEAD only, and not with an
  Authorization header to another origin (urllib copies it to the new request); a write
  is never redirected (urllib would replay a POST as a GET, dropping its body). Such a
  redirect is returned as its 3xx reply for the caller to explain.
- Every status comes back as a Reply (the caller words it); a connection that fails raises
  Unreachable, whose message never holds a header (no token in a log).
- No header value reaches a message: a value with a line break or another control character
  is refused before anything is sent (HeaderRefused, naming the header, never its value),
  and whatever http.client raises while sending (its ValueError quotes the whole header:
  "Invalid header value b'Bearer ghp_...'") is replaced by RequestRefused, raised outside
  the handler so that not even the exception's context holds it.

`read_token` is the one token reader: a file (whole content, ends stripped) or else the
first non-empty environment variable of a list; never a command-line word (ps shows those).
A token is one word of printable ASCII (RFC 6750's b64token is a subset): anything else
inside it (a second line, a space, a control character) is an error that names the file or
the variable and where in the token the character is, never the token.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from analysis.errors import Failed, StallscopeError, UserError

USER_AGENT = "stallscope"
RETRY_STATUSES = (429, 502, 503, 504)
IDEMPOTENT = ("GET", "HEAD")
BACKOFF_S = (0.5, 2.0)        # the waits before the second and third try of a GET
RETRY_AFTER_MAX_S = 10.0      # a longer Retry-After is not waited for: the reply is returned
# The largest reply read: GitHub's pages are kilobytes and a Parca profile of a rep a few
# megabytes; a server that streams without end must not fill the memory of a job
MAX_BODY_BYTES = 256 * 1024 * 1024


class Unreachable(Failed):
    """A request that got no HTTP answer (refused, reset, timed out, a bad host name);
    callers word it with what to check."""

    def __init__(self, url: str, reason: str, timed_out: bool = False):
        super().__init__(f"cannot reach {shown(url)}: {reason}")
        self.url, self.reason, self.timed_out = url, reason, timed_out


def shown(url: str) -> str:
    """A URL as a message may quote it: without `user:password@` (a token may ride there)."""
    u = urlsplit(url)
    return u._replace(netloc=u.netloc.rpartition("@")[2]).geturl() if "@" in u.netloc else url


class HeaderRefused(UserError):
    """A header whose value cannot be sent (a line break or another control character, or a
    character outside Latin-1): refused before any byte is sent; the message names the
    header, never its value (an Authorization header holds a token)."""

    def __init__(self, url: str, name: str):
        super().__init__(f"not sending the request to {shown(url)}: its {name} header holds a line break, a control "
                         "character or a character HTTP cannot carry (the value is not shown: it may be a token)")


class RequestRefused(UserError):
    """http.client refused to send a request (a ValueError or UnicodeError while writing
    it). Its own text is not kept: it quotes the header it refused, token and all."""

    def __init__(self, url: str, kind: str):
        super().__init__(f"not sending the request to {shown(url)}: the HTTP library refused it ({kind}; its "
                         "message is not shown, as it may quote a header that holds a token)")


class ReplyTooLarge(Failed):
    """A reply longer than MAX_BODY_BYTES: not read further."""

    def __init__(self, url: str):
        super().__init__(f"{url}: the reply is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB; "
                         "not read further (is this the service meant?)")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Message
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


def same_api(url: str, api: str) -> bool:
    """Whether `url` is on the API's own origin (scheme, host and port) and under its path
    (GitHub Enterprise Server serves the API under /api/v3). The token goes only there: a
    Link header or a redirect is data from the answer, and a URL elsewhere would get it."""
    try:
        u, a = urlsplit(url), urlsplit(api)
        ports = [p.port or {"http": 80, "https": 443}.get(p.scheme) for p in (u, a)]
    except ValueError:                      # a port that is not a number
        return False
    return (u.scheme, (u.hostname or "").lower(), ports[0]) == (a.scheme, (a.hostname or "").lower(), ports[1]) \
        and (u.path.rstrip("/") + "/").startswith(a.path.rstrip("/") + "/")


class _TokenStaysHome(urllib.request.HTTPRedirectHandler):
    """Redirects of a GET as urllib follows them, except one that would carry the
    Authorization header to another origin; and no redirect of a write. Those are refused
    and their status returned."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        u = urlsplit(req.full_url)
        if req.get_method() not in IDEMPOTENT:
            raise urllib.error.HTTPError(req.full_url, code, f"{msg}: a {req.get_method()} is not redirected",
                                         headers, fp)
        if req.has_header("Authorization") and not same_api(newurl, f"{u.scheme}://{u.netloc}"):
            raise urllib.error.HTTPError(newurl, code, f"{msg}: not following it with the token to another "
                                         f"origin ({newurl[:200]})", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_TokenStaysHome())


def send(method: str, url: str, payload: Any = None, headers: dict[str, str] | None = None,
         timeout: float = 30.0) -> Reply:
    """One HTTP request (with a JSON body when `payload` is given), retried as the module
    says; any status is returned, no answer raises Unreachable."""
    data = None if payload is None else json.dumps(payload).encode()
    hdrs = {"User-Agent": USER_AGENT, **({"Content-Type": "application/json"} if data is not None else {}),
            **(headers or {})}
    for name, value in hdrs.items():
        if not _sendable(value):
            raise HeaderRefused(url, name)
    waits = BACKOFF_S if method.upper() in IDEMPOTENT else ()
    for attempt in range(len(waits) + 1):
        last = attempt == len(waits)
        try:
            reply = _once(urllib.request.Request(url, data=data, method=method, headers=hdrs), timeout)
        except ConnectionResetError as e:     # http.client.RemoteDisconnected too
            if last:
                raise Unreachable(url, _reason(e)) from None
            time.sleep(waits[attempt])
            continue
        wait = None if last or reply.status not in RETRY_STATUSES else _wait(reply, waits[attempt])
        if wait is None:
            return reply
        time.sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _sendable(value: str) -> bool:
    """Whether a header value is one line of Latin-1 without control characters (what
    http.client sends without raising; a tab is allowed inside a field value)."""
    return all(c == "\t" or (" " <= c <= "\xff" and c != "\x7f" and not "\x80" <= c <= "\x9f") for c in value)


def _once(req: urllib.request.Request, timeout: float) -> Reply:
    refused = None
    try:
        return _open(req, timeout)
    except (ValueError, UnicodeError) as e:
        refused = type(e).__name__        # its text may quote a header value: not kept
    # raised here, outside the handler: the new error's __context__ is not http.client's
    raise RequestRefused(req.full_url, refused)


def _open(req: urllib.request.Request, timeout: float) -> Reply:
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return Reply(resp.status, resp.headers, _body(resp, req.full_url))
    except urllib.error.HTTPError as e:
        return Reply(e.code, e.headers, _body(e, req.full_url))
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionResetError):
            raise e.reason from None
        raise Unreachable(req.full_url, _reason(e.reason), isinstance(e.reason, TimeoutError)) from None
    except ConnectionResetError:
        raise                               # send() decides whether to try again
    except TimeoutError:
        raise Unreachable(req.full_url, f"no answer within {timeout:g} s", True) from None
    except OSError as e:
        raise Unreachable(req.full_url, _reason(e)) from None


def _body(resp: Any, url: str) -> bytes:
    body = resp.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise ReplyTooLarge(url)
    return body


def _reason(e: BaseException | str) -> str:
    """'connection refused', not '[Errno 111] Connection refused'."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror.lower()
    return str(e) or type(e).__name__


def _wait(reply: Reply, backoff: float) -> float | None:
    """How long to wait before trying again (None: do not: the server asks for longer)."""
    after = (reply.headers.get("Retry-After") if reply.headers is not None else None) or ""
    if not after.strip().isdigit():
        return backoff
    return float(after) if float(after) <= RETRY_AFTER_MAX_S else None


def token_problem(token: str) -> str | None:
    """What in `token` cannot be part of a bearer token, worded without the token (its
    position and kind only), or None. A token is printable ASCII without spaces: RFC 6750's
    b64token is a subset, and GitHub's and Parca's tokens are of it."""
    for i, c in enumerate(token):
        if "!" <= c <= "~":
            continue
        where = f"at character {i + 1} of {len(token)}"
        if c in "\r\n":
            lines = len(token.splitlines())
            return f"holds {lines} lines (a line break {where}); a token is one line"
        if c.isspace():
            return f"holds a space or tab {where}; a token has none"
        if not c.isascii():
            return f"holds a character outside ASCII {where}"
        return f"holds a control character (U+{ord(c):04X}) {where}"
    return None


def read_token(token_file: str | os.PathLike | None, env_names: tuple[str, ...], what: str,
               error: type[StallscopeError] = UserError) -> str | None:
    """The token in `token_file` (ends stripped; `error` if it cannot be read, is empty or
    is not one token), else the first non-empty environment variable of `env_names`
    (checked alike), else None. `what` names whose token it is in the errors ("GitHub",
    "Parca"); no error quotes the token."""
    if token_file:
        p = Path(token_file).expanduser()
        try:
            token = p.read_text().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise error(f"{token_file}: cannot read the {what} token file: "
                        f"{getattr(e, 'strerror', None) or 'not text'}") from None
        if not token:
            raise error(f"{token_file}: the {what} token file is empty; put the token in it")
        problem = token_problem(token)
        if problem:
            raise error(f"{token_file}: the {what} token file {problem}; put the token alone in it "
                        "(the token is not shown)")
        return token
    for name in env_names:
        token = os.environ.get(name, "").strip()
        if token:
            problem = token_problem(token)
            if problem:
                raise error(f"${name}: the {what} token {problem}; set it to the token alone (not shown)")
            return token
    return None
