"""REWAKE_MARK_HOST_UNSEEN_S on a real SQLite file and a real PostgreSQL: every host request
records when the host was seen; a mark whose host went unseen too long expires instead of
firing, at the claim and at the sweep; with the setting off nothing changes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from rewake.db.engine import Database
from rewake.db.models import MarkRow, SessionRow, TimelineRow
from rewake.executors.log import LogExecutor
from rewake.marks.pacing import PacingRules
from rewake.marks.service import set_auto_resume
from rewake.notifications.webhook import Notifier
from rewake.session_service.actions import manual_resume, record_attempt
from rewake.settings import Settings
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper
from tests.support.sweeper import arm, context, marks_by_root

UNSEEN_S = 3600.0


class RecordingNotifier(Notifier):
    """Keeps the notices instead of POSTing them."""

    def __init__(self) -> None:
        self.notices: list[tuple[int | None, str, str | None]] = []

    def mark_changed(self, row: MarkRow, now: datetime) -> None:
        self.notices.append((row.id, row.state, row.outcome_detail))

    def close(self) -> None:
        pass


@pytest.fixture
def prefix() -> str:
    return f"hu-{uuid.uuid4().hex[:8]}"


def make_sweeper(
    database: Database, notifier: Notifier | None, host_unseen_s: float | None
) -> Sweeper:
    config = SweeperConfig(pacing=PacingRules(100, 0), host_unseen_s=host_unseen_s)
    return Sweeper(
        database, LogExecutor(), config, SweeperMetrics(CollectorRegistry()), notifier=notifier
    )


def arm_seen(database: Database, root: str, *, seen: datetime, reset: datetime) -> MarkRow:
    """Arm a mark whose host last reported (its failure) at `seen`; the mark."""
    message = f"Claude AI usage limit reached|{int(reset.timestamp())}"
    arm(database, root, message=message, observed_at=seen, now=seen, delay_s=0)
    return marks_by_root(database, [root])[root]


def timeline(database: Database, root: str) -> list[TimelineRow]:
    with database.reader() as db:
        return list(db.scalars(select(TimelineRow).where(TimelineRow.root_id == root)))  # type: ignore[arg-type]


def fire_and_settle(sweeper: Sweeper, now: datetime) -> None:
    """One timer turn, then let its sends finish and their outcomes be written."""
    sweeper.dispatcher.fire(now)
    sweeper.dispatcher.close(now)


def test_every_host_request_records_the_host_seen(database: Database, prefix: str) -> None:
    """A failure, an attempts report and a manual resume each set host_seen_at; a user's
    request does not."""
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    arm_seen(database, prefix, seen=t0, reset=t0 + timedelta(minutes=5))

    def seen() -> datetime | None:
        with database.reader() as db:
            row = db.get(SessionRow, prefix)
        assert row is not None
        return row.host_seen_at

    assert seen() == t0
    with database.writer() as db, db.begin():
        set_auto_resume(
            db, prefix, enabled=False, despite_native=False, ctx=context(t0 + timedelta(minutes=1))
        )
    assert seen() == t0
    t2 = t0 + timedelta(minutes=2)
    with database.writer() as db, db.begin():
        record_attempt(db, prefix, "r1", 2, "started", context(t2))
    assert seen() == t2
    t3 = t0 + timedelta(minutes=3)
    with database.writer() as db, db.begin():
        manual_resume(db, prefix, "r1", context(t3))
    assert seen() == t3


def test_recently_seen_host_fires(database: Database, prefix: str) -> None:
    """With the setting on, a due mark whose host was seen within it is sent as usual."""
    now = datetime.now(UTC).replace(microsecond=0)
    seen = now - timedelta(minutes=5)
    arm_seen(database, prefix, seen=seen, reset=seen + timedelta(seconds=30))
    notifier = RecordingNotifier()
    fire_and_settle(make_sweeper(database, notifier, UNSEEN_S), now)
    row = marks_by_root(database, [prefix])[prefix]
    assert (row.state, row.outcome) == ("logged", "logged")
    assert row.sent_at is not None


def test_unseen_host_expires_at_the_claim_and_the_sweep(database: Database, prefix: str) -> None:
    """With the setting on, a due mark whose host went unseen longer is expired at the claim
    (never sent), and the sweep expires one not yet due; each with a host_unseen timeline
    entry and a notice."""
    now = datetime.now(UTC).replace(microsecond=0)
    seen = now - timedelta(seconds=UNSEEN_S + 600)
    due_root, later_root = f"{prefix}-due", f"{prefix}-later"
    due = arm_seen(database, due_root, seen=seen, reset=seen + timedelta(seconds=30))
    later = arm_seen(database, later_root, seen=seen, reset=now + timedelta(hours=1))
    notifier = RecordingNotifier()
    sweeper = make_sweeper(database, notifier, UNSEEN_S)

    sweeper.dispatcher.fire(now)  # a timer turn: no housekeeping
    rows = marks_by_root(database, [due_root, later_root])
    assert (rows[due_root].state, rows[due_root].outcome_detail) == ("expired", "host_unseen")
    assert rows[due_root].sent_at is None and rows[due_root].attempt_key is None
    assert rows[later_root].state == "armed"

    sweeper.sweep(now)
    sweeper.dispatcher.close(now)
    rows = marks_by_root(database, [due_root, later_root])
    assert (rows[later_root].state, rows[later_root].outcome_detail) == ("expired", "host_unseen")
    assert rows[due_root].sent_at is None
    for root, mark in ((due_root, due), (later_root, later)):
        events = [e for e in timeline(database, root) if e.event == "mark_expired"]
        assert [e.detail["reason"] for e in events] == ["host_unseen"]
        assert (mark.id, "expired", "host_unseen") in notifier.notices
        assert not [e for e in timeline(database, root) if e.event == "mark_claimed"]


def test_setting_off_changes_nothing(database: Database, prefix: str) -> None:
    """With the setting off (the default), a mark whose host went unseen for hours fires."""
    assert Settings().mark_host_unseen_s is None
    assert SweeperConfig.from_settings(Settings()).host_unseen_s is None
    now = datetime.now(UTC).replace(microsecond=0)
    seen = now - timedelta(hours=3)
    arm_seen(database, prefix, seen=seen, reset=seen + timedelta(seconds=30))
    sweeper = make_sweeper(database, RecordingNotifier(), None)
    sweeper.sweep(now)
    sweeper.dispatcher.close(now)
    row = marks_by_root(database, [prefix])[prefix]
    assert (row.state, row.outcome) == ("logged", "logged")


def test_setting_reaches_the_sweeper(monkeypatch: pytest.MonkeyPatch) -> None:
    """REWAKE_MARK_HOST_UNSEEN_S is read into the sweeper's config."""
    monkeypatch.setenv("REWAKE_MARK_HOST_UNSEEN_S", "900")
    assert SweeperConfig.from_settings(Settings()).host_unseen_s == 900.0
