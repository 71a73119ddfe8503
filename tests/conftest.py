"""Shared fixtures for the service's tests: a migrated SQLite file, a fresh PostgreSQL schema,
and the API served by a real uvicorn on loopback on a settable clock (tests/support/api.py and
tests/support/db.py hold the parts tests import)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
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


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A parallel run's scheduler: tests.support.scheduling's, for xdist's load distribution
    (another asked for by name is xdist's own)."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from tests.support.scheduling import make_scheduler

    return make_scheduler(config, log, cores=len(os.sched_getaffinity(0)))


#: The drills (tests/support/drills.py, tests/support/host_drills.py): they run in the default
#: run; the inner loop leaves them out with `-m "not drill"`.
_DRILLS = {"test_sweeper_kill_drill.py", "test_sweeper_host_drills.py"}


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
