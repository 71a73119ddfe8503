"""The real-CLI tier's supervised runs start with the tier's first test, when any test that
needs them was selected: they spend minutes waiting for resets, which then overlap the
matrix instead of adding to it. Not earlier: the mock stamps each answer with time.time(),
which other tiers' tests pin with freezegun; the tier's tests run together, and the
last module waits for the runs. Whatever was started is ended when the session finishes,
however it finishes."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.realcli_workflow_mock import Served, serving

_started: dict[str, Any] = {}


def _start() -> None:
    from tests.realcli.test_realcli_run import start_all

    _started["root"] = Path(tempfile.mkdtemp(prefix="rewake-realcli-run-"))
    try:
        _started["runs"] = start_all(_started["root"])
    except BaseException as failed:  # a skip or failure belongs to the tests that need it
        _started["error"] = failed


_wanted: list[bool] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    _wanted[:] = [any("runs" in getattr(item, "fixturenames", ()) for item in session.items)]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Called for this folder's tests only: the first one starts the runs."""
    if _wanted == [True] and not _started:
        _start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    for run in _started.get("runs", {}).values():
        run.end()
    if "root" in _started:
        shutil.rmtree(_started["root"], ignore_errors=True)
    _started.clear()
    _wanted.clear()


@pytest.fixture(scope="session")
def runs() -> Iterator[dict[str, Any]]:
    """The supervised runs, started with the tier's first test (see the module docstring)."""
    if not _started:
        _start()
    if "error" in _started:
        raise _started["error"]
    yield _started["runs"]


@pytest.fixture
def served() -> Iterator[Served]:
    """The workflow mock (tests.realcli.realcli_workflow_mock) on loopback for one test: the
    workflow tests' Claude Code talks to it alone."""
    with serving() as mock:
        yield mock
