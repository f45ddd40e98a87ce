"""Shared test fixtures: where the real recorded outputs live, and the repo root."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The real recorded outputs the tests replay, each directory with its SOURCES.md: kept in the
# repository, so a clone runs its tests alone.
FIXTURES = REPO / "tests" / "data" / "fixtures"


def pytest_configure(config):
    """The host's measured records (noise.json, sample_cost.json) of this session's runs go to
    a directory of the session's own (STALLSCOPE_RECORDS, inherited by every CLI the tests
    start), whatever the user exported: runs made beside other tests would otherwise plan a
    user's next run, as the suite's runs once lowered the next real run's perf rate to 99 Hz,
    and a user who keeps the records in a directory of their own exports it."""
    import os
    import shutil
    import tempfile
    records = tempfile.mkdtemp(prefix="stallscope-test-records-")
    os.environ["STALLSCOPE_RECORDS"] = records
    config.add_cleanup(lambda: shutil.rmtree(records, ignore_errors=True))


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"real recorded fixtures not found at {FIXTURES} (tests/data/fixtures)")
    return FIXTURES


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """Each test starts with the signal handlers the session started with and no interrupt
    pending: a command called in-process (`main([...])`) installs the collectors'
    SIGINT/SIGTERM handlers (collectors/command.py puts them back when it ends; a test that
    installs them by hand does not), and a handler or a recorded SIGINT left in place turned
    a later test's run into "interrupted" in the clean-clone run."""
    import signal

    from collectors.host import procs
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    procs.restore_signal_handlers()     # a test that installed them without a command, too
    for s, h in saved.items():
        signal.signal(s, h)


def host_has_pmu() -> bool:
    """Independent of collectors.preflight: does `perf stat -e cycles` count here? Tests of
    the no-PMU path run where it does not (CI, VMs); on bare metal they are skipped and the
    fixture replays cover that path."""
    import shutil
    import subprocess
    if not shutil.which("perf"):
        return False
    p = subprocess.run(["perf", "stat", "-x,", "-e", "cycles", "true"],
                       capture_output=True, text=True, timeout=30)
    return p.returncode == 0 and "<not supported>" not in p.stderr and "<not counted>" not in p.stderr


HAS_PMU = host_has_pmu()
no_pmu_only = pytest.mark.skipif(HAS_PMU, reason="this host has a hardware PMU; the no-PMU path "
                                 "is covered here by the recorded no_pmu_vm fixture replays")


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory):
    """A real local PostgreSQL server with an empty database `stallscope` (tests/pg.py)."""
    import shutil
    import tempfile
    from tests import pg
    # Not under pytest's tmp dir: that is private to root, and the server runs as postgres.
    tmp = Path(tempfile.mkdtemp(prefix="stallscope-pg-"))
    try:
        yield from pg.server(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
