"""Every instant is stored as UTC through one column type, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.dialects import sqlite

from rewake.db.columns import UTCDateTime
from rewake.db.engine import Database
from rewake.db.models import MarkRow, SessionRow
from rewake.marks import lifecycle as sweeper
from rewake.marks import repository as mark_repo

EST = timezone(timedelta(hours=-5))


def _session_with_mark(database: Database, due_at: datetime) -> str:
    root_id = f"utc-{uuid.uuid4().hex[:12]}"
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    with database.writer() as db, db.begin():
        db.add(SessionRow(root_id=root_id, state="paused", created_at=now, updated_at=now))
        db.flush()
        db.add(
            MarkRow(
                root_id=root_id, run_id="r1", attempt=1, state="armed", reset_at=due_at,
                resolution_s=0, due_at=due_at, armed_by="test", armed_at=now,
                despite_native=False, updated_at=now,
            )
        )  # fmt: skip
    return root_id


def test_a_non_utc_time_falls_due_at_its_instant(db_url: str) -> None:
    """A mark due at 09:00-05:00 is not due at 13:59:59Z and is due at 14:00:00Z."""
    database = Database(db_url)
    root_id = _session_with_mark(database, datetime(2026, 11, 30, 9, 0, tzinfo=EST))
    for now, expected in [
        (datetime(2026, 11, 30, 13, 59, 59, tzinfo=UTC), False),
        (datetime(2026, 11, 30, 14, 0, 0, tzinfo=UTC), True),
    ]:
        with database.writer() as db, db.begin():
            claimed = sweeper.claim_due(db, now, 10_000, "utc-test", 30)
        assert (root_id in {mark.root_id for mark in claimed}) is expected
    with database.reader() as db:
        mark = mark_repo.latest_mark(db, root_id)
    assert mark is not None
    assert mark.due_at == datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
    assert mark.due_at.tzinfo is UTC
    database.dispose()


def test_sqlite_stores_utc_text(sqlite_url: str) -> None:
    """On SQLite the stored text is the UTC wall time, so text order is time order."""
    database = Database(sqlite_url)
    root_id = _session_with_mark(database, datetime(2026, 11, 30, 9, 0, tzinfo=EST))
    with database.reader() as db:
        raw = db.execute(
            text("SELECT due_at FROM marks WHERE root_id = :r"), {"r": root_id}
        ).scalar_one()
    assert str(raw).startswith("2026-11-30 14:00:00")
    database.dispose()


def test_naive_datetimes_are_refused(sqlite_url: str) -> None:
    """Writing a naive datetime is an error, never a guess at its zone."""
    database = Database(sqlite_url)
    with pytest.raises(Exception, match="naive datetime"):
        _session_with_mark(database, datetime(2026, 11, 30, 9, 0))
    database.dispose()


def test_the_sqlite_bind_refuses_what_is_no_aware_datetime() -> None:
    """The SQLite bind keeps UTCDateTime's checks: None stays NULL, naive and non-datetimes
    raise."""
    dialect = sqlite.dialect()
    process = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert process is not None
    assert process(None) is None
    with pytest.raises(ValueError, match="naive datetime"):
        process(datetime(2026, 11, 30, 9, 0))
    with pytest.raises(TypeError, match="expected a datetime"):
        process("2026-11-30 09:00:00")


def test_the_sqlite_bind_gives_each_instant_its_own_text_when_they_alternate() -> None:
    """Each instant is bound as its own UTC text: alternating instants, and the same wall time
    in another zone, each get the right text."""
    dialect = sqlite.dialect()
    process = UTCDateTime().dialect_impl(dialect).bind_processor(dialect)
    assert process is not None
    first = datetime(2026, 11, 30, 9, 0, tzinfo=EST)
    second = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    at_14, at_09 = "2026-11-30 14:00:00.000000", "2026-11-30 09:00:00.000000"
    texts = [process(value) for value in (first, second, first, first, second)]
    assert texts == [at_14, at_09, at_14, at_14, at_09]
