"""Queries on sessions, runs, attempts, failures, the timeline, tombstones and heartbeats."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, delete, exists, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm.attributes import instance_dict, set_committed_value
from sqlmodel import Session, SQLModel, col

from app.models import (
    AttemptRow,
    FailureRow,
    MarkRow,
    RunRow,
    SessionRow,
    SweeperHeartbeatRow,
    TimelineRow,
    TombstoneRow,
)
from app.repository.prepared import Prepared, attached, row_of


def _dialect(db: Session) -> str:
    return db.get_bind().dialect.name


# The write routes' statements are built once: building a statement costs more than running
# it on SQLite, and a built one finds its compiled form in the cache at once.

# FOR NO KEY UPDATE: it excludes every other writer of the session, yet lets a sweeper append
# timeline rows for it (their foreign key takes KEY SHARE on this row). With FOR UPDATE, a
# request holding the session and waiting for a mark deadlocked with a sweeper holding that
# mark and appending its timeline entry.
_LOCK_SESSION = Prepared.rows_of(
    SessionRow, col(SessionRow.root_id) == bindparam("root_id"), lock=True
)
_ONE_FAILURE = (
    (col(FailureRow.root_id) == bindparam("root_id"))
    & (col(FailureRow.run_id) == bindparam("run_id"))
    & (col(FailureRow.attempt) == bindparam("attempt"))
)
_FAILURE_OBSERVED_AT = Prepared(select(col(FailureRow.observed_at)).where(_ONE_FAILURE))
_STORED_ANSWER = Prepared(
    select(col(FailureRow.body_hash), col(FailureRow.answer)).where(_ONE_FAILURE)
)
_RUNS_OF_SESSION = (
    select(RunRow)
    .where(col(RunRow.root_id) == bindparam("root_id"))
    .order_by(col(RunRow.created_at))
)
_GET_RUN = Prepared.rows_of(
    RunRow,
    (col(RunRow.root_id) == bindparam("root_id")) & (col(RunRow.run_id) == bindparam("run_id")),
)
_GET_FAILURE = Prepared.rows_of(FailureRow, _ONE_FAILURE)
_TIMELINE = TimelineRow.__table__  # type: ignore[attr-defined]
_APPEND_TIMELINE = Prepared(
    insert(_TIMELINE), columns=[column.name for column in _TIMELINE.columns if column.name != "id"]
)
_TOMBSTONE_DELETED_AT = Prepared(
    select(col(TombstoneRow.deleted_at)).where(col(TombstoneRow.root_id) == bindparam("root_id"))
)


def lock_session(db: Session, root_id: str) -> SessionRow | None:
    """The session row, locked until the transaction ends (PostgreSQL; SQLite is serialized)."""
    session: SessionRow | None = _LOCK_SESSION.one(db, {"root_id": root_id})
    return session


#: What a new session row may be given beyond its key and its instants (`ensure_session`).
FIRST_VALUES = ("state", "host_seen_at", "current_run_id", "current_attempt")


def _create_session_stmt(dialect: str) -> Prepared:
    insert_fn = pg_insert if dialect == "postgresql" else sqlite_insert
    columns = ("root_id", "created_at", "updated_at", *FIRST_VALUES)
    stmt = (
        insert_fn(SessionRow)
        .values({name: bindparam(name) for name in columns})
        .on_conflict_do_nothing(index_elements=["root_id"])
        .returning(col(SessionRow.root_id))
    )
    return Prepared(stmt, results=[col(SessionRow.root_id)])


_CREATE_SESSION = {dialect: _create_session_stmt(dialect) for dialect in ("postgresql", "sqlite")}


def ensure_session(
    db: Session,
    root_id: str,
    now: datetime,
    first: Mapping[str, Any] | None = None,
    *,
    attach: bool = True,
) -> tuple[SessionRow, bool]:
    """The locked session row, created on first sight; and whether it was created now.

    A created row is `running` unless `first` (names of FIRST_VALUES) says what it is from
    the start, so that a caller that knows saves itself an UPDATE. The row this transaction
    inserts is its own until the commit, so it is known from the values inserted; only when
    another writer created it first is it read (and locked). A created row is added to the
    session unless `attach` is false: then it is a copy whose changes the caller writes
    itself (`update_now`); adding it costs a tenth of a failure report's writing."""
    values: dict[str, Any] = {
        "root_id": root_id, "state": "running", "created_at": now, "updated_at": now,
        "host_seen_at": None, "current_run_id": None, "current_attempt": None,
    }  # fmt: skip
    if first:
        values |= {name: first[name] for name in FIRST_VALUES if name in first}
    if _CREATE_SESSION[_dialect(db)].first(db, values) is not None:
        unset = {name: None for name in _LOCK_SESSION.names if name not in values}
        values |= unset
        created: SessionRow = attached(db, SessionRow, values) if attach else row_of(
            SessionRow, values
        )
        return created, True
    row = lock_session(db, root_id)
    assert row is not None  # inserted or already there, and rows are only deleted under lock
    return row, False


def note_host_seen(session: SessionRow, now: datetime) -> None:
    """The session's host sent something for it at `now` (it only ever moves later)."""
    session.host_seen_at = host_seen_at(session, now)


def host_seen_at(session: SessionRow, now: datetime) -> datetime:
    """The session's host_seen_at once its host is seen at `now`: it only ever moves later."""
    seen = session.host_seen_at
    return now if seen is None or seen < now else seen


def get_session(db: Session, root_id: str) -> SessionRow | None:
    return db.get(SessionRow, root_id)


def get_run(db: Session, root_id: str, run_id: str) -> RunRow | None:
    run: RunRow | None = _GET_RUN.one(db, {"root_id": root_id, "run_id": run_id})
    return run


def list_runs(db: Session, root_id: str) -> list[RunRow]:
    return list(db.scalars(_RUNS_OF_SESSION, {"root_id": root_id}))


def get_attempt(db: Session, root_id: str, run_id: str, attempt: int) -> AttemptRow | None:
    return db.get(AttemptRow, (root_id, run_id, attempt))


def list_attempts(db: Session, root_id: str) -> list[AttemptRow]:
    stmt = (
        select(AttemptRow)
        .where(col(AttemptRow.root_id) == root_id)
        .order_by(col(AttemptRow.run_id), col(AttemptRow.attempt))
    )
    return list(db.scalars(stmt))


def get_failure(db: Session, root_id: str, run_id: str, attempt: int) -> FailureRow | None:
    params = {"root_id": root_id, "run_id": run_id, "attempt": attempt}
    failure: FailureRow | None = _GET_FAILURE.one(db, params)
    return failure


def failure_observed_at(db: Session, root_id: str, run_id: str, attempt: int) -> datetime | None:
    """When a stored failure was observed (without loading its text).

    Failures are written with `insert_now`, never left pending in the session, so this reads
    through the connection without flushing the session first."""
    params = {"root_id": root_id, "run_id": run_id, "attempt": attempt}
    observed: datetime | None = _FAILURE_OBSERVED_AT.scalar(db, params)
    return observed


def stored_answer(
    db: Session, root_id: str, run_id: str, attempt: int
) -> tuple[str, dict[str, Any]] | None:
    """A stored failure's body fingerprint and the answer it got, if it was reported (read as
    `failure_observed_at` is)."""
    row = _STORED_ANSWER.first(db, {"root_id": root_id, "run_id": run_id, "attempt": attempt})
    return (row[0], row[1]) if row is not None else None


def _attempt_failed_stmt(dialect: str) -> Prepared:
    insert_fn = pg_insert if dialect == "postgresql" else sqlite_insert
    stmt = insert_fn(AttemptRow.__table__)  # type: ignore[attr-defined]
    upsert = stmt.on_conflict_do_update(
        index_elements=["root_id", "run_id", "attempt"],
        set_={"status": stmt.excluded.status, "failed_at": stmt.excluded.failed_at},
    )
    return Prepared(upsert, columns=["root_id", "run_id", "attempt", "status", "failed_at"])


_ATTEMPT_FAILED = {dialect: _attempt_failed_stmt(dialect) for dialect in ("postgresql", "sqlite")}


def mark_attempt_failed(
    db: Session, root_id: str, run_id: str, attempt: int, now: datetime
) -> None:
    """The attempt failed: insert it, or set an existing one's status (one statement, run at
    once: the attempt's failure row refers to it)."""
    values = {
        "root_id": root_id,
        "run_id": run_id,
        "attempt": attempt,
        "status": "failed",
        "failed_at": now,
    }
    _ATTEMPT_FAILED[_dialect(db)].run(db, values)


def list_failures(db: Session, root_id: str) -> list[FailureRow]:
    stmt = (
        select(FailureRow)
        .where(col(FailureRow.root_id) == root_id)
        .order_by(col(FailureRow.observed_at))
    )
    return list(db.scalars(stmt))


def add(db: Session, row: Any) -> None:
    """Stage a new row; it is written with the transaction."""
    db.add(row)


def insert_now(db: Session, row: SQLModel) -> None:
    """Write a new row at once, in one plain INSERT, without adding it to the session.

    For rows that the transaction does not change afterwards: the unit of work costs more than
    the statement, and rows that refer to one another are written in the order of the calls
    (a run before its attempt, the attempt before its failure). `row` stays as built (its
    table must not rely on a generated key)."""
    table = row.__table__  # type: ignore[attr-defined]
    held = instance_dict(row)  # what getattr would read, without the descriptor per column
    values = {column.name: held.get(column.key) for column in table.columns}
    _insert_into(table).run(db, values)


def update_now(db: Session, row: SQLModel, values: dict[str, Any]) -> None:
    """Set `values` (column names) on a row read in this transaction, in one plain UPDATE at
    once, and on `row` as if it had been read so.

    For the failure route's session and run, as `insert_now` is for its new rows. `row` must
    have no other unsaved change: the unit of work is left nothing to write."""
    table: Table = row.__table__  # type: ignore[attr-defined]
    keys = {f"key_{column.name}": getattr(row, column.key) for column in table.primary_key}
    _update_by_key(table, tuple(values)).run(db, keys | values)
    for name, value in values.items():
        set_committed_value(row, name, value)


_INSERTS: dict[Table, Prepared] = {}
_UPDATES_BY_KEY: dict[tuple[Table, tuple[str, ...]], Prepared] = {}


def _insert_into(table: Table) -> Prepared:
    """INSERT INTO `table` every column, from parameters named as the columns."""
    stmt = _INSERTS.get(table)
    if stmt is None:
        names = [column.name for column in table.columns]
        stmt = _INSERTS[table] = Prepared(insert(table), columns=names)
    return stmt


def _update_by_key(table: Table, names: tuple[str, ...]) -> Prepared:
    """UPDATE `table` SET `names` WHERE its key is :key_<column>."""
    stmt = _UPDATES_BY_KEY.get((table, names))
    if stmt is None:
        where = [column == bindparam(f"key_{column.name}") for column in table.primary_key]
        stmt = Prepared(update(table).where(*where), columns=names)
        _UPDATES_BY_KEY[(table, names)] = stmt
    return stmt


def append_timeline(
    db: Session,
    root_id: str,
    now: datetime,
    event: str,
    *,
    actor: str | None,
    run_id: str | None = None,
    attempt: int | None = None,
    mark_id: int | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append one entry to the session's timeline, in the caller's transaction.

    Written at once in a plain INSERT (nothing reads an entry back while writing): every
    write route appends one, and the unit of work would cost more than the statement. The
    session row must be in the database already, as it is once locked or created."""
    values = {
        "root_id": root_id,
        "at": now,
        "event": event,
        "actor": actor,
        "run_id": run_id,
        "attempt": attempt,
        "mark_id": mark_id,
        "detail": detail or {},
    }
    _APPEND_TIMELINE.run(db, values)


def append_mark_event(
    db: Session,
    mark: MarkRow,
    now: datetime,
    event: str,
    *,
    actor: str | None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append a mark's transition to its session's timeline, naming the mark's run, attempt
    and id."""
    append_timeline(
        db,
        mark.root_id,
        now,
        event,
        actor=actor,
        run_id=mark.run_id,
        attempt=mark.attempt,
        mark_id=mark.id,
        detail=detail,
    )


def list_timeline(db: Session, root_id: str, limit: int = 500) -> list[TimelineRow]:
    """The session's latest `limit` entries, oldest first."""
    stmt = (
        select(TimelineRow)
        .where(col(TimelineRow.root_id) == root_id)
        .order_by(col(TimelineRow.id).desc())
        .limit(limit)
    )
    return list(reversed(list(db.scalars(stmt))))


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """The list route's filters; None means any."""

    state: str | None = None
    mark_state: str | None = None
    failure_kind: str | None = None
    provider: str | None = None
    account_key: str | None = None


def list_sessions(
    db: Session, where: SessionFilter, *, limit: int, offset: int
) -> list[tuple[SessionRow, FailureRow | None]]:
    """Sessions, most recently changed first, each with its current failure."""
    stmt = select(SessionRow, FailureRow).outerjoin(
        FailureRow,
        (col(FailureRow.root_id) == col(SessionRow.root_id))
        & (col(FailureRow.run_id) == col(SessionRow.current_run_id))
        & (col(FailureRow.attempt) == col(SessionRow.current_attempt)),
    )
    if where.state is not None:
        stmt = stmt.where(col(SessionRow.state) == where.state)
    if where.failure_kind is not None:
        stmt = stmt.where(col(FailureRow.failure_kind) == where.failure_kind)
    if where.provider is not None:
        stmt = stmt.where(col(FailureRow.provider) == where.provider)
    if where.account_key is not None:
        stmt = stmt.where(col(FailureRow.account_key) == where.account_key)
    if where.mark_state is not None:
        stmt = stmt.where(
            exists().where(
                (col(MarkRow.root_id) == col(SessionRow.root_id))
                & (col(MarkRow.state) == where.mark_state)
            )
        )
    stmt = stmt.order_by(col(SessionRow.updated_at).desc(), col(SessionRow.root_id))
    rows = db.execute(stmt.limit(limit).offset(offset)).all()
    return [(row[0], row[1]) for row in rows]


def delete_session_rows(db: Session, root_id: str) -> None:
    """Remove a session and everything under it (children first, for the foreign keys)."""
    for table in (TimelineRow, MarkRow, FailureRow, AttemptRow, RunRow, SessionRow):
        db.execute(delete(table).where(col(table.root_id) == root_id))


def get_tombstone(db: Session, root_id: str) -> TombstoneRow | None:
    return db.get(TombstoneRow, root_id)


def tombstone_deleted_at(db: Session, root_id: str) -> datetime | None:
    """When the root_id's tombstone was written; None when it has none."""
    deleted_at: datetime | None = _TOMBSTONE_DELETED_AT.scalar(db, {"root_id": root_id})
    return deleted_at


def put_tombstone(db: Session, row: TombstoneRow) -> None:
    """Write a tombstone, replacing an older one for a root_id that was reused."""
    db.merge(row)


def purge_tombstones(db: Session, older_than: datetime) -> int:
    """Delete tombstones past their retention; the number deleted."""
    result = db.execute(delete(TombstoneRow).where(col(TombstoneRow.deleted_at) < older_than))
    count: int = result.rowcount  # type: ignore[attr-defined]
    return count


def record_heartbeat(
    db: Session, sweeper_id: str, now: datetime, *, host: str | None, pid: int | None
) -> None:
    """Say that sweeper `sweeper_id` is alive at `now`."""
    row = db.get(SweeperHeartbeatRow, sweeper_id)
    if row is None:
        db.add(
            SweeperHeartbeatRow(
                sweeper_id=sweeper_id, seen_at=now, started_at=now, host=host, pid=pid
            )
        )
    else:
        row.seen_at = now
        row.host = host
        row.pid = pid


_LATEST_HEARTBEAT = Prepared(select(func.max(col(SweeperHeartbeatRow.seen_at))))


def latest_heartbeat(db: Session) -> datetime | None:
    """When any sweeper was last seen."""
    latest: datetime | None = _LATEST_HEARTBEAT.scalar(db, {})
    return latest
