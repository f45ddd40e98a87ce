"""Parca query client against a local HTTP server answering with REAL recorded responses
(tests/data/fixtures/parca: pprof.json, top.json, window.txt from a real Parca server)."""
from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from analysis.inputs.host import HostFacts
from collectors.collector import RepContext
from commands import parca as parca_cli
from collectors.profilers.parca import client as parca_client
from collectors.profilers.parca import plugin as parca


class FakeParca:
    """127.0.0.1 HTTP server: routes path -> (status, body bytes); records every request."""

    def __init__(self, routes: dict[str, tuple[int, bytes]]):
        self.routes = routes
        self.requests: list[dict] = []
        owner = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                u = urllib.parse.urlsplit(self.path)
                owner.requests.append({"path": u.path, "query": urllib.parse.parse_qs(u.query),
                                       "raw": self.path, "headers": dict(self.headers)})
                status, body = owner.routes.get(u.path, (404, b'{"code":5,"message":"Not Found"}'))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def pdir(fixtures_dir) -> Path:
    return fixtures_dir / "parca"


@pytest.fixture(scope="module")
def window(pdir):
    return parca_client.read_window_file(pdir / "window.txt")


def test_window_file_and_rfc3339(window, tmp_path):
    t0, t1 = window
    assert parca_client.rfc3339(t0) == "2026-11-21T22:56:47Z"
    assert parca_client.rfc3339(t1) == "2026-11-21T22:57:17Z"
    assert (t1 - t0).total_seconds() == 30.0
    assert parca_client.rfc3339(t0.timestamp()) == "2026-11-21T22:56:47Z"
    bad = tmp_path / "w.txt"
    bad.write_text("T0=2026-11-21T22:56:47Z\nT1 2026\n")
    with pytest.raises(parca_client.ParcaError, match=r"w.txt:2: expected T0=<time> or T1=<time>"):
        parca_client.read_window_file(bad)


def test_selector_quotes_labels():
    q = parca_client.selector({"comm": "redis-server", "stallscope_variant": 'a"b'})
    assert q == 'parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server",stallscope_variant="a\\"b"}'


def test_pprof_query_request_and_saved_profile_costs(pdir, window, tmp_path):
    from analysis.profile.pprof import read_pprof
    from analysis.profile.stacks import function_costs
    body = (pdir / "pprof.json").read_bytes()
    with FakeParca({"/api/profiles/query": (200, body)}) as srv:
        client = parca_client.ParcaClient(srv.url, token="s3cret")
        q = parca_client.selector({"comm": "redis-server"})
        resp = client.query(q, *window, report="pprof")
        req = srv.requests[-1]
    assert req["path"] == "/api/profiles/query"
    assert req["query"] == {
        "mode": ["MODE_MERGE"],
        "merge.query": ['parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server"}'],
        "merge.start": ["2026-11-21T22:56:47Z"], "merge.end": ["2026-11-21T22:57:17Z"],
        "reportType": ["REPORT_TYPE_PPROF"]}
    assert req["headers"]["Authorization"] == "Bearer s3cret"
    # The real response says total "0" although the profile has samples (see module doc).
    assert resp["total"] == "0"
    data = parca_client.pprof_bytes(resp)
    assert data == (pdir / "redis.parca.pb.gz").read_bytes()
    out = tmp_path / "profile.pb.gz"
    out.write_bytes(data)
    costs = function_costs(read_pprof(out))
    assert costs["dictFind"].flat_share == pytest.approx(27.9, abs=0.05)  # percent
    assert costs["dictFind"].cum_share == pytest.approx(40.6, abs=0.05)


def test_top_report_figures_and_kernel_clamp(pdir, window):
    body = (pdir / "top.json").read_bytes()
    with FakeParca({"/api/profiles/query": (200, body)}) as srv:
        resp = parca_client.ParcaClient(srv.url).query(parca_client.selector({"comm": "redis-server"}), *window, "top")
        req = srv.requests[-1]
    assert req["query"]["reportType"] == ["REPORT_TYPE_TOP"]
    assert "Authorization" not in req["headers"]
    rep = parca_client.top_report(resp)
    assert rep.total_ns == 14_343_434_200
    assert len(rep.rows) == 170
    flat, cum = rep.share("dictFind")
    assert flat == pytest.approx(0.279, abs=0.001)
    assert cum == pytest.approx(0.406, abs=0.001)
    assert rep.rows[0].name == "dictFind" and rep.rows[0].flat_ns == 3_999_999_960
    clamped = [r for r in rep.rows if r.clamped]
    assert [(r.name, r.file, r.cum_ns) for r in clamped] == [
        ("dev_hard_start_xmit", "[kernel.kallsyms]", 14_343_434_200)]
    assert "cumulative 31797979480 ns > total 14343434200 ns" in rep.notes[0]


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_server_says_so():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(parca_client.ParcaError) as e:
        parca_client.ParcaClient(url, timeout_s=5).query("x{}", 0, 30)
    assert str(e.value) == (f"cannot reach Parca at {url}: connection refused; is the server "
                            f"running? set --parca-url (or STALLSCOPE_PARCA_URL)")


def test_http_500_body_and_types_error_shown(window, monkeypatch):
    monkeypatch.setattr("collectors.http_client.BACKOFF_S", (0, 0))
    err = b'{"code":3,"message":"failed to parse query: unknown profile type nope:x:y:z:w"}'
    with FakeParca({"/api/profiles/query": (500, err),
                    "/api/profiles/types": (503, b"upstream down")}) as srv:
        with pytest.raises(parca_client.ParcaError) as e:
            parca_client.ParcaClient(srv.url).query("nope:x:y:z:w{}", *window)
        paths = [r["path"] for r in srv.requests]
    msg = str(e.value)
    assert "HTTP 500: failed to parse query: unknown profile type nope:x:y:z:w" in msg
    assert "between 2026-11-21T22:56:47Z and 2026-11-21T22:57:17Z" in msg
    assert "Listing the profile types failed too" in msg and "HTTP 503: upstream down" in msg
    # a 500 is the server's answer; a 503 may pass: that GET is tried three times (http_client)
    assert paths == ["/api/profiles/query"] + ["/api/profiles/types"] * 3


def test_empty_window(window):
    # An empty top report: the real top.json's shape with no rows and total 0.
    empty = json.dumps({"top": {"list": [], "reported": 0, "total": "0", "unit": "nanoseconds"},
                        "total": "0", "filtered": "0"}).encode()
    with FakeParca({"/api/profiles/query": (200, empty)}) as srv:
        with pytest.raises(parca_client.ParcaError) as e:
            parca_client.ParcaClient(srv.url).query(parca_client.selector({"comm": "redis-server"}), *window, "top")
    assert str(e.value) == ('no samples for parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server"} '
                            "between 2026-11-21T22:56:47Z and 2026-11-21T22:57:17Z: is parca-agent "
                            "running and sending to this server?")


def test_collector_records_window_labels_and_saves_pprof(pdir, tmp_path, monkeypatch):
    body = (pdir / "pprof.json").read_bytes()
    ctx = RepContext(rep_dir=tmp_path / "base" / "1", window_s=1.0,
                     labels={"stallscope_variant": "base", "stallscope_case": "mset-50keys"})
    with FakeParca({"/api/profiles/query": (200, body)}) as srv:
        col = parca.ParcaProfileCollector(parca_client.ParcaClient(srv.url, token="tok"),
                                          labels={"stallscope_variant": "base"}, settle_s=0)
        col.start(ctx)
        assert col.stop(ctx).status == "pending"
        status = col.collect(ctx)
        req = srv.requests[-1]
    assert status.to_json() == {"status": "ok", "file": "profile.pb.gz",
                                "samples": parca_client.pprof_sample_count((pdir / "redis.parca.pb.gz").read_bytes())}
    assert status.samples > 0
    meta = json.loads((ctx.rep_dir / "parca.json").read_text())
    # Labels the agent attaches select; the rep's own labels are recorded only.
    assert meta["query"] == ('parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server",'
                             'stallscope_variant="base"}')
    assert req["query"]["merge.query"] == [meta["query"]]
    assert req["query"]["merge.start"] == [parca_client.rfc3339(meta["t0"])]
    assert meta["t0"] <= meta["t1"] and meta["status"] == "ok"
    assert meta["labels"] == ctx.labels
    assert (ctx.rep_dir / "profile.pb.gz").read_bytes() == (pdir / "redis.parca.pb.gz").read_bytes()


def test_collector_unreachable_is_unavailable_not_crash(tmp_path):
    ctx = RepContext(rep_dir=tmp_path, window_s=1.0)
    col = parca.ParcaProfileCollector(parca_client.ParcaClient(f"http://127.0.0.1:{_free_port()}"), settle_s=0)
    col.start(ctx)
    col.stop(ctx)
    st = col.collect(ctx)
    assert st.status == "unavailable" and "connection refused" in st.reason
    pf = col.preflight()
    assert not pf.available and "cannot reach Parca" in pf.reason


@pytest.mark.heavy
def test_cli_top_and_pprof(pdir, tmp_path, capsys):
    with FakeParca({"/api/profiles/query": (200, (pdir / "top.json").read_bytes())}) as srv:
        rc = parca_cli.main(["--parca-url", srv.url, "--window-file", str(pdir / "window.txt"),
                         "--report", "top", "--limit", "3"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "total 14.343 s CPU" in out
    assert "   4.000  27.9%      5.818  40.6%  dictFind" in out
    assert "clamped to the total" in err
    with FakeParca({"/api/profiles/query": (200, (pdir / "pprof.json").read_bytes())}) as srv:
        rc = parca_cli.main(["--parca-url", srv.url, "--start", "2026-11-21T22:56:47Z",
                         "--end", "2026-11-21T22:57:17Z", "--out", str(tmp_path / "p.pb.gz")])
    assert rc == 0
    assert (tmp_path / "p.pb.gz").read_bytes() == (pdir / "redis.parca.pb.gz").read_bytes()


def test_cli_without_url_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.delenv("STALLSCOPE_PARCA_URL", raising=False)
    assert parca_cli.main(["--start", "0", "--end", "30"]) == 2          # bad input
    assert "stallscope parca: error: no Parca URL: pass --parca-url URL or set STALLSCOPE_PARCA_URL" in capsys.readouterr().err


def test_runner_hooks(pdir, tmp_path, monkeypatch):
    import argparse
    from commands.options import add_run_flags
    from collectors.runner.options import RunOptions
    monkeypatch.delenv("STALLSCOPE_PARCA_TOKEN", raising=False)
    token = tmp_path / "token"
    token.write_text("filetok\n")
    p = argparse.ArgumentParser()
    add_run_flags(p, parca.RUN_FLAGS)
    with FakeParca({"/api/profiles/query": (200, (pdir / "pprof.json").read_bytes())}) as srv:
        a = p.parse_args(["--parca-url", srv.url, "--parca-token-file", str(token),
                          "--parca-label", "host=bench1", "--parca-settle", "0"])
        opts = RunOptions(profile="parca", extra=vars(a))
        assert parca.rep_collectors(RunOptions(profile="perf", extra=vars(a)), "profile") == []
        assert parca.rep_collectors(opts, "throughput") == []
        (c,) = parca.rep_collectors(opts, "profile")
        ctx = RepContext(rep_dir=tmp_path / "r", window_s=1)
        c.start(ctx)
        st = c.stop(ctx)
        req = srv.requests[-1]
    assert c.name == "parca" and st.status == "ok" and st.file == "profile.pb.gz"
    assert req["headers"]["Authorization"] == "Bearer filetok"
    assert req["query"]["merge.query"] == [
        'parca_agent:samples:count:cpu:nanoseconds:delta{comm="redis-server",host="bench1"}']
    sec = parca.manifest_sections(opts, HostFacts()).profiling
    assert sec.profiler == "parca" and sec.parca_url == srv.url
    assert "filetok" not in json.dumps(sec.to_json())


def test_token_comes_from_a_file_or_the_environment_never_a_flag(pdir, tmp_path, monkeypatch, capsys):
    """A token on the command line shows in `ps` (and in a run's manifest command): the
    parca and doctor commands take a file (--parca-token-file) or $STALLSCOPE_PARCA_TOKEN."""
    from commands import doctor
    for main in (parca_cli.main, doctor.main):
        with pytest.raises(SystemExit) as e:
            main(["--parca-token", "s3cret", "--parca-url", "http://127.0.0.1:1"])
        assert e.value.code == 2
        assert "unrecognized arguments: --parca-token" in capsys.readouterr().err
    token = tmp_path / "token"
    token.write_text("filetok\n")
    body = (pdir / "pprof.json").read_bytes()
    args = ["--start", "2026-11-21T22:56:47Z", "--end", "2026-11-21T22:57:17Z",
            "--out", str(tmp_path / "p.pb.gz")]
    monkeypatch.setenv("STALLSCOPE_PARCA_TOKEN", "envtok")
    with FakeParca({"/api/profiles/query": (200, body)}) as srv:
        assert parca_cli.main(["--parca-url", srv.url, *args]) == 0
        assert parca_cli.main(["--parca-url", srv.url, "--parca-token-file", str(token), *args]) == 0
        auth = [r["headers"]["Authorization"] for r in srv.requests]
    assert auth == ["Bearer envtok", "Bearer filetok"]     # the file wins over the environment
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert parca_cli.main(["--parca-url", "http://127.0.0.1:1", "--parca-token-file", str(empty), *args]) == 2
    assert f"{empty}: the Parca token file is empty" in capsys.readouterr().err
    missing = tmp_path / "nope"
    assert parca_cli.main(["--parca-url", "http://127.0.0.1:1", "--parca-token-file", str(missing), *args]) == 2
    assert f"{missing}: cannot read the Parca token file: No such file or directory" in capsys.readouterr().err
    # the input is fine but Parca is not there: it ran, and failed (exit 1, not 2)
    assert parca_cli.main(["--parca-url", "http://127.0.0.1:1", "--parca-token-file", str(token), *args]) == 1
    assert capsys.readouterr().err.startswith("stallscope parca: error: cannot reach Parca at http://127.0.0.1:1")
