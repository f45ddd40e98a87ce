"""Child processes that never outlive the run.

Every process a collector starts (server, load generator, perf) goes through `spawn()`:
- it gets its own session/process group, so killing the group also kills whatever it
  forked (perf's `sleep` workload, redis' background children);
- it gets PR_SET_PDEATHSIG=SIGKILL, so it dies even when Python itself is SIGKILLed and
  no cleanup code runs;
- it is tracked, so `kill_all()` (called on SIGINT/SIGTERM via `install_signal_handlers`
  and at exit) can take every group down within seconds.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, Sequence

from analysis.errors import UserError

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)

_live: dict[int, subprocess.Popen] = {}
_lock = threading.Lock()


class Interrupted(BaseException):
    """SIGINT/SIGTERM arrived; a BaseException so `except Exception` cannot swallow it."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


class ToolNotFound(UserError):
    """A binary the run needs is missing; the message says which and how to get it."""


def _child_setup(parent_pid: int, cpus: Sequence[int] | None):
    def setup() -> None:  # runs in the child between fork and exec: keep it tiny
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died before prctl took effect; then nobody would reap us.
        if os.getppid() != parent_pid:
            os._exit(1)
        if cpus:
            os.sched_setaffinity(0, set(cpus))
    return setup


def spawn(argv: Sequence[str], *, stdout: IO | int | None = subprocess.DEVNULL,
          stderr: IO | int | None = subprocess.DEVNULL, stdin: IO | int | None = subprocess.DEVNULL,
          cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
          cpus: Sequence[int] | None = None) -> subprocess.Popen:
    """Start argv in a new session, pinned to `cpus` (if given), tracked for cleanup."""
    try:
        p = subprocess.Popen(list(map(str, argv)), stdout=stdout, stderr=stderr, stdin=stdin,
                             cwd=cwd, env=env, start_new_session=True,
                             preexec_fn=_child_setup(os.getpid(), cpus))
    except FileNotFoundError:
        raise ToolNotFound(f"{argv[0]}: not found; install it or fix the path") from None
    except PermissionError:
        raise ToolNotFound(f"{argv[0]}: not executable (chmod +x, or check the path)") from None
    with _lock:
        _live[p.pid] = p
    return p


def pin_threads(pid: int, cpus: Sequence[int]) -> None:
    """Move every thread of a running process onto `cpus` (threads it starts later inherit
    the mask of the thread that starts them)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), set(cpus))
        except ProcessLookupError:
            pass        # a thread that just ended


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(p: subprocess.Popen, timeout_s: float = 5.0, first: int = signal.SIGTERM) -> int | None:
    """Stop a spawned process and its group: `first` signal, then SIGKILL after timeout_s.

    Returns the exit status (None if it could not be reaped)."""
    if p.poll() is None:
        _signal_group(p, first)
        try:
            p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
    # The leader may be gone while its group lives on (e.g. perf's sleep): sweep it.
    _signal_group(p, signal.SIGKILL)
    forget(p)
    return p.returncode


def forget(p: subprocess.Popen) -> None:
    with _lock:
        _live.pop(p.pid, None)


def live() -> list[subprocess.Popen]:
    with _lock:
        return [p for p in _live.values() if p.poll() is None]


def kill_all(timeout_s: float = 3.0) -> None:
    """Take down every tracked group: SIGTERM all at once, then SIGKILL stragglers."""
    with _lock:
        procs = list(_live.values())
    for p in procs:
        if p.poll() is None:
            _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        _signal_group(p, signal.SIGKILL)
        try:
            p.wait(2)
        except subprocess.TimeoutExpired:
            pass
        forget(p)


# The last SIGINT/SIGTERM received. Python runs a signal handler between any two bytecodes;
# when that is inside a __del__ or a weakref callback (a Popen or file being collected), the
# Interrupted it raises is printed as "Exception ignored" and lost, and the run would go on
# to the end. raise_if_interrupted() at the runner's checkpoints raises it again.
_received: int | None = None


def _raise_interrupted(signum, _frame):
    global _received
    _received = signum
    raise Interrupted(signum)


def _quiet_unraisable(unraisable) -> None:
    """An Interrupted swallowed where Python cannot raise (an at-fork handler, a __del__) is
    raised again at the next checkpoint (raise_if_interrupted): printing it as "Exception
    ignored ... Traceback" would only alarm the user. Anything else is printed as before."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    sys.__unraisablehook__(unraisable)


def raise_if_interrupted() -> None:
    """Raise Interrupted if a signal arrived whose exception may have been swallowed."""
    if _received is not None:
        raise Interrupted(_received)


_installed = False
_before: dict[int, Any] = {}          # the handlers install_signal_handlers replaced
_atexit = False


def install_signal_handlers() -> None:
    """SIGINT/SIGTERM raise Interrupted in the main thread (the runner records the rep as
    failed and cleans up); atexit kills whatever is still tracked."""
    global _installed, _atexit
    if _installed:
        return
    _before.update({s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)})
    signal.signal(signal.SIGINT, _raise_interrupted)
    signal.signal(signal.SIGTERM, _raise_interrupted)
    sys.unraisablehook = _quiet_unraisable
    if not _atexit:
        atexit.register(kill_all)
        _atexit = True
    _installed = True


def restore_signal_handlers() -> None:
    """The handlers as they were before install_signal_handlers, and no interrupt pending:
    a command called in-process (a test, the scheduler's jobs, a program that embeds
    stallscope) leaves the process as it found it. Without this, one command's Ctrl-C stayed
    recorded and the next command's first checkpoint raised it again."""
    global _installed, _received
    if _installed:
        for s, h in _before.items():
            signal.signal(s, h)
        sys.unraisablehook = sys.__unraisablehook__
    _installed, _received = False, None


def run_capture(argv: Sequence[str], timeout_s: float = 30.0, **kw) -> subprocess.CompletedProcess:
    """Run a short helper command (version probes etc.) to completion, tracked like the rest."""
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(p, 1.0)
        out, err = p.communicate()
        raise
    finally:
        forget(p)
    return subprocess.CompletedProcess(p.args, p.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))
