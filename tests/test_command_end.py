"""Every stallscope command ends through analysis/command_end.py (collectors through
collectors/command.py on top of it): one line "stallscope CMD: error: ..." and exit 2 for
bad input, 1 for "ran but something failed", 130 for Ctrl-C."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from analysis.command_end import Failed, UserError, end_command
from collectors.command import run_command
from collectors.host import procs
from collectors.variants.builder import BuildError
from tests.conftest import REPO


@pytest.mark.heavy
@pytest.mark.parametrize("args", [
    ["compare", "/nonexistent/run"],
    ["cases", "show", "no-such-case"],
    ["build", "x=debsrc:nginx"],
    ["schedule", "check", "/nonexistent/schedule.yaml"],
    ["funnel", "/nonexistent/a.txt", "--vs", "/nonexistent/b.txt"],
    ["tma", "/nonexistent/a.txt"],
    ["parca", "--start", "0", "--end", "30"],
    ["pr", "comment", "/nonexistent/run", "--repo", "o/r", "--pr", "1", "--dry-run"],
])
def test_bad_input_ends_every_command_the_same_way(args):
    env = {k: v for k, v in os.environ.items() if k not in ("STALLSCOPE_PARCA_URL", "STALLSCOPE_DEBUG")}
    r = subprocess.run([sys.executable, "-m", "collectors", *args], capture_output=True, text=True,
                       cwd=REPO, env={**env, "PYTHONPATH": str(REPO), "GITHUB_TOKEN": "x"}, timeout=60)
    prog = "stallscope " + (" ".join(args[:2]) if args[0] == "pr" else args[0])
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"{prog}: error: ") and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 or args[0] == "build"   # build adds its grammar


def test_the_statuses_and_their_lines(capsys, monkeypatch):
    monkeypatch.delenv("STALLSCOPE_DEBUG", raising=False)

    def fail(exc: BaseException):
        def body():
            raise exc
        return body
    assert end_command("stallscope x", lambda: None) == 0
    assert end_command("stallscope x", fail(UserError("--depth must be at least 1"))) == 2
    assert capsys.readouterr().err == "stallscope x: error: --depth must be at least 1\n"
    assert end_command("stallscope x", fail(Failed("make failed"))) == 1
    assert end_command("stallscope x", fail(BuildError("make: step 2 failed"))) == 1
    assert capsys.readouterr().err == ("stallscope x: error: make failed\n"
                                       "stallscope x: error: make: step 2 failed\n")
    assert end_command("stallscope x", fail(UserError("no perf", hint="apt-get install linux-perf"))) == 2
    assert capsys.readouterr().err == ("stallscope x: error: no perf\n"
                                       "stallscope x: hint: apt-get install linux-perf\n")
    assert end_command("stallscope x", fail(ValueError("bad number 'x'"))) == 2
    assert capsys.readouterr().err == "stallscope x: error: bad number 'x'\n"
    assert end_command("stallscope x", fail(ZeroDivisionError("division by zero"))) == 2
    assert capsys.readouterr().err == "stallscope x: error: ZeroDivisionError: division by zero\n"
    monkeypatch.setenv("STALLSCOPE_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        end_command("stallscope x", fail(ZeroDivisionError("division by zero")))


@pytest.fixture(autouse=True)
def python_handles_sigint():
    """Python's own SIGINT handler (KeyboardInterrupt) for each test, as an interactive
    process has: a suite started in the background (`make test &`, nohup) inherits SIGINT
    ignored, and Python then leaves it ignored (a fresh-clone run so read exit 0)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def ctrl_c() -> None:
    """A real SIGINT, as Ctrl-C sends it, raised while the body runs. Sent to the main thread:
    sent to the process, the kernel may hand it to another thread of this one (a test before
    left a server thread behind), and the main thread then sees it only after the body has
    returned. The sleep is where it lands at the latest."""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    time.sleep(10)


def test_ctrl_c_is_130_with_what_was_kept(capsys):
    """A real SIGINT to this process while the body runs (Python's default handler raises
    KeyboardInterrupt); the collecting commands' ending kills every child first."""
    assert end_command("stallscope compare", ctrl_c) == 130
    assert capsys.readouterr().err == "stallscope compare: interrupted\n"
    child = procs.spawn(["sleep", "30"])
    assert run_command("stallscope run", ctrl_c, interrupted="(finished reps are kept)") == 130
    assert child.poll() is not None and child not in procs.live()
    assert capsys.readouterr().err == "stallscope run: interrupted (finished reps are kept)\n"


def test_a_command_in_process_leaves_no_handler_and_no_pending_interrupt(capsys):
    """A command that installed the collectors' handlers and was interrupted: when it has
    ended, the process has its handlers back and no SIGINT recorded (the scheduler's next
    job, or the next test, would otherwise be 'interrupted' at its first checkpoint)."""
    before = signal.getsignal(signal.SIGINT)

    def body():
        procs.install_signal_handlers()
        ctrl_c()
    assert run_command("stallscope run", body) == 130
    assert signal.getsignal(signal.SIGINT) is before
    procs.raise_if_interrupted()                  # nothing pending: no Interrupted
    assert run_command("stallscope run", lambda: procs.raise_if_interrupted() or 0) == 0
