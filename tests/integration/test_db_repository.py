"""The repository's write functions leave persistent rows behind: later changes to them are
written, and the database's constraints still hold; on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError

from rewake.context import Context
from rewake.db.engine import Database
from rewake.db.models import FailureRow, MarkRow, RunRow, SessionRow
from rewake.marks import repository as mark_repo
from rewake.marks.states import IllegalTransition
from rewake.parsers import parse
from rewake.reports import failures
from rewake.sessions import repository as repo

NOW = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)


def _root() -> str:
    return f"repo-{uuid.uuid4().hex[:12]}"


def _session_and_run(database: Database, root_id: str) -> None:
    with database.writer() as db, db.begin():
        db.add(SessionRow(root_id=root_id, state="paused", created_at=NOW, updated_at=NOW))
        db.flush()
        db.add(RunRow(root_id=root_id, run_id="r1", status="paused", current_attempt=1,
                      created_at=NOW, updated_at=NOW))  # fmt: skip
        db.flush()
        repo.mark_attempt_failed(db, root_id, "r1", 1, NOW)


def _armed_mark(root_id: str) -> dict[str, Any]:
    """The columns of an armed mark for attempt 1 of the session's run r1."""
    return {"root_id": root_id, "run_id": "r1", "attempt": 1, "state": "armed", "reset_at": NOW,
            "resolution_s": 0, "due_at": NOW, "armed_by": "t", "armed_at": NOW,
            "despite_native": False, "updated_at": NOW}  # fmt: skip


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
    mark = _armed_mark(root_id)

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


def test_a_report_writes_its_new_run_and_failure_through_the_session(
    database: Database,
) -> None:
    """The run and the failure a report creates become persistent in the transaction's
    session (its unit of work writes them): a change made to either later in the same
    transaction is written with the commit."""
    root_id = _root()
    report = failures.FailureReport(
        root_id=root_id, run_id="r2", attempt=3, message="usage limit reached",
        observed_at=NOW, zone="UTC",
    )  # fmt: skip
    ctx = Context(now=NOW, actor="host", resume_delay_s=30, display_zone=UTC)
    written: list[object] = []
    with database.writer() as db, db.begin():
        event.listen(db, "pending_to_persistent", lambda _db, row: written.append(row))
        failures.report_failure(db, report, parse=parse, ctx=ctx)
        db.flush()
        (run,) = [row for row in written if isinstance(row, RunRow)]
        (failure,) = [row for row in written if isinstance(row, FailureRow)]
        assert (run.run_id, run.current_attempt, failure.attempt) == ("r2", 3, 3)
        run.status, failure.reported_by = "running", "later"
    with database.reader() as db:
        stored_run = db.get(RunRow, (root_id, "r2"))
        stored_failure = db.get(FailureRow, (root_id, "r2", 3))
        assert stored_run is not None and stored_run.status == "running"
        assert stored_failure is not None and stored_failure.reported_by == "later"


def test_failure_and_run_reads_the_pair_or_nothing(database: Database) -> None:
    """failure_and_run gives the stored failure with its own run, and (None, None) for an
    attempt never reported."""
    root_id = _root()
    _session_and_run(database, root_id)
    with database.writer() as db, db.begin():
        db.add(FailureRow(
            root_id=root_id, run_id="r1", attempt=1, message="limit", message_chars=5,
            truncated=False, verdict={}, verdict_kind="not_stated", native_auto_continue=False,
            failure_kind="provider_quota", failure_kind_stated=False, halted=False,
            observed_at=NOW, received_at=NOW, body_hash="h", answer={}, reported_by="t",
        ))  # fmt: skip
    with database.reader() as db:
        failure, run = repo.failure_and_run(db, root_id, "r1", 1)
        assert failure is not None and (failure.attempt, failure.message) == (1, "limit")
        assert run is not None and (run.run_id, run.current_attempt) == ("r1", 1)
        assert repo.failure_and_run(db, root_id, "r1", 2) == (None, None)


def test_a_write_outside_the_lifecycle_is_refused_before_it_reaches_the_database(
    database: Database,
) -> None:
    """Moving a mark along a change the lifecycle lacks (armed -> sending, done -> armed)
    raises IllegalTransition, and the mark is left as it was."""
    root_id = _root()
    _session_and_run(database, root_id)
    mark = _armed_mark(root_id)
    with database.writer() as db, db.begin():
        mark_id = mark_repo.insert_mark(db, mark).id
    assert mark_id is not None
    illegal = pytest.raises(IllegalTransition, match="from armed to sending")
    with illegal, database.writer() as db, db.begin():
        mark_repo.move_mark(db, mark_id, from_states=["armed"], to_state="sending", now=NOW)
    with pytest.raises(IllegalTransition, match="from done to armed"), database.writer() as db:
        mark_repo.reap(db, NOW, from_state="done", to_state="armed")
    with database.reader() as db:
        stored = db.get(MarkRow, mark_id)
    assert stored is not None and stored.state == "armed" and stored.updated_at == NOW
