"""PostgreSQL: a pooled connection is pinged before use only after it sat idle, and a
connection the server dropped is replaced."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from rewake.db.engine import Database
from rewake.settings import normalize_database_url
from tests.support.slowdown import Wait


def _backend_pid(database: Database) -> int:
    """The server process behind the pool's connection, read in a write as the routes write."""
    with database.writer() as db, database.transaction(db):
        pid: int = db.execute(text("SELECT pg_backend_pid()")).scalar_one()
        return pid


@pytest.fixture
def terminate(postgres_url: str) -> Iterator[object]:
    """Ends a server process as a restart or an idle timeout would, and waits until it is gone."""
    admin = create_engine(normalize_database_url(postgres_url))

    def _terminate(pid: int) -> None:
        with admin.begin() as connection:
            assert connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        wait = Wait(10)
        while not wait.over():
            with admin.begin() as connection:
                alive = connection.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
                ).scalar_one()
            if not alive:
                return
            time.sleep(0.05)
        raise AssertionError(f"server process {pid} did not end")

    yield _terminate
    admin.dispose()


def test_a_connection_dropped_while_idle_is_replaced_before_use(
    postgres_url: str, terminate: object
) -> None:
    """Idle past the ping's threshold, a connection the server dropped fails its ping and the
    write runs on a new one: the caller sees no error."""
    database = Database(postgres_url, pool_size=1, max_overflow=0, ping_after_idle_s=0.0)
    try:
        pid = _backend_pid(database)
        terminate(pid)  # type: ignore[operator]
        assert _backend_pid(database) != pid
    finally:
        database.dispose()


def test_a_connection_used_again_soon_is_not_pinged_and_is_replaced_after_its_failure(
    postgres_url: str, terminate: object
) -> None:
    """Within the threshold no ping is sent (a round trip a write saved): a connection dropped
    since its last use fails the next write, as an error the API answers with 503, and the
    pool replaces it for the write after."""
    database = Database(postgres_url, pool_size=1, max_overflow=0, ping_after_idle_s=3600.0)
    try:
        pid = _backend_pid(database)
        terminate(pid)  # type: ignore[operator]
        with pytest.raises(OperationalError):
            _backend_pid(database)
        assert _backend_pid(database) != pid
    finally:
        database.dispose()
