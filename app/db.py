"""Engines, sessions and the one column type every instant goes through.

SQLite: WAL, a busy timeout, `BEGIN IMMEDIATE` for write transactions (writers queue at the
start instead of failing at the first write), `synchronous=FULL` for the commit before a send.
PostgreSQL: psycopg 3; write transactions lock the session row they change; a pooled
connection is pinged only after it sat idle (`_configure_postgresql`).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from datetime import UTC, datetime
from typing import Any, TypeVar

from sqlalchemy import DateTime, Engine, create_engine, event
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.types import TypeDecorator
from sqlmodel import Session

from app.settings import normalize_database_url

#: How long a SQLite writer waits for the lock before giving up, in milliseconds.
SQLITE_BUSY_TIMEOUT_MS = 30_000

#: Threads that run the API's write transactions on PostgreSQL (within the pool's 10 + 20).
WRITER_THREADS = 8

#: At most this many queued writes share one SQLite transaction (see `GroupWriter`).
GROUP_MAX = 32

#: A pooled PostgreSQL connection that sat idle this long is pinged before it is used again.
PING_AFTER_IDLE_S = 1.0

T = TypeVar("T")

_WRITE = "rewake_write"
_DURABLE = "rewake_durable"
#: In a pooled PostgreSQL connection's `info`: when it was last checked in (monotonic clock).
_IDLE_SINCE = "rewake.idle_since"


class UTCDateTime(TypeDecorator[datetime]):
    """An instant stored as UTC: naive datetimes are refused, results come back aware in UTC.

    `DateTime(timezone=True)` alone is not enough: on SQLite it drops the offset, so a reset at
    09:00-05:00 was read back as 09:00Z and fired five hours early.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        utc = _as_utc(value)
        # SQLite stores text: one format, always UTC, so text order is time order.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        """On SQLite, `process_bind_param` and the SQLite DATETIME's own text formatting in
        one step: the failure route binds a dozen instants, and the two-step path cost more
        than the statements they go to. The text is the one SQLAlchemy writes, to the
        microsecond ("YYYY-MM-DD HH:MM:SS.ffffff"); tests compare the two. The request's
        `now`, bound in several statements, is formatted once."""
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)
        return _sqlite_text

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _as_utc(value: Any) -> datetime:
    """`value` as an aware UTC datetime; TypeError for what is no datetime, ValueError for a
    naive one."""
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()} cannot be stored as an instant")
    return value.astimezone(UTC)


#: The instant last written as SQLite text, and its text: a write binds the same instant (the
#: request's `now`) in several statements. One tuple, swapped whole: a thread sees a pair.
_last_sqlite_text: tuple[Any, str] = (None, "")


def _sqlite_text(value: Any) -> str | None:
    """An aware instant as the UTC text SQLite stores ("YYYY-MM-DD HH:MM:SS.ffffff")."""
    global _last_sqlite_text
    if value is None:
        return None
    seen, text = _last_sqlite_text
    if value is seen:  # the same object: datetimes are immutable
        return text
    text = _as_utc(value).isoformat(" ", "microseconds")[:-6]  # without "+00:00"
    _last_sqlite_text = (value, text)
    return text


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

    _plain_savepoints(engine.dialect)


def run_on_cursor(
    dialect: Dialect, cursor: Any, sql: str, params: Any = (), *, fetch: bool = False
) -> list[Any]:
    """`sql` on a DBAPI cursor; its rows when `fetch` and it returns any. A driver error is
    raised as Core raises it (`DBAPIError` and its kinds), so that handlers see no
    difference."""
    try:
        cursor.execute(sql, params)
        rows: list[Any] = cursor.fetchall() if fetch and cursor.description is not None else []
        return rows
    except dialect.loaded_dbapi.Error as error:
        raise DBAPIError.instance(
            sql, None, error, dialect.loaded_dbapi.Error, dialect=dialect
        ) from error


def _plain_savepoints(dialect: Dialect) -> None:
    """SAVEPOINT, RELEASE and ROLLBACK TO run as plain text on the DBAPI cursor.

    SQLAlchemy builds and compiles a new clause for each of them on every call (the compiled
    cache does not keep them): with a savepoint for every write of a group (`GroupWriter`),
    that cost more than the failure route's statements together. Same SQL, same names; a
    failure is raised as SQLAlchemy raises it."""
    quote = dialect.identifier_preparer.quote

    def run(connection: Connection, sql: str) -> None:
        cursor = connection.connection.cursor()
        try:
            run_on_cursor(dialect, cursor, sql)
        finally:
            cursor.close()

    # Set on this engine's own dialect object: other engines keep SQLAlchemy's.
    dialect.do_savepoint = lambda connection, name: run(connection, f"SAVEPOINT {quote(name)}")  # type: ignore[method-assign]
    dialect.do_release_savepoint = lambda connection, name: run(  # type: ignore[method-assign]
        connection, f"RELEASE SAVEPOINT {quote(name)}"
    )
    dialect.do_rollback_to_savepoint = lambda connection, name: run(  # type: ignore[method-assign]
        connection, f"ROLLBACK TO SAVEPOINT {quote(name)}"
    )


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
        self._group: GroupWriter | None = None

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

        The API's writes queue here instead of in the general thread pool. SQLite takes one
        writer at a time anyway: its writes run on one thread, and those that queued while a
        commit was under way share the next transaction (`GroupWriter`). PostgreSQL runs as
        many at once as the connection pool holds, each in its own transaction.
        """
        if self.dialect == "sqlite":
            if self._group is None:
                self._group = GroupWriter(self)
            return await self._group.submit(work)
        if self._writers is None:
            self._writers = ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="rewake-writer")
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
        if self._group is not None:
            self._group.stop()
            self._group = None
        if self._writers is not None:
            self._writers.shutdown(wait=True)
            self._writers = None
        self.engine.dispose()


class _Waiter:
    """One queued write: the work, and the future its caller awaits on its event loop."""

    __slots__ = ("failed", "future", "loop", "outcome", "work")

    def __init__(self, work: Callable[[Session], Any], loop: asyncio.AbstractEventLoop) -> None:
        self.work = work
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.outcome: Any = None
        self.failed = False

    def settle(self) -> None:
        """On the caller's loop: hand over the outcome (unless the caller gave up waiting)."""
        if self.future.done():
            return
        if self.failed:
            self.future.set_exception(self.outcome)
        else:
            self.future.set_result(self.outcome)


class GroupWriter:
    """SQLite's writes on one thread, with group commit: the writes that queued while the
    previous transaction ran share the next one.

    A write that raises leaves no change behind; the others commit. A group is first run
    whole, each write flushed and its objects let go before the next (no savepoints: they
    and the session transaction around each write cost as much as a failure report's
    statements). If a write raises, that run is rolled back and the group runs again with
    each write in a savepoint of its own, which undoes only the write that fails; a group
    after one that had a failure runs so from the start. The writes are pure database work
    (they log and count nothing), so running them twice changes nothing but the time taken.

    Every caller hears of its own write only after the shared COMMIT, so an answer never
    tells of a change that is not in the database; if the COMMIT itself fails, every write of
    the group fails with that error. What one transaction per write cost (BEGIN IMMEDIATE,
    COMMIT, the WAL's write and, every thousand pages, a checkpoint's fsync) is paid once per
    group.
    """

    def __init__(self, database: Database, max_group: int = GROUP_MAX) -> None:
        self._database = database
        self._max_group = max_group
        self._queue: queue.SimpleQueue[_Waiter | None] = queue.SimpleQueue()
        #: Whether the last group had a write that failed: the next one starts in savepoints.
        self._failed_last = False
        self._thread = threading.Thread(target=self._run, name="rewake-writer", daemon=True)
        self._thread.start()

    async def submit(self, work: Callable[[Session], T]) -> T:
        waiter = _Waiter(work, asyncio.get_running_loop())
        self._queue.put(waiter)
        result: T = await waiter.future
        return result

    def stop(self) -> None:
        """Finish the queued writes, then end the thread."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            stopping = False
            while len(group) < self._max_group:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                group.append(more)
            self._commit(group)
            self._hand_over(group)
            if stopping:
                return

    def _commit(self, group: list[_Waiter]) -> None:
        try:
            if not self._failed_last:
                try:
                    with self._transaction() as connection:
                        self._run_whole(group, connection)
                    return
                except _WriteFailed:  # rolled back: run again, each write in a savepoint
                    pass
            with self._transaction() as connection:
                self._failed_last = self._run_in_savepoints(group, connection)
        except BaseException as error:  # BEGIN or COMMIT failed: nothing was written
            for waiter in group:
                if not waiter.failed:
                    waiter.outcome, waiter.failed = error, True

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A write connection in a transaction, committed when the block ends without error."""
        database = self._database
        with (
            database.write_lock,
            database.write_engine.connect() as connection,
            connection.begin(),
        ):
            yield connection

    @staticmethod
    def _run_whole(group: list[_Waiter], connection: Connection) -> None:
        """Every write in the connection's transaction, in one session that never commits or
        ends it; _WriteFailed (the transaction to be rolled back) when one raises."""
        db = Session(bind=connection, join_transaction_mode="rollback_only", expire_on_commit=False)
        try:
            for waiter in group:
                waiter.outcome = waiter.work(db)
                db.flush()
                db.expunge_all()  # no object of one write is seen by the next
        except Exception as error:  # the run again sets every outcome
            raise _WriteFailed from error
        finally:
            db.close()  # in rollback_only mode this leaves the transaction alone

    def _run_in_savepoints(self, group: list[_Waiter], connection: Connection) -> bool:
        """Every write in a savepoint of its own; whether one of them failed."""
        failed = False
        db = _savepoint_session(connection)
        try:
            for waiter in group:
                if not self._attempt(waiter, db):
                    failed = True
                    db.close()  # its state after a failure is not worth trusting
                    db = _savepoint_session(connection)
        finally:
            db.close()
        return failed

    @staticmethod
    def _attempt(waiter: _Waiter, db: Session) -> bool:
        """One write in a transaction of `db` that is a savepoint: its failure undoes its
        changes only, and no object it touched is seen by the next write. False when it
        failed."""
        try:
            with db.begin():
                waiter.outcome = waiter.work(db)
        except Exception as error:
            waiter.outcome, waiter.failed = error, True
            return False
        finally:
            db.expunge_all()
        return True

    @staticmethod
    def _hand_over(group: list[_Waiter]) -> None:
        """One wake-up per event loop for the whole group."""
        by_loop: dict[asyncio.AbstractEventLoop, list[_Waiter]] = {}
        for waiter in group:
            by_loop.setdefault(waiter.loop, []).append(waiter)
        for loop, waiters in by_loop.items():
            # A closed loop (RuntimeError) has no callers left to tell; nothing may stop the
            # writer thread, or every later write would wait for ever.
            with suppress(Exception):
                loop.call_soon_threadsafe(_settle_all, waiters)


class _WriteFailed(Exception):
    """A write of a group run whole raised: its transaction is rolled back."""


def _savepoint_session(connection: Connection) -> Session:
    """A session on `connection` whose every transaction is a savepoint of the connection's,
    kept for the group's writes until one fails (a new session per write cost 130,000
    instructions a write)."""
    return Session(
        bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
    )


def _settle_all(waiters: list[_Waiter]) -> None:
    for waiter in waiters:
        waiter.settle()
