"""Noticing new or changed marks within a second or two, without polling the marks table.

SQLite: `PRAGMA data_version` on a connection of its own changes whenever another connection
commits. PostgreSQL: a trigger (alembic revision 0002) sends NOTIFY rewake_marks when marks are
added or their due_at moves; this LISTENs. Either way the timer still re-reads the earliest
due_at every second, so a watcher that fails only costs latency, never a resume.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any, Protocol

from sqlalchemy.engine import make_url

from rewake.logs import log_event

logger = logging.getLogger("rewake.sweeper.watch")

CHANNEL = "rewake_marks"


class ChangeWatcher(Protocol):
    def changed(self) -> bool:
        """True when the database may have changed since the last call."""
        ...

    def close(self) -> None: ...


class PollingWatcher:
    """Says nothing ever changed: the timer's periodic re-read is all there is."""

    def changed(self) -> bool:
        return False

    def close(self) -> None:
        return None


class SQLiteDataVersionWatcher:
    """`PRAGMA data_version` on a dedicated read-only connection."""

    def __init__(self, path: str) -> None:
        self._connection = sqlite3.connect(
            f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )
        self._version = self._read()

    def _read(self) -> int:
        row = self._connection.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def changed(self) -> bool:
        try:
            version = self._read()
        except sqlite3.Error:
            return True
        if version == self._version:
            return False
        self._version = version
        return True

    def close(self) -> None:
        self._connection.close()


class PostgresListenWatcher:
    """LISTEN rewake_marks on an autocommit connection; reconnects lazily when it drops."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._connection: Any = None
        self._connect()

    def _connect(self) -> None:
        import psycopg

        try:
            self._connection = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=5)
            self._connection.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as error:
            log_event(logger, "listen_unavailable", logging.WARNING, error=str(error))
            self._connection = None

    def changed(self) -> bool:
        import psycopg

        if self._connection is None or self._connection.closed:
            self._connect()
            return True
        try:
            notified = False
            for _ in self._connection.notifies(timeout=0, stop_after=1000):
                notified = True
            return notified
        except psycopg.Error:
            self._connection = None
            return True

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def watcher_for(url: str) -> ChangeWatcher:
    """The best watcher for the database at `url`; polling when none can be had."""
    parsed = make_url(url)
    try:
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            return SQLiteDataVersionWatcher(str(parsed.database))
        if parsed.get_backend_name() == "postgresql":
            conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
            return PostgresListenWatcher(conninfo)
    except Exception as error:  # any failure here only costs latency
        log_event(logger, "watcher_unavailable", logging.WARNING, error=str(error))
    return PollingWatcher()
