"""A token never reaches a message (issue 39, item 3). A token file of two lines used to go
into the Authorization header as read; http.client refused it with a ValueError quoting the
whole header ("Invalid header value b'Bearer ghp_...\\nsecond-line'") and the command printed
that. Now the token reader refuses anything in a token that cannot be part of one, naming
the file or variable, and the HTTP client neither sends a header value it cannot carry nor
lets http.client's text out. Checked on every path that reads a token (`stallscope pr
comment`, the schedule's GitHub alert, the Parca client) and on the client itself."""
from __future__ import annotations

import urllib.request

import pytest

from collectors import http_client
from collectors.http_client import HeaderRefused, RequestRefused, read_token, send
from collectors.profilers.parca.client import ParcaClient, ParcaError
from collectors.schedule import deliver
from collectors.schedule.model import Alert, ScheduleError
from commands import pr as pr_cli
from tests.test_http_client import serve

FIRST = "ghp_FirstLineOfTheToken0123456789abcdef"
SECOND = "second-line-XYZ987"


def chain(e: BaseException) -> list[BaseException]:
    """The exception and every one it was raised from or during."""
    out: list[BaseException] = []
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def leaks(e: BaseException, *secrets: str) -> list[str]:
    """Which of `secrets` the exception, or any in its chain, shows (str, repr or args)."""
    texts = [t for x in chain(e) for t in (str(x), repr(x), *map(repr, x.args))]
    return [s for s in secrets if any(s in t for t in texts)]


@pytest.fixture
def no_token_env(monkeypatch):
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL", "STALLSCOPE_PARCA_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_a_two_line_token_file_is_refused_without_showing_the_token(tmp_path, capsys, no_token_env):
    tok = tmp_path / "gh-token"
    tok.write_text(f"{FIRST}\n{SECOND}\n")
    src = tmp_path / "reports"
    src.mkdir()
    assert pr_cli.main(["comment", str(src), "--repo", "octo-org/redis", "--pr", "42", "--token-file", str(tok),
                        "--api-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert f"{tok}: the GitHub token file holds 2 lines" in err and "a token is one line" in err, err
    assert FIRST not in err and SECOND not in err and "Bearer" not in err
    with pytest.raises(http_client.UserError) as e:
        read_token(str(tok), (), "GitHub")
    assert str(tok) in str(e.value) and leaks(e.value, FIRST, SECOND) == []


@pytest.mark.parametrize("bad, said", [
    (f"{FIRST}\x07{SECOND}", "a control character (U+0007) at character 40 of"),
    (f"{FIRST} {SECOND}", "a space or tab at character 40"),
    (f"{FIRST}\r{SECOND}", "holds 2 lines"),
    (f"{FIRST}é{SECOND}", "a character outside ASCII at character 40"),
])
def test_a_token_with_a_control_character_is_refused_naming_the_variable(monkeypatch, capsys, tmp_path,
                                                                        no_token_env, bad, said):
    monkeypatch.setenv("GITHUB_TOKEN", bad)
    assert pr_cli.main(["comment", str(tmp_path), "--repo", "octo-org/redis", "--pr", "42",
                        "--api-url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "$GITHUB_TOKEN: the GitHub token " in err and said in err, err
    assert FIRST not in err and SECOND not in err
    tok = tmp_path / "t"
    tok.write_text(bad)
    with pytest.raises(ParcaError) as e:                     # the Parca client reads it alike
        ParcaClient.from_env("http://127.0.0.1:9", str(tok))
    assert str(e.value).startswith(f"{tok}: the Parca token file ") and leaks(e.value, FIRST, SECOND) == []


def test_the_schedules_github_alert_refuses_it_too(tmp_path, no_token_env):
    tok = tmp_path / "alert-token"
    tok.write_text(f"{FIRST}\n{SECOND}")
    alert = Alert("github", "octo-org/redis#7", token_file=str(tok), api_url="http://127.0.0.1:9")
    with pytest.raises(ScheduleError) as e:
        deliver.deliver(alert, "body", {})
    assert str(e.value).startswith(f"{tok}: the GitHub token file holds 2 lines")
    assert leaks(e.value, FIRST, SECOND) == []


def test_a_good_token_is_read_as_before(tmp_path, monkeypatch, no_token_env):
    tok = tmp_path / "t"
    tok.write_text(f"  {FIRST}\r\n")                    # the ends are stripped, as before
    assert read_token(str(tok), (), "GitHub") == FIRST
    monkeypatch.setenv("STALLSCOPE_PARCA_TOKEN", "eyJhbGciOi.eyJzdWIi.c2ln-_~+/==")   # a JWT's alphabet
    client = ParcaClient.from_env("http://127.0.0.1:9")
    assert client.token == "eyJhbGciOi.eyJzdWIi.c2ln-_~+/==" and "eyJ" not in repr(client)


def test_the_client_sends_no_header_it_cannot_carry_and_never_quotes_one():
    """Past the token reader (a caller that builds its own headers): the client refuses the
    header before sending, naming it, not its value; the server sees nothing."""
    with serve([(200, {})]) as (url, seen):
        for value in (f"Bearer {FIRST}\n{SECOND}", f"Bearer {FIRST}\x00", f"Bearer {FIRST}\u2028"):
            with pytest.raises(HeaderRefused) as e:
                send("GET", url + "/x", headers={"Authorization": value})
            assert "its Authorization header" in str(e.value) and leaks(e.value, FIRST, SECOND) == []
        assert seen == []
        assert send("GET", url + "/x", headers={"Authorization": f"Bearer {FIRST}"}).status == 200


def test_http_clients_own_error_is_replaced_and_not_kept_as_context():
    """The second wall, behind the check above: what http.client raises while writing the
    request quotes the header (shown here on the unwrapped call, so this test can fail);
    the client replaces it, and the new error does not carry it as its context."""
    def request():
        return urllib.request.Request("http://127.0.0.1:9/x", headers={"Authorization": f"Bearer {FIRST}\n{SECOND}"})

    with pytest.raises(ValueError) as raw:
        http_client._open(request(), 5)
    assert leaks(raw.value, FIRST) == [FIRST]                 # http.client's text: the token
    with pytest.raises(RequestRefused) as e:
        http_client._once(request(), 5)
    assert "the HTTP library refused it (ValueError" in str(e.value)
    assert leaks(e.value, FIRST, SECOND) == [] and e.value.__context__ is None
