"""SQLite's API writes share transactions (app.db.GroupWriter): each write's failure undoes
its own changes only, a failed COMMIT fails every write of the group, and nobody hears of a
write before its COMMIT."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

from app.db import Database
from app.domain.errors import DomainError
from app.models import SessionRow
from app.repository import sessions as repo

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


def _add_session(root_id: str) -> Any:
    def work(db: Session) -> int:
        db.add(SessionRow(root_id=root_id, state="running", created_at=NOW, updated_at=NOW))
        db.flush()
        return id(db.connection())

    return work


def _stored(database: Database, root_ids: list[str]) -> set[str]:
    with database.reader() as db:
        return {root_id for root_id in root_ids if db.get(SessionRow, root_id) is not None}


async def _queued_behind_a_held_write(database: Database, works: list[Any]) -> list[Any]:
    """Run `works` as writes queued while a first write holds the writer, so that they share
    one transaction; their outcomes (results or exceptions)."""
    release = threading.Event()

    def hold(db: Session) -> None:
        release.wait(10)

    holding = asyncio.ensure_future(database.write(hold))
    await asyncio.sleep(0.05)  # the writer thread now waits in `hold`
    queued = [asyncio.ensure_future(database.write(work)) for work in works]
    await asyncio.sleep(0.05)
    release.set()
    await holding
    return await asyncio.gather(*queued, return_exceptions=True)


def test_a_failing_write_in_a_group_undoes_only_itself(sqlite_url: str) -> None:
    """Of three writes sharing a transaction, the one raising DomainError gets its error and
    leaves no row; the two others are committed, in one transaction."""
    database = Database(sqlite_url)
    roots = [f"group-{uuid.uuid4().hex[:10]}" for _ in range(3)]

    def refused(db: Session) -> None:
        _add_session(roots[1])(db)
        raise DomainError("invalid_request", "refused after writing")

    works = [_add_session(roots[0]), refused, _add_session(roots[2])]
    outcomes = asyncio.run(_queued_behind_a_held_write(database, works))
    assert isinstance(outcomes[1], DomainError)
    assert outcomes[0] == outcomes[2]  # the same connection: one shared transaction
    assert _stored(database, roots) == {roots[0], roots[2]}
    database.dispose()


def test_a_failed_commit_fails_every_write_of_the_group(sqlite_url: str) -> None:
    """A COMMIT refused (a deferred foreign key left broken by one write) fails all the writes
    that shared it, and none of them is stored."""
    database = Database(sqlite_url)
    roots = [f"group-{uuid.uuid4().hex[:10]}" for _ in range(2)]

    def breaks_the_commit(db: Session) -> None:
        db.connection().exec_driver_sql("PRAGMA defer_foreign_keys = ON")
        db.connection().exec_driver_sql(
            "INSERT INTO runs (root_id, run_id, status, current_attempt, created_at, updated_at)"
            " VALUES ('no-such-session', 'r1', 'paused', 1, '2026-11-30', '2026-11-30')"
        )

    works = [_add_session(roots[0]), breaks_the_commit, _add_session(roots[1])]
    outcomes = asyncio.run(_queued_behind_a_held_write(database, works))
    assert all(isinstance(outcome, IntegrityError) for outcome in outcomes)
    assert _stored(database, roots) == set()
    database.dispose()


def test_a_write_is_answered_only_after_its_commit(sqlite_url: str) -> None:
    """When a write's answer arrives, another connection already sees its row."""
    database = Database(sqlite_url)
    root_id = f"group-{uuid.uuid4().hex[:10]}"

    async def write_then_look() -> set[str]:
        await database.write(_add_session(root_id))
        return _stored(database, [root_id])

    assert asyncio.run(write_then_look()) == {root_id}
    database.dispose()


@pytest.mark.parametrize("writes", [1, 40])
def test_every_queued_write_is_answered(sqlite_url: str, writes: int) -> None:
    """However many writes queue (more than one group holds), each gets its own answer."""
    database = Database(sqlite_url)
    roots = [f"group-{uuid.uuid4().hex[:10]}" for _ in range(writes)]

    async def all_at_once() -> list[Any]:
        return await asyncio.gather(*(database.write(_add_session(root)) for root in roots))

    assert len(asyncio.run(all_at_once())) == writes
    assert _stored(database, roots) == set(roots)
    database.dispose()


def test_a_write_failing_in_its_flush_leaves_the_next_write_of_the_group_whole(
    sqlite_url: str,
) -> None:
    """A write whose ORM flush fails (a duplicate key) gets its IntegrityError; the next
    write of the same group starts on a clean session and is committed."""
    database = Database(sqlite_url)
    taken, after = (f"group-{uuid.uuid4().hex[:10]}" for _ in range(2))
    asyncio.run(database.write(_add_session(taken)))

    def sees_nothing_of_the_last(db: Session) -> list[Any]:
        seen = list(db.identity_map.values())
        _add_session(after)(db)
        return seen

    works = [_add_session(taken), sees_nothing_of_the_last]
    outcomes = asyncio.run(_queued_behind_a_held_write(database, works))
    assert isinstance(outcomes[0], IntegrityError)
    assert outcomes[1] == []
    assert _stored(database, [taken, after]) == {taken, after}
    database.dispose()


def test_no_object_of_one_write_is_seen_by_the_next(sqlite_url: str) -> None:
    """Writes sharing a transaction share no objects: the second finds an empty session."""
    database = Database(sqlite_url)
    first, second = (f"group-{uuid.uuid4().hex[:10]}" for _ in range(2))

    def count_objects_then_add(root_id: str) -> Any:
        def work(db: Session) -> tuple[int, SessionRow]:
            seen = len(db.identity_map)
            row = SessionRow(root_id=root_id, state="running", created_at=NOW, updated_at=NOW)
            db.add(row)
            db.flush()
            return seen, row  # the answer holds the object: the session's map is weak

        return work

    outcomes = asyncio.run(
        _queued_behind_a_held_write(
            database, [count_objects_then_add(first), count_objects_then_add(second)]
        )
    )
    assert [seen for seen, _row in outcomes] == [0, 0]
    database.dispose()


def test_a_savepoint_statement_that_fails_raises_as_sqlalchemy_raises(sqlite_url: str) -> None:
    """SAVEPOINT, RELEASE and ROLLBACK TO run as plain text, and an error among them is raised
    as SQLAlchemy's OperationalError, not the driver's."""
    database = Database(sqlite_url)
    dialect = database.engine.dialect
    with database.engine.connect() as connection, connection.begin():
        dialect.do_savepoint(connection, "rewake_test")
        dialect.do_rollback_to_savepoint(connection, "rewake_test")
        dialect.do_release_savepoint(connection, "rewake_test")
        with pytest.raises(OperationalError, match="no such savepoint"):
            dialect.do_release_savepoint(connection, "never_made")
    database.dispose()


def test_a_group_run_again_after_a_failure_writes_each_other_write_once(
    sqlite_url: str,
) -> None:
    """A group first runs whole; when a write raises, it is rolled back and run again in
    savepoints: the other writes' appends are stored exactly once, the failing one's never."""
    database = Database(sqlite_url)
    root_id = f"group-{uuid.uuid4().hex[:10]}"
    asyncio.run(database.write(_add_session(root_id)))

    def append(event: str, fail: bool = False) -> Any:
        def work(db: Session) -> str:
            repo.append_timeline(db, root_id, NOW, event, actor="test")
            if fail:
                raise DomainError("invalid_request", "refused after appending")
            return event

        return work

    works = [append("first"), append("refused", fail=True), append("last")]
    outcomes = asyncio.run(_queued_behind_a_held_write(database, works))
    assert outcomes[0] == "first" and outcomes[2] == "last"
    assert isinstance(outcomes[1], DomainError)
    with database.reader() as db:
        events = [row.event for row in repo.list_timeline(db, root_id)]
    assert sorted(events) == ["first", "last"]
    database.dispose()
