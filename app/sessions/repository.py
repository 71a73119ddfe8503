"""Queries on sessions, runs, attempts, failures, the timeline, tombstones and heartbeats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, delete, exists, func, insert, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import defer
from sqlmodel import Session, col

from rewake.db.models import (
    AttemptRow,
    FailureRow,
    MarkRow,
    RunRow,
    SessionRow,
    TimelineRow,
    TombstoneRow,
)
from rewake.errors import DomainError
from rewake.ids import RESERVED_ROOT_IDS


def _dialect(db: Session) -> str:
    return db.get_bind().dialect.name


_ONE_FAILURE = (
    (col(FailureRow.root_id) == bindparam("root_id"))
    & (col(FailureRow.run_id) == bindparam("run_id"))
    & (col(FailureRow.attempt) == bindparam("attempt"))
)
_REFRESH = {"populate_existing": True}
# The statements a failure report or a mark runs every time are built once, here, and given
# their values when they run: building and keying a statement costs more than running it.
_LOCK_SESSION = (
    select(SessionRow)
    .where(col(SessionRow.root_id) == bindparam("root_id"))
    .with_for_update(key_share=True)
)
_TOMBSTONE_DELETED_AT = select(col(TombstoneRow.deleted_at)).where(
    col(TombstoneRow.root_id) == bindparam("root_id")
)
_APPEND_TIMELINE = insert(TimelineRow.__table__)  # type: ignore[attr-defined]
_FAILURE_AND_RUN = (
    select(FailureRow, RunRow)
    .outerjoin(
        RunRow,
        (col(RunRow.root_id) == col(FailureRow.root_id))
        & (col(RunRow.run_id) == col(FailureRow.run_id)),
    )
    .where(_ONE_FAILURE)
)


def lock_session(db: Session, root_id: str) -> SessionRow | None:
    """The session row, locked until the transaction ends (PostgreSQL; SQLite is serialized).

    FOR NO KEY UPDATE: it excludes every other writer of the session, yet lets a sweeper
    append timeline rows for it (their foreign key takes KEY SHARE on this row). With FOR
    UPDATE, a request holding the session and waiting for a mark deadlocked with a sweeper
    holding that mark and appending its timeline entry."""
    return db.scalars(_LOCK_SESSION, {"root_id": root_id}, execution_options=_REFRESH).first()


#: What a new session row may be given beyond its key and its instants (`ensure_session`).
FIRST_VALUES = ("state", "host_seen_at", "current_run_id", "current_attempt")

#: A new session, by dialect: inserted unless its root_id is taken. The ORM's own upsert: the
#: row it returns (only when it was inserted) is persistent in the session, as a query would
#: have left it, so that a later change to it is written.
_INSERT_SESSION = {
    name: insert_fn(SessionRow).on_conflict_do_nothing(index_elements=["root_id"])
    .returning(SessionRow)
    for name, insert_fn in (("sqlite", sqlite_insert), ("postgresql", pg_insert))
}  # fmt: skip


def refuse_reserved(root_id: str) -> None:
    """DomainError `invalid_request` for a root id no session may take (`RESERVED_ROOT_IDS`)."""
    if root_id in RESERVED_ROOT_IDS:
        raise DomainError("invalid_request", f"{root_id!r} is reserved and cannot be a root_id")


def ensure_session(
    db: Session, root_id: str, now: datetime, first: Mapping[str, Any] | None = None
) -> tuple[SessionRow, bool]:
    """The locked session row, created on first sight; and whether it was created now.

    A created row is `running` unless `first` (names of FIRST_VALUES) says what it is from
    the start, so that a caller that knows saves itself an UPDATE. Concurrent first sights
    insert once: the loser of the race reads (and locks) the winner's row. A reserved root id
    is refused here, whichever route or command would create it."""
    refuse_reserved(root_id)
    values: dict[str, Any] = {
        "root_id": root_id, "state": "running", "host_seen_at": None, "current_run_id": None,
        "current_attempt": None, "created_at": now, "updated_at": now,
    }  # fmt: skip
    if first:
        values |= {name: first[name] for name in FIRST_VALUES if name in first}
    created = db.scalars(_INSERT_SESSION[_dialect(db)], [values]).first()
    if created is not None:
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
    return db.get(RunRow, (root_id, run_id))


def list_runs(db: Session, root_id: str) -> list[RunRow]:
    stmt = select(RunRow).where(col(RunRow.root_id) == root_id).order_by(col(RunRow.created_at))
    return list(db.scalars(stmt))


def get_attempt(db: Session, root_id: str, run_id: str, attempt: int) -> AttemptRow | None:
    return db.get(AttemptRow, (root_id, run_id, attempt))


def list_attempts(db: Session, root_id: str) -> list[AttemptRow]:
    stmt = (
        select(AttemptRow)
        .where(col(AttemptRow.root_id) == root_id)
        .order_by(col(AttemptRow.run_id), col(AttemptRow.attempt))
    )
    return list(db.scalars(stmt))


def failure_and_run(
    db: Session, root_id: str, run_id: str, attempt: int
) -> tuple[FailureRow | None, RunRow | None]:
    """A stored failure and the run it belongs to, in one query; (None, None) when the attempt
    was never reported."""
    params = {"root_id": root_id, "run_id": run_id, "attempt": attempt}
    row = db.execute(_FAILURE_AND_RUN, params).first()
    return (row[0], row[1]) if row is not None else (None, None)


def failure_observed_at(db: Session, root_id: str, run_id: str, attempt: int) -> datetime | None:
    """When a stored failure was observed (without loading its text)."""
    stmt = select(col(FailureRow.observed_at)).where(_ONE_FAILURE)
    observed: datetime | None = db.scalar(
        stmt, {"root_id": root_id, "run_id": run_id, "attempt": attempt}
    )
    return observed


def stored_answer(
    db: Session, root_id: str, run_id: str, attempt: int
) -> tuple[str, dict[str, Any]] | None:
    """A stored failure's body fingerprint and the answer it got, if it was reported (without
    loading its text)."""
    stmt = select(col(FailureRow.body_hash), col(FailureRow.answer)).where(_ONE_FAILURE)
    params = {"root_id": root_id, "run_id": run_id, "attempt": attempt}
    row = db.execute(stmt, params).first()
    return (row[0], row[1]) if row is not None else None


def mark_attempt_failed(
    db: Session, root_id: str, run_id: str, attempt: int, now: datetime
) -> None:
    """The attempt failed: insert it, or set an existing one's status (one statement, run at
    once: the attempt's failure row refers to it)."""
    values = {"root_id": root_id, "run_id": run_id, "attempt": attempt, "now": now}
    db.execute(_ATTEMPT_FAILED[_dialect(db)], values)


def _attempt_failed(insert_fn: Any) -> Any:
    stmt = insert_fn(AttemptRow.__table__).values(  # type: ignore[attr-defined]
        root_id=bindparam("root_id"), run_id=bindparam("run_id"), attempt=bindparam("attempt"),
        status="failed", failed_at=bindparam("now"),
    )  # fmt: skip
    return stmt.on_conflict_do_update(
        index_elements=["root_id", "run_id", "attempt"],
        set_={"status": stmt.excluded.status, "failed_at": stmt.excluded.failed_at},
    )


#: An attempt failed, by dialect: inserted, or its status and failed_at set.
_ATTEMPT_FAILED = {
    "sqlite": _attempt_failed(sqlite_insert),
    "postgresql": _attempt_failed(pg_insert),
}


#: A failure's columns that may be large (a megabyte of CLI text, its events): never loaded
#: with a list of failures, and an error to touch on such a row (it would load them one by
#: one, unbounded). Their parts are read in SQL (failure_text_parts), the whole with
#: failure_text.
_WITHOUT_TEXT = (
    defer(FailureRow.message, raiseload=True),  # type: ignore[arg-type]
    defer(FailureRow.cli_text, raiseload=True),  # type: ignore[arg-type]
    defer(FailureRow.events, raiseload=True),  # type: ignore[arg-type]
)


def list_failures(
    db: Session, root_id: str, attempts: Sequence[tuple[str, int]] | None = None
) -> list[FailureRow]:
    """The session's failures (of these (run_id, attempt) only, when given), without their
    text (`_WITHOUT_TEXT`)."""
    stmt = select(FailureRow).where(col(FailureRow.root_id) == root_id).options(*_WITHOUT_TEXT)
    if attempts is not None:
        if not attempts:
            return []
        stmt = stmt.where(tuple_(col(FailureRow.run_id), col(FailureRow.attempt)).in_(attempts))
    return list(db.scalars(stmt.order_by(col(FailureRow.observed_at))))


@dataclass(frozen=True, slots=True)
class TextPart:
    """A part of a stored text: `text` starts at character `start` of the whole, which is
    `chars` characters long."""

    text: str
    start: int
    chars: int


def _tail(column: Any, chars: int) -> ColumnElement[Any]:
    """The column's last `chars` characters, cut by the database (SQLite and PostgreSQL both
    count characters in length() and substr())."""
    length = func.length(column)
    return case((length <= chars, column), else_=func.substr(column, length - chars + 1, chars))


def failure_text_parts(
    db: Session, root_id: str, attempts: Sequence[tuple[str, int]], chars: int
) -> dict[tuple[str, int], tuple[TextPart, TextPart | None]]:
    """For each of these failures, the last `chars` characters of its message and of its
    cli_text (None when it has none), cut in SQL: the whole texts never leave the database."""
    if not attempts:
        return {}
    message, cli_text = col(FailureRow.message), col(FailureRow.cli_text)
    stmt = select(
        col(FailureRow.run_id),
        col(FailureRow.attempt),
        func.length(message),
        _tail(message, chars),
        func.length(cli_text),
        _tail(cli_text, chars),
    ).where(
        (col(FailureRow.root_id) == root_id)
        & tuple_(col(FailureRow.run_id), col(FailureRow.attempt)).in_(attempts)
    )
    parts: dict[tuple[str, int], tuple[TextPart, TextPart | None]] = {}
    for run_id, attempt, message_chars, message_tail, cli_chars, cli_tail in db.execute(stmt):
        shown = TextPart(message_tail, message_chars - len(message_tail), message_chars)
        cli = None if cli_tail is None else TextPart(cli_tail, cli_chars - len(cli_tail), cli_chars)
        parts[(run_id, attempt)] = (shown, cli)
    return parts


def failure_message_part(
    db: Session, root_id: str, run_id: str, attempt: int, start: int, chars: int
) -> str:
    """Characters `start` to `start + chars` of a stored failure's message, cut in SQL."""
    stmt = select(func.substr(col(FailureRow.message), start + 1, chars)).where(_ONE_FAILURE)
    part: str | None = db.scalar(stmt, {"root_id": root_id, "run_id": run_id, "attempt": attempt})
    return part or ""


def failure_text(db: Session, root_id: str, run_id: str, attempt: int, part: str) -> str | None:
    """A stored failure's whole `message` or `cli_text` ("" for a failure without cli_text);
    None when the attempt has no failure."""
    column = col(FailureRow.message) if part == "message" else col(FailureRow.cli_text)
    stmt = select(func.coalesce(column, "")).where(_ONE_FAILURE)
    text: str | None = db.scalar(stmt, {"root_id": root_id, "run_id": run_id, "attempt": attempt})
    return text


def page_of_attempts(db: Session, root_id: str, *, limit: int, offset: int) -> list[AttemptRow]:
    """The session's attempts newest first (by their run's creation, then number), `limit`
    of them from `offset`."""
    stmt = (
        select(AttemptRow)
        .join(
            RunRow,
            (col(RunRow.root_id) == col(AttemptRow.root_id))
            & (col(RunRow.run_id) == col(AttemptRow.run_id)),
        )
        .where(col(AttemptRow.root_id) == root_id)
        .order_by(
            col(RunRow.created_at).desc(), col(RunRow.run_id).desc(), col(AttemptRow.attempt).desc()
        )
        .limit(limit)
        .offset(offset)
    )
    return list(db.scalars(stmt))


def runs_named(db: Session, root_id: str, run_ids: Sequence[str]) -> list[RunRow]:
    """These runs of the session, oldest first."""
    if not run_ids:
        return []
    stmt = (
        select(RunRow)
        .where((col(RunRow.root_id) == root_id) & col(RunRow.run_id).in_(run_ids))
        .order_by(col(RunRow.created_at), col(RunRow.run_id))
    )
    return list(db.scalars(stmt))


def add(db: Session, row: Any) -> None:
    """Stage a new row; it is written with the transaction."""
    db.add(row)


def add_now(db: Session, row: Any) -> None:
    """Write a new row now, through the session, for a statement that follows and refers to
    it: the row is persistent, and a later change to it is written too."""
    db.add(row)
    db.flush()


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
    """Append one entry to the session's timeline, in the caller's transaction (one INSERT:
    nothing reads an entry back while writing)."""
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
    db.execute(_APPEND_TIMELINE, values)


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


def take_back_mark_events(
    db: Session, mark: MarkRow, events: Sequence[str], attempt_key: str
) -> int:
    """Delete the mark's timeline entries named `events` that were written under `attempt_key`
    (their detail names it), in the caller's transaction; how many."""
    stmt = select(TimelineRow).where(
        col(TimelineRow.root_id) == mark.root_id,
        col(TimelineRow.mark_id) == mark.id,
        col(TimelineRow.event).in_(events),
    )
    taken = [row for row in db.scalars(stmt) if row.detail.get("attempt_key") == attempt_key]
    for row in taken:
        db.delete(row)
    return len(taken)


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
    stmt = (
        select(SessionRow, FailureRow)
        .outerjoin(
            FailureRow,
            (col(FailureRow.root_id) == col(SessionRow.root_id))
            & (col(FailureRow.run_id) == col(SessionRow.current_run_id))
            & (col(FailureRow.attempt) == col(SessionRow.current_attempt)),
        )
        .options(*_WITHOUT_TEXT)
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
    deleted_at: datetime | None = db.scalar(_TOMBSTONE_DELETED_AT, {"root_id": root_id})
    return deleted_at


def put_tombstone(db: Session, row: TombstoneRow) -> None:
    """Write a tombstone, replacing an older one for a root_id that was reused."""
    db.merge(row)


def purge_tombstones(db: Session, older_than: datetime) -> int:
    """Delete tombstones past their retention; the number deleted."""
    result = db.execute(delete(TombstoneRow).where(col(TombstoneRow.deleted_at) < older_than))
    count: int = result.rowcount  # type: ignore[attr-defined]
    return count
