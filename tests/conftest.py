"""Shared fixtures for the service's tests: a migrated SQLite file, a fresh PostgreSQL schema,
and the API served by a real uvicorn on loopback on a settable clock (tests/support/api.py and
tests/support/db.py hold the parts tests import)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import httpx
import pytest

from tests.support.api import T0, Api, serve_api
from tests.support.db import fresh_postgres_schema, migrate


def pytest_configure(config: pytest.Config) -> None:
    """In the process that starts a parallel run's workers: fix the real-CLI tier's draws
    (tests/realcli/realcli_cases.py: a seed and the instant resets are placed from) for all of
    them. Each worker collects the tests itself, and workers that drew different cases would
    collect different tests, which xdist refuses. The workers inherit this environment."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    now = int(time.time())
    os.environ.setdefault("REWAKE_REALCLI_SEED", str(now % 100_000))
    os.environ.setdefault("REWAKE_REALCLI_DRAWN_AT", str(now))


#: Tests that share something costly or must not overlap one another run on one worker of a
#: parallel run (`pytest -n 4`, as .ci/run does), one after another in their usual order:
#: - each real-CLI module (tests/realcli): its cases run together in module fixtures, three
#:   CLIs at a time; the supervised runs start with the first test of test_realcli_run.py's
#:   worker and its last tests wait for them (tests/realcli/conftest.py). The modules are
#:   groups of their own, not one tier-wide group: the tier is half CPU (node starting the
#:   CLIs) and half waiting (resets served minutes ahead), and on one worker it was the
#:   suite's critical path by far. The clock's and the install's tests share nothing costly
#:   and go anywhere;
#: - the container image and the built distributions: one build per module, not per worker;
#: - the browser: one chromium per module;
#: - the drills: each measures sweepers against the clock, and two at once would each count
#:   the other's load as theirs.
_GROUP_BY_FOLDER = {"browser": "browser"}
_GROUP_BY_FILE = {
    "test_container_image.py": "container_image",
    "test_install_wheel.py": "install_wheel",
    "test_sweeper_kill_drill.py": "drills",
    "test_sweeper_host_drills.py": "drills",
}
_REALCLI_UNGROUPED = {"test_realcli_clock.py", "test_realcli_install.py"}
#: The drills (tests/support/drills.py, tests/support/host_drills.py): they run in the default
#: run; the inner loop leaves them out with `-m "not drill"`.
_DRILLS = {"test_sweeper_kill_drill.py", "test_sweeper_host_drills.py"}
#: Which groups a parallel run hands out first, longest first (their wall time, measured on
#: CI's 2 cores; a worker that takes a long group late ends the run late). Groups not named
#: here come next, then tests/e2e's tests (processes of their own, many of them waiting on
#: resets and timeouts), then the rest, each in collection order.
_LONGEST_FIRST = (
    "realcli:test_realcli_run.py",
    "realcli:test_realcli_service.py",
    "realcli:test_realcli_one_writer.py",
    "realcli:test_realcli_dst.py",
    "realcli:test_realcli_one_writer_pty.py",
    "realcli:test_realcli_one_writer_gemini.py",
    "realcli:test_realcli_gemini.py",
    "realcli:test_realcli_claude.py",
    "realcli:test_realcli_workflow.py",
    "realcli:test_realcli_workflow_hook.py",
    "realcli:test_realcli_workflow_decline.py",
    "container_image",
    "realcli:test_realcli_codex.py",
    "drills",
    "install_wheel",
    "browser",
)


def _group(nodeid: str) -> str | None:
    """The group a test (by its node id, tests/...::name) shares a worker with, if any."""
    path = PurePosixPath(nodeid.split("::", 1)[0])
    if "realcli" in path.parts[:-1]:
        return None if path.name in _REALCLI_UNGROUPED else f"realcli:{path.name}"
    for folder, group in _GROUP_BY_FOLDER.items():
        if folder in path.parts[:-1]:
            return group
    return _GROUP_BY_FILE.get(path.name)


def _handed_out(scope: str) -> tuple[int, int]:
    """Where a scheduling unit (a group, else one test's node id) goes in the work queue."""
    if scope.startswith("group:"):
        group = scope.removeprefix("group:")
        known = group in _LONGEST_FIRST
        return (0, _LONGEST_FIRST.index(group)) if known else (1, 0)
    return (2, 0) if "e2e" in PurePosixPath(scope.split("::", 1)[0]).parts[:-1] else (3, 0)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A parallel run's scheduler: xdist's loadgroup, with the groups above, handed out
    longest first. They are not given as xdist_group marks, because xdist joins those to the
    node id by a pytest internal that pytest 9 no longer reads (the marks are silently
    ignored)."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # another distribution asked for by name: xdist's own
    from xdist.scheduler import LoadGroupScheduling

    class Grouped(LoadGroupScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            group = _group(nodeid)
            return f"group:{group}" if group is not None else nodeid

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the queue is complete once the first unit is handed out
                self.ordered = True
                queue = sorted(self.workqueue.items(), key=lambda unit: _handed_out(unit[0]))
                self.workqueue.clear()
                self.workqueue.update(queue)
            super()._assign_work_unit(node)

    return Grouped(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what it needs: a PostgreSQL server (`postgres`), the installed
    service in processes of its own (`e2e`, tests/e2e/), a browser (`browser`,
    tests/browser/), and the drills (`drill`); `-m` then picks the inner loop (see CONTRIBUTING.md,
    "The inner loop")."""
    for item in items:
        parts = item.path.parts
        if "e2e" in parts:
            item.add_marker(pytest.mark.e2e)
        if "browser" in parts:
            item.add_marker(pytest.mark.browser)
        if item.path.name in _DRILLS:
            item.add_marker(pytest.mark.drill)
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and "postgres" in callspec.params.values()
        if on_postgres or "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'rewake.db'}"
    migrate(url)
    return url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    with fresh_postgres_schema() as url:
        yield url


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each database the service runs on, migrated to head."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
def database(db_url: str) -> Iterator[Any]:
    """A Database on each migrated URL, disposed after the test."""
    from rewake.db.engine import Database

    db = Database(db_url)
    yield db
    db.dispose()


@pytest.fixture(scope="session")
def _served(db_url: str) -> Iterator[Api]:
    with serve_api(db_url) as api:
        yield api


@pytest.fixture
def api(_served: Api) -> Iterator[Api]:
    """The API on each database, its clock back at T0."""
    _served.clock.now = T0
    yield _served


@pytest.fixture
def http(api: Api) -> Iterator[httpx.Client]:
    """A client of `api` that acts as alice."""
    with api.client() as client:
        yield client


@pytest.fixture
def root_id() -> str:
    """A root_id no other test uses."""
    return f"s-{uuid.uuid4().hex[:16]}"


@pytest.fixture(scope="module")
def site(sqlite_url: str) -> Iterator[Api]:
    """The app with tokens configured, on SQLite, served once per module (the web page's auth
    and hardening tests)."""
    with serve_api(sqlite_url) as api:
        yield api


@pytest.fixture(scope="module")
def open_site(sqlite_url: str) -> Iterator[Api]:
    """The app with no token configured (loopback only), served once per module."""
    with serve_api(sqlite_url, api_tokens=None) as api:
        yield api
