"""A clear racing an arm from two processes never leaves a live mark on an outdated attempt."""

from __future__ import annotations

import multiprocessing
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from rewake import heartbeats
from rewake.context import Context
from rewake.db.engine import Database
from rewake.errors import DomainError
from rewake.marks import repository as mark_repo
from rewake.marks import service as marks
from rewake.parsers import parse
from rewake.reports import failures
from rewake.sessions import repository as repo
from tests.support.reports import QUOTA, QUOTA_LATER

OBSERVED = datetime(2026, 11, 30, 13, 5, tzinfo=UTC)
SESSIONS = 30


def _ctx(actor: str) -> Context:
    return Context(
        now=OBSERVED + timedelta(minutes=2), actor=actor, resume_delay_s=30,
        display_zone=UTC,
    )  # fmt: skip


def _report(database: Database, root_id: str, attempt: int, message: str) -> None:
    report = failures.FailureReport(
        root_id=root_id, run_id="r1", attempt=attempt, message=message,
        observed_at=OBSERVED + timedelta(minutes=attempt), zone="Europe/Berlin",
    )  # fmt: skip
    with database.writer() as db, db.begin():
        failures.report_failure(db, report, parse=parse, ctx=_ctx("host"))


def _warm(database: Database) -> None:
    """Compile the parser's patterns and open a connection before the race starts."""
    parse(QUOTA, observed_at=OBSERVED, zone="Europe/Berlin")
    with database.reader() as db:
        heartbeats.latest_heartbeat(db)


def _pause() -> None:
    """Let the other process in: SQLite's busy handler sleeps, so back-to-back writers starve it."""
    time.sleep(0.02)


def _arm_all(url: str, roots: list[str], barrier: Any, results: Any) -> None:
    database = Database(url)
    _warm(database)
    barrier.wait()
    outcomes = []
    for root_id in roots:
        try:
            with database.writer() as db, db.begin():
                marks.set_auto_resume(
                    db, root_id, enabled=True, despite_native=False, ctx=_ctx("arm")
                )
            outcomes.append("armed")
        except DomainError as refused:
            outcomes.append(refused.code)
        _pause()
    database.dispose()
    results.put(outcomes)


def _report_all(url: str, roots: list[str], barrier: Any, results: Any) -> None:
    database = Database(url)
    _warm(database)
    barrier.wait()
    for root_id in roots:
        _report(database, root_id, 2, QUOTA_LATER)
        _pause()
    database.dispose()
    results.put(["reported"])


def test_clear_racing_arm_leaves_no_outdated_live_mark(db_url: str) -> None:
    """Arming racing a newer report from another process never leaves attempt 1's mark live."""
    database = Database(db_url)
    roots = [f"race-{uuid.uuid4().hex[:12]}" for _ in range(SESSIONS)]
    for root_id in roots:
        _report(database, root_id, 1, QUOTA)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=_arm_all, args=(db_url, roots, barrier, results)),
        context.Process(target=_report_all, args=(db_url, roots[::-1], barrier, results)),
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60), results.get(timeout=60)]
    for worker in workers:
        worker.join(timeout=10)
        assert worker.exitcode == 0
    assert set(outcomes[0] + outcomes[1]) <= {"armed", "reported"}
    seen = set()
    with database.reader() as db:
        for root_id in roots:
            session = repo.get_session(db, root_id)
            assert session is not None
            assert (session.current_run_id, session.current_attempt) == ("r1", 2)
            [mark] = mark_repo.list_marks(db, root_id)
            if mark.attempt == 1:
                assert (mark.state, mark.clear_reason) == ("cleared", "new_failure")
            else:
                assert (mark.state, mark.attempt) == ("armed", 2)
            seen.add(mark.attempt)
    assert seen == {1, 2}  # both orders happened: the lists were walked from opposite ends
    database.dispose()
