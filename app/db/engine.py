"""Engines, sessions and the one column type every instant goes through.

SQLite: WAL, a busy timeout, `BEGIN IMMEDIATE` for write transactions (writers queue at the
start instead of failing at the first write), `synchronous=FULL` for the commit before a send.
An API write waits for the lock no longer than the busy timeout from when it arrived, queue
included (`Database.write`). A write that fails because the storage is full is remembered
until one succeeds (`Database.storage_full_since`), for /readyz.
PostgreSQL: psycopg 3; write transactions lock the session row they change; a pooled
connection is pinged only after it sat idle (`_configure_postgresql`).
"""

from __future__ import annotations

import asyncio
import errno
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import Session

from rewake.settings import normalize_database_url

#: How long a SQLite writer waits for the lock before giving up, in milliseconds.
SQLITE_BUSY_TIMEOUT_MS = 30_000

#: Threads that run the API's write transactions on PostgreSQL (within the pool's 10 + 20).
WRITER_THREADS = 8

#: A pooled PostgreSQL connection that sat idle this long is pinged before it is used again.
PING_AFTER_IDLE_S = 1.0

T = TypeVar("T")

#: SQLite's result code for a write the storage cannot hold; PostgreSQL's SQLSTATE disk_full.
SQLITE_FULL = 13
POSTGRES_DISK_FULL = "53100"

_WRITE = "rewake_write"
_DURABLE = "rewake_durable"
#: In a pooled PostgreSQL connection's `info`: when it was last checked in (monotonic clock).
_IDLE_SINCE = "rewake.idle_since"


def is_storage_full(error: BaseException) -> bool:
    """Whether `error` (a SQLAlchemy error or the driver's own) says the storage is full:
    SQLite's SQLITE_FULL, PostgreSQL's disk_full, or ENOSPC from the system."""
    cause = getattr(error, "orig", None) or error
    if getattr(cause, "sqlite_errorcode", None) == SQLITE_FULL:
        return True
    if getattr(cause, "sqlstate", None) == POSTGRES_DISK_FULL:
        return True
    return isinstance(cause, OSError) and cause.errno == errno.ENOSPC


#: The deadline of the write this thread is running (monotonic), set by Database.write.
_deadline = threading.local()


def make_engine(
    url: str,
    *,
    ping_after_idle_s: float = PING_AFTER_IDLE_S,
    busy_timeout_ms: int | None = None,
    **kwargs: Any,
) -> Engine:
    """An engine for `url` with rewake's connection rules applied (a SQLite writer waits
    `busy_timeout_ms` for the lock, SQLITE_BUSY_TIMEOUT_MS unless told)."""
    url = normalize_database_url(url)
    busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
            **kwargs,
        )
        _configure_sqlite(engine, busy_timeout_ms)
        return engine
    if "poolclass" not in kwargs:
        kwargs.setdefault("pool_size", 10)
        kwargs.setdefault("max_overflow", 20)
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "postgresql":
        _configure_postgresql(engine, ping_after_idle_s)
    return engine


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        # The driver must not open transactions itself: "begin" below does, as IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()
        record.info["busy_timeout_ms"] = busy_timeout_ms

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        durable = "FULL" if options.get(_DURABLE) else "NORMAL"
        info = connection.connection.info  # per DBAPI connection: set the pragma on changes only
        if info.get("synchronous") != durable:
            connection.exec_driver_sql(f"PRAGMA synchronous={durable}")
            info["synchronous"] = durable
        if options.get(_WRITE):
            # A write's wait for the lock ends at its deadline (Database.write), not a whole
            # busy timeout after it reached the front of the queue: every write that arrived
            # while another process held the lock gets the same answer.
            deadline = getattr(_deadline, "at", None)
            waiting_ms = busy_timeout_ms
            if deadline is not None:
                waiting_ms = min(busy_timeout_ms, int((deadline - time.monotonic()) * 1000))
                if waiting_ms <= 0:
                    raise OperationalError(
                        "BEGIN IMMEDIATE", None, sqlite3.OperationalError("database is locked")
                    )
            if info.get("busy_timeout_ms") != waiting_ms:
                connection.exec_driver_sql(f"PRAGMA busy_timeout={waiting_ms}")
                info["busy_timeout_ms"] = waiting_ms
        connection.exec_driver_sql("BEGIN IMMEDIATE" if options.get(_WRITE) else "BEGIN")


def _configure_postgresql(engine: Engine, ping_after_idle_s: float) -> None:
    """A pooled connection is pinged before use only when it sat idle for `ping_after_idle_s`
    or longer. SQLAlchemy's `pool_pre_ping` pings before every use: a round trip a write,
    on a route where the API process spends most of its time on round trips. A connection
    that the server dropped while idle (a restart, an idle timeout) is still replaced before
    it is used; one dropped within the last second fails its first statement (503
    `database_unavailable`), and SQLAlchemy then replaces every connection of the pool."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        idle_since = record.info.pop(_IDLE_SINCE, None)
        if idle_since is None or time.monotonic() - idle_since < ping_after_idle_s:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as error:
            # The pool closes this connection and checks out another (PoolEvents.checkout).
            raise DisconnectionError(f"idle connection failed its ping: {error}") from error


class Database:
    """One engine and the three kinds of session the service opens on it."""

    def __init__(
        self, url: str, *, busy_timeout_ms: int | None = None, **engine_kwargs: Any
    ) -> None:
        busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        self.busy_timeout_s = busy_timeout_ms / 1000
        self.engine = make_engine(url, busy_timeout_ms=busy_timeout_ms, **engine_kwargs)
        #: When a write last failed for want of storage (monotonic), until one succeeds.
        self.storage_full_since: float | None = None
        self.write_engine = self.engine.execution_options(**{_WRITE: True})
        self._durable_engine = self.engine.execution_options(**{_WRITE: True, _DURABLE: True})
        self.write_lock: AbstractContextManager[object] = (
            threading.Lock() if self.dialect == "sqlite" else nullcontext()
        )
        self._writers: ThreadPoolExecutor | None = None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def transaction(self, db: Session) -> Iterator[None]:
        """Begin and commit `db`'s transaction (rolled back on an error).

        On SQLite the writers of this process queue on a lock first: SQLite's own busy handler
        sleeps and retries, so back-to-back writers would starve one another for seconds.
        """
        try:
            with self.write_lock, db.begin():
                yield
        except OperationalError as error:
            if is_storage_full(error) and self.storage_full_since is None:
                self.storage_full_since = time.monotonic()
            raise
        self.storage_full_since = None

    async def write(self, work: Callable[[Session], T]) -> T:
        """`work(session)` in a write transaction, committed before this returns.

        The API's writes queue here instead of in the general thread pool, each in its own
        transaction. SQLite takes one writer at a time anyway, so its writes run on one thread;
        PostgreSQL runs several at once, within the connection pool.
        """
        if self._writers is None:
            threads = 1 if self.dialect == "sqlite" else WRITER_THREADS
            self._writers = ThreadPoolExecutor(threads, thread_name_prefix="rewake-writer")
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + self.busy_timeout_s
        return await loop.run_in_executor(self._writers, self._write_now, work, deadline)

    def _write_now(self, work: Callable[[Session], T], deadline: float | None = None) -> T:
        _deadline.at = deadline
        try:
            with self.writer() as db, self.transaction(db):
                return work(db)
        finally:
            _deadline.at = None

    def reader(self) -> Session:
        """A session for reads only (a deferred transaction on SQLite)."""
        return Session(self.engine, expire_on_commit=False)

    def writer(self) -> Session:
        """A session whose transaction takes the write lock when it starts (SQLite)."""
        return Session(self.write_engine, expire_on_commit=False)

    def durable_writer(self) -> Session:
        """A writer whose commit is flushed to disk before it returns: the commit before a send."""
        return Session(self._durable_engine, expire_on_commit=False)

    def dispose(self) -> None:
        if self._writers is not None:
            self._writers.shutdown(wait=True)
            self._writers = None
        self.engine.dispose()
