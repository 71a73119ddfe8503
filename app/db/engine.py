"""Engines, sessions and the one column type every instant goes through.

SQLite: WAL, a busy timeout, `BEGIN IMMEDIATE` for write transactions (writers queue at the
start instead of failing at the first write), `synchronous=FULL` for the commit before a send.
PostgreSQL: psycopg 3; write transactions lock the session row they change; a pooled
connection is pinged only after it sat idle (`_configure_postgresql`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DisconnectionError
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

_WRITE = "rewake_write"
_DURABLE = "rewake_durable"
#: In a pooled PostgreSQL connection's `info`: when it was last checked in (monotonic clock).
_IDLE_SINCE = "rewake.idle_since"


def make_engine(url: str, *, ping_after_idle_s: float = PING_AFTER_IDLE_S, **kwargs: Any) -> Engine:
    """An engine for `url` with rewake's connection rules applied."""
    url = normalize_database_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            **kwargs,
        )
        _configure_sqlite(engine)
        return engine
    if "poolclass" not in kwargs:
        kwargs.setdefault("pool_size", 10)
        kwargs.setdefault("max_overflow", 20)
    engine = create_engine(url, **kwargs)
    if engine.dialect.name == "postgresql":
        _configure_postgresql(engine, ping_after_idle_s)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # The driver must not open transactions itself: "begin" below does, as IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        durable = "FULL" if options.get(_DURABLE) else "NORMAL"
        info = connection.connection.info  # per DBAPI connection: set the pragma on changes only
        if info.get("synchronous") != durable:
            connection.exec_driver_sql(f"PRAGMA synchronous={durable}")
            info["synchronous"] = durable
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

    def __init__(self, url: str, **engine_kwargs: Any) -> None:
        self.engine = make_engine(url, **engine_kwargs)
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
        with self.write_lock, db.begin():
            yield

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
        return await loop.run_in_executor(self._writers, self._write_now, work)

    def _write_now(self, work: Callable[[Session], T]) -> T:
        with self.writer() as db, self.transaction(db):
            return work(db)

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
