"""Shared fixtures for the service's tests: a migrated SQLite file, a fresh PostgreSQL schema,
a settable clock, and the API served by a real uvicorn on loopback."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

import httpx
import pytest

POSTGRES_ENV = "REWAKE_TEST_POSTGRES_URL"
#: The instant most service tests stand at: one minute after their reports were observed.
T0 = datetime(2026, 11, 30, 13, 6, tzinfo=UTC)
TOKENS = "alice:alice-secret-0123456789,bob:bob-secret-0123456789"
ALICE = {"Authorization": "Bearer alice-secret-0123456789"}


@dataclass
class Clock:
    """A clock the tests set; the app reads it once per request."""

    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


#: Tests import this module's helpers as `conftest`; tests/realcli/conftest.py takes that name
#: in sys.modules when pytest loads it, so the name is given back to this module before each
#: collection step and each test (an import inside a test function would find the other one).
_THIS_MODULE = sys.modules[__name__]


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


def pytest_collectstart(collector: pytest.Collector) -> None:
    sys.modules["conftest"] = _THIS_MODULE


def pytest_runtest_setup(item: pytest.Item) -> None:
    sys.modules["conftest"] = _THIS_MODULE


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
#: The drills (tests/drills.py, tests/host_drills.py): they run in the default run; the inner
#: loop leaves them out with `-m "not drill"`.
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
    "realcli:test_realcli_gemini.py",
    "realcli:test_realcli_claude.py",
    "realcli:test_realcli_workflow.py",
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
    tests/browser/), and the drills (`drill`); `-m` then picks the inner loop (see README,
    "Tests")."""
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


def migrate(url: str) -> None:
    from rewake.db import migrations
    from rewake.db.engine import Database

    database = Database(url)
    migrations.upgrade(database.engine)
    database.dispose()


def postgres_schema_url(base: str, schema: str) -> str:
    """`base` with every connection's search_path set to `schema`."""
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3D{schema}"


@contextmanager
def fresh_postgres_schema(migrated: bool = True) -> Iterator[str]:
    """A URL whose connections live in a new schema, dropped afterwards."""
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    import sqlalchemy

    schema = f"rewake_test_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = postgres_schema_url(base, schema)
    try:
        if migrated:
            migrate(url)
        yield url
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


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


class LiveServer:
    """An app served by uvicorn in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@dataclass
class Api:
    """A running API: its base URL, its clock, and its database."""

    url: str
    clock: Clock
    database: Any

    def client(self, headers: dict[str, str] | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=ALICE if headers is None else headers)


@contextmanager
def serve_api(database_url: str, **settings: Any) -> Iterator[Api]:
    """The API over `database_url`, with tokens unless told otherwise, on a settable clock."""
    from rewake.db.engine import Database
    from rewake.main import create_app
    from rewake.settings import Settings

    settings.setdefault("api_tokens", TOKENS)
    settings.setdefault("display_zone", "Europe/Berlin")
    clock = Clock()
    database = Database(database_url)
    config = Settings(database_url=database_url, **settings)
    app = create_app(config, database=database, clock=clock)
    with LiveServer(app) as url:
        yield Api(url=url, clock=clock, database=database)
    database.dispose()


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


# Real CLI messages, observed at OBSERVED (13:05Z) on a host in Europe/Berlin (CET, +01:00).
OBSERVED = "2026-11-30T14:05:00+01:00"
QUOTA = "You've hit your session limit · resets 5:40pm (Europe/Berlin)"  # 16:40Z, +60 s
QUOTA_LATER = "You've hit your session limit · resets 6:40pm (Europe/Berlin)"  # 17:40Z
PASSED = "You've hit your session limit · resets 2:00pm (Europe/Berlin)"  # 13:00Z, 5 min ago
STALE = "You've hit your session limit · resets 1:00pm (Europe/Berlin)"  # 65 min ago: stale
NOT_STATED = "5 hour limit reached"
#: Gemini CLI's capacity message (a relative reset: 16:39Z from 13:05Z).
GEMINI_QUOTA = "You have exhausted your capacity on this model. Your quota will reset after 3h34m."
NO_RESET = "Credit balance too low · Add funds: https://console.anthropic.com/settings/billing"
LOGIN = "Not logged in · Run /login"
NATIVE = (  # 6pm CET is 17:00Z; the CLI says it continues by itself
    "5-hour limit reached ∙ resets 6pm\n"
    "  ⎿  Claude will continue automatically when the limit resets."
)


def failure(attempt: int = 1, message: str = QUOTA, **extra: Any) -> dict[str, Any]:
    """A failure report body from a Berlin host."""
    body: dict[str, Any] = {
        "attempt": attempt,
        "message": message,
        "observed_at": OBSERVED,
        "zone": "Europe/Berlin",
    }
    body.update(extra)
    return body


def runs_url(root_id: str, run_id: str = "r1", what: str = "failures") -> str:
    return f"/api/agent/runs/{root_id}/runs/{run_id}/{what}"


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
