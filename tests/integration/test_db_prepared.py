"""Statements run on the DBAPI cursor (app.repository.prepared) write and read exactly what
Core and the ORM write and read, raise what Core raises, and keep the session's objects right;
on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from app.db import Database
from app.models import FailureRow, MarkRow, RunRow, SessionRow
from app.repository import marks as mark_repo
from app.repository import sessions as repo
from app.repository.prepared import Prepared, attached, row_of

EST = timezone(timedelta(hours=-5))
NOW = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)


def _root() -> str:
    return f"prep-{uuid.uuid4().hex[:12]}"


def _failure_values(root_id: str, **changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "root_id": root_id, "run_id": "r1", "attempt": 1, "message": "limit · ünïcode",
        "message_chars": 15, "truncated": False,
        "verdict": {"kind": "provider_quota", "reset_at": "2026-11-30T14:00:00Z", "n": [1, None]},
        "verdict_kind": "provider_quota", "provider": "claude", "refusal_code": None,
        "reset_at": datetime(2026, 11, 30, 9, 0, tzinfo=EST), "resolution_s": 60,
        "native_auto_continue": False, "failure_kind": "provider_quota",
        "failure_kind_stated": False, "observed_at": NOW, "received_at": NOW, "zone": None,
        "cli_session_id": None, "account_key": None, "halted": False, "capture": None,
        "events": None, "body_hash": "h" * 64, "answer": {"a": {"b": "ç"}}, "reported_by": "t",
    }  # fmt: skip
    return values | changes


def _session_and_run(database: Database, root_id: str) -> None:
    with database.writer() as db, db.begin():
        db.add(SessionRow(root_id=root_id, state="paused", created_at=NOW, updated_at=NOW))
        db.flush()
        db.add(RunRow(root_id=root_id, run_id="r1", status="paused", current_attempt=1,
                      created_at=NOW, updated_at=NOW))  # fmt: skip
        db.flush()
        repo.mark_attempt_failed(db, root_id, "r1", 1, NOW)


def test_a_row_inserted_on_the_cursor_reads_back_as_core_wrote_it(database: Database) -> None:
    """The same failure inserted through Core and through a Prepared INSERT reads back equal
    through the ORM: instants in UTC (an EST reset kept as its instant), JSON, None, unicode."""
    through_core, through_cursor = _root(), _root()
    for root_id in (through_core, through_cursor):
        _session_and_run(database, root_id)
    table = FailureRow.__table__  # type: ignore[attr-defined]
    prepared = Prepared(insert(table), columns=[column.name for column in table.columns])
    with database.writer() as db, db.begin():
        db.connection().execute(insert(table), _failure_values(through_core))
        prepared.run(db, _failure_values(through_cursor))
    with database.reader() as db:
        core = db.get(FailureRow, (through_core, "r1", 1))
        cursor = db.get(FailureRow, (through_cursor, "r1", 1))
        assert core is not None and cursor is not None
        assert cursor.model_dump() | {"root_id": None} == core.model_dump() | {"root_id": None}
        assert cursor.reset_at == datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
        assert cursor.events is None and cursor.answer == {"a": {"b": "ç"}}


def test_a_prepared_select_converts_what_it_reads(database: Database) -> None:
    """Reading a stored failure on the cursor gives aware UTC instants and decoded JSON, equal
    to what the ORM loads from the same row."""
    root_id = _root()
    _session_and_run(database, root_id)
    with database.writer() as db, db.begin():
        db.add(FailureRow(**_failure_values(root_id)))
    with database.reader() as db:
        fast = repo.get_failure(db, root_id, "r1", 1)
    with database.reader() as db:
        slow = db.scalars(select(FailureRow).where(col(FailureRow.root_id) == root_id)).one()
    assert fast is not None
    assert fast.model_dump() == slow.model_dump()
    assert fast.observed_at.tzinfo is UTC and fast.verdict["n"] == [1, None]


def test_a_cursor_error_is_raised_as_core_raises_it(database: Database) -> None:
    """A duplicate key on the cursor raises sqlalchemy's IntegrityError (the API's handlers and
    the runner's store tell database errors apart by these classes)."""
    root_id = _root()
    _session_and_run(database, root_id)
    table = RunRow.__table__  # type: ignore[attr-defined]
    prepared = Prepared(insert(table), columns=[column.name for column in table.columns])
    run = {"root_id": root_id, "run_id": "r1", "status": "paused", "current_attempt": 1,
           "created_at": NOW, "updated_at": NOW}  # fmt: skip
    with pytest.raises(IntegrityError), database.writer() as db, db.begin():
        prepared.run(db, run)


def test_an_attached_row_is_the_sessions_object_and_its_changes_are_written(
    database: Database,
) -> None:
    """`attached` refreshes the object the session already holds (as populate_existing does)
    and a new object it adds is persistent: a change to it is written at the flush."""
    root_id = _root()
    _session_and_run(database, root_id)
    with database.writer() as db, db.begin():
        held = db.get(SessionRow, root_id)
        assert held is not None
        locked = repo.lock_session(db, root_id)
        assert locked is held
    with database.writer() as db, db.begin():
        locked = repo.lock_session(db, root_id)
        assert locked is not None and locked in db
        locked.state = "running"  # written by the ORM at commit, as for a loaded row
    with database.reader() as db:
        stored = db.get(SessionRow, root_id)
        assert stored is not None and stored.state == "running"


def test_a_session_created_by_ensure_session_takes_later_changes(database: Database) -> None:
    """The session row `ensure_session` inserts is persistent: a later attribute change is
    written, and a second call finds it (created False)."""
    root_id = _root()
    with database.writer() as db, db.begin():
        created, was_new = repo.ensure_session(db, root_id, NOW)
        assert was_new and created.current_run_id is None
        created.cancelled_at, created.cancelled_by = NOW, "t"
    with database.writer() as db, db.begin():
        again, was_new = repo.ensure_session(db, root_id, NOW)
        assert not was_new and again.cancelled_at == NOW and again.cancelled_by == "t"


def test_an_inserted_mark_gets_its_id_and_the_live_index_still_refuses_a_second(
    database: Database,
) -> None:
    """insert_mark returns the persistent mark with its id, the values given and NULL for the
    rest, with nothing left to write; a later change to it is written; a second live mark for
    the session is refused by the partial unique index, as IntegrityError."""
    root_id = _root()
    _session_and_run(database, root_id)
    mark = {"root_id": root_id, "run_id": "r1", "attempt": 1, "state": "armed", "reset_at": NOW,
            "resolution_s": 0, "due_at": NOW, "armed_by": "t", "armed_at": NOW,
            "despite_native": False, "updated_at": NOW}  # fmt: skip

    with database.writer() as db, db.begin():
        first = mark_repo.insert_mark(db, mark)
        assert first.id is not None and first in db and not db.dirty
        held = (first.armed_by, first.due_at, first.claimed_by, first.sent_at)
        assert held == ("t", NOW, None, None)
        assert mark_repo.live_mark(db, root_id) is first
        first.account_key = "later"
    with database.reader() as db:
        stored = db.get(MarkRow, first.id)
        assert stored is not None and stored.account_key == "later" and stored.clear_reason is None
    with pytest.raises(IntegrityError), database.writer() as db, db.begin():
        mark_repo.insert_mark(db, mark)


def test_row_of_holds_the_values_as_loaded_state() -> None:
    """row_of builds an object whose attributes are the values given, with no pending change."""
    row = row_of(RunRow, {"root_id": "a", "run_id": "b", "status": "paused",
                          "current_attempt": 2, "created_at": NOW, "updated_at": NOW})  # fmt: skip
    assert (row.root_id, row.run_id, row.current_attempt) == ("a", "b", 2)
    assert row.model_dump()["status"] == "paused"


def test_attached_refreshes_a_stale_object(database: Database) -> None:
    """An object the session holds with values another writer changed since is refreshed by
    the next locked read, as populate_existing refreshes it."""
    root_id = _root()
    _session_and_run(database, root_id)
    with database.writer() as db, db.begin():
        held = db.get(SessionRow, root_id)
        assert held is not None
        db.connection().exec_driver_sql(
            "UPDATE sessions SET state = 'finished' WHERE root_id = %s"
            if database.dialect == "postgresql"
            else "UPDATE sessions SET state = 'finished' WHERE root_id = ?",
            (root_id,),
        )
        assert attached(db, SessionRow, _row_values(db, root_id)) is held
        assert held.state == "finished"


def _row_values(db: Any, root_id: str) -> dict[str, Any]:
    columns = SessionRow.__table__.columns  # type: ignore[attr-defined]
    row = db.connection().execute(select(*columns).where(columns.root_id == root_id)).one()
    return dict(row._mapping)


def test_a_statement_after_a_commit_runs_in_the_new_transaction(database: Database) -> None:
    """The connection a session's statements run on is kept per transaction: after a commit
    the next statement begins a new transaction, whose rollback undoes it."""
    kept, undone = _root(), _root()
    with database.writer() as db:
        with db.begin():
            repo.ensure_session(db, kept, NOW)
        with db.begin():
            repo.ensure_session(db, undone, NOW)
            db.rollback()
    with database.reader() as db:
        assert db.get(SessionRow, kept) is not None
        assert db.get(SessionRow, undone) is None


def test_a_savepoint_begun_after_a_statement_still_holds_the_next_one(
    database: Database,
) -> None:
    """A nested transaction begun after the session's first statement is emitted before the
    next one, so rolling it back undoes that statement and nothing before it."""
    before, inside = _root(), _root()
    with database.writer() as db, db.begin():
        repo.ensure_session(db, before, NOW)
        nested = db.begin_nested()
        repo.ensure_session(db, inside, NOW)
        nested.rollback()
    with database.reader() as db:
        assert db.get(SessionRow, before) is not None
        assert db.get(SessionRow, inside) is None
