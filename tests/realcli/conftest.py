"""The real-CLI tier's supervised runs start right after collection, when any test that
needs them was selected: they spend minutes waiting for resets, which then overlap the
matrix instead of adding to it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_started: dict[str, Any] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    if any("runs" in getattr(item, "fixturenames", ()) for item in session.items):
        from test_realcli_run import start_all

        root = Path(tempfile.mkdtemp(prefix="rewake-realcli-run-"))
        _started["root"] = root
        try:
            _started["runs"] = start_all(root)
        except BaseException as failed:  # a skip or failure belongs to the tests that need it
            _started["error"] = failed


@pytest.fixture(scope="session")
def runs() -> Iterator[dict[str, Any]]:
    """The supervised runs started after collection (see the module docstring)."""
    if "error" in _started:
        raise _started["error"]
    if "runs" not in _started:
        from test_realcli_run import start_all

        _started["root"] = Path(tempfile.mkdtemp(prefix="rewake-realcli-run-"))
        _started["runs"] = start_all(_started["root"])
    yield _started["runs"]
    for run in _started["runs"].values():
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
        run.mock.stop()
    shutil.rmtree(_started["root"], ignore_errors=True)
