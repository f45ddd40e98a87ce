"""pytest plugin: record which files under fixtures/tma each test opens, and how it ended.

tests/test_tma_fixtures_covered.py runs the tests its COVERED list names under this plugin
(`python -m pytest -p tests.fixture_reads ...` with STALLSCOPE_FIXTURE_READS=FILE), so
"this test checks that fixture" is something a run can disprove, not a name in a list.
FILE gets {"reads": {test: [fixture paths]}, "outcomes": {test: passed|failed|skipped}},
where test is "module.function" with the parameters of a parametrised test merged.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from tests.conftest import FIXTURES

ENV = "STALLSCOPE_FIXTURE_READS"
_ROOT = os.path.realpath(FIXTURES / "tma")
_running: list[str] = []                 # the test in its call phase, if any
_reads: dict[str, set[str]] = {}
_outcomes: dict[str, str] = {}
_RANK = {"passed": 0, "skipped": 1, "failed": 2}   # a parametrised test ends as its worst case


def short_name(nodeid: str) -> str:
    """'tests/test_tma_parse.py::test_x[a.rc]' -> 'test_tma_parse.test_x'."""
    path, _, func = nodeid.partition("::")
    return f"{os.path.basename(path).removesuffix('.py')}.{func.split('[', 1)[0]}"


def _audit(event: str, args: tuple) -> None:
    # Every open() raises the "open" audit event, Path.read_text() included.
    if event != "open" or not _running or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    real = os.path.realpath(os.fsdecode(args[0]))
    if real.startswith(_ROOT + os.sep):
        _reads.setdefault(_running[0], set()).add(os.path.relpath(real, _ROOT))


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(ENV):
        sys.addaudithook(_audit)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    _running[:] = [short_name(item.nodeid)]
    try:
        yield
    finally:
        _running.clear()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and report.passed:
        return          # setup/teardown that went well says nothing about the test
    name = short_name(report.nodeid)
    if name not in _outcomes or _RANK[report.outcome] > _RANK[_outcomes[name]]:
        _outcomes[name] = report.outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    if out := os.environ.get(ENV):
        with open(out, "w") as f:
            json.dump({"reads": {t: sorted(r) for t, r in _reads.items()}, "outcomes": _outcomes},
                      f, indent=1, sort_keys=True)
