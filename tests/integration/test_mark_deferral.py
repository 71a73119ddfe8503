"""A deferred send (the resume program proved it sent nothing: an open CLI holds the
conversation) puts the mark back to armed, fenced like every outcome, on SQLite and PostgreSQL
(docs/design.md#states)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlmodel import col

from rewake.db.engine import Database
from rewake.db.models import TimelineRow
from rewake.executors.base import Delivery, Outcome
from rewake.marks.lifecycle import defer, reap_lost_leases
from rewake.marks.pacing import PacingRules
from rewake.session_service.actions import cancel_session
from rewake.sweeper import step
from tests.support.sweeper import context, marks_by_root, seed_marks

LEASE = 60.0
NO_PACING = PacingRules(max_in_flight=100, stagger_s=0)
HELD = "an open Claude Code (pid 4242) holds this conversation; nothing was sent, the mark waits"


@pytest.fixture
def root(database: Database) -> str:
    """One session with one mark due a second ago."""
    now = datetime.now(UTC)
    prefix = f"df-{uuid.uuid4().hex[:8]}"
    (root_id,) = seed_marks(
        database, 1, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1)
    )
    return root_id


def send(database: Database, root_id: str, now: datetime) -> Delivery:
    """Claim the session's due mark and commit it `sending`, as a sweeper does."""
    mark_id = marks_by_root(database, [root_id])[root_id].id
    claimed = step.claim_or_expire(
        database, now, limit=1, sweeper_id="sweeper-a", lease_s=LEASE, only_ids=[mark_id or 0]
    )
    (delivery,) = step.start(database, now, claimed.claims, NO_PACING, lease_s=LEASE).deliveries
    return delivery


def events(database: Database, root_id: str, name: str) -> list[TimelineRow]:
    stmt = select(TimelineRow).where(TimelineRow.root_id == root_id, TimelineRow.event == name)  # type: ignore[arg-type]
    with database.reader() as db:
        return list(db.scalars(stmt))


def timeline(database: Database, root_id: str) -> list[TimelineRow]:
    """The session's timeline, oldest first."""
    stmt = select(TimelineRow).where(col(TimelineRow.root_id) == root_id)
    with database.reader() as db:
        return list(db.scalars(stmt.order_by(col(TimelineRow.id))))


def test_a_deferred_send_waits_armed_again_with_its_reason(database: Database, root: str) -> None:
    """sending -> armed: due again `defer_s` later, its claim, key, lease and sent_at dropped
    (nothing left), the reason kept as the outcome detail and told once on the timeline."""
    now = datetime.now(UTC)
    delivery = send(database, root, now)
    (row,) = step.finish(database, now, [(delivery, Outcome("armed", "deferred", HELD))],
                         defer_s=45)  # fmt: skip
    assert row is not None
    mark = marks_by_root(database, [root])[root]
    assert mark.state == "armed"
    assert mark.due_at == now + timedelta(seconds=45)
    assert (mark.claimed_by, mark.attempt_key, mark.lease_until, mark.sent_at) == (None,) * 4
    assert (mark.outcome, mark.outcome_detail) == ("deferred", HELD)
    (told,) = events(database, root, "mark_deferred")
    assert told.detail == {"reason": HELD, "due_at": told.detail["due_at"]}
    assert told.actor == "sweeper-a"


def test_a_mark_looked_at_again_is_told_once_per_reason(database: Database, root: str) -> None:
    """Deferred twice for the same reason, then for another: two timeline entries, not three;
    each look again claims afresh under a new attempt key."""
    now = datetime.now(UTC)
    keys = []
    for n, reason in enumerate([HELD, HELD, "its tmux pane does not show it at its prompt"]):
        at = now + timedelta(seconds=10 * n)
        delivery = send(database, root, at)
        keys.append(delivery.attempt_key)
        step.finish(database, at, [(delivery, Outcome("armed", "deferred", reason))], defer_s=5)
    assert len(set(keys)) == 3
    assert [e.detail["reason"] for e in events(database, root, "mark_deferred")] == [
        HELD, "its tmux pane does not show it at its prompt",
    ]  # fmt: skip


def test_a_look_deferred_again_for_the_same_reason_leaves_no_entry(
    database: Database, root: str
) -> None:
    """Four looks, the first three deferred for one reason, the fourth for another: the
    second and third leave no timeline entry (their claim and send are taken back with the
    deferral), the first and fourth leave theirs; the session's other entries stay."""
    now = datetime.now(UTC)
    before = [e.event for e in timeline(database, root)]
    other = "its tmux pane does not show it at its prompt"
    for n, reason in enumerate([HELD, HELD, HELD, other]):
        at = now + timedelta(seconds=10 * n)
        delivery = send(database, root, at)
        step.finish(database, at, [(delivery, Outcome("armed", "deferred", reason))], defer_s=5)
    after = [e.event for e in timeline(database, root)]
    look = ["mark_claimed", "mark_sending", "mark_deferred"]
    assert after == before + look + look, after
    assert len(events(database, root, "mark_claimed")) == 2


def test_a_look_taken_back_leaves_the_send_that_follows_it_told(
    database: Database, root: str
) -> None:
    """Deferred twice for one reason, then sent: the send's claim and send entries stay
    beside its outcome, whatever the looks before it took back."""
    now = datetime.now(UTC)
    for n in range(2):
        at = now + timedelta(seconds=10 * n)
        delivery = send(database, root, at)
        step.finish(database, at, [(delivery, Outcome("armed", "deferred", HELD))], defer_s=5)
    at = now + timedelta(seconds=20)
    delivery = send(database, root, at)
    step.finish(database, at, [(delivery, Outcome("done", "started"))], defer_s=5)
    marks = [e for e in timeline(database, root) if e.event.startswith("mark_")]
    look = ["mark_claimed", "mark_sending"]
    assert [e.event for e in marks][-6:] == [*look, "mark_deferred", *look, "mark_done"]
    assert marks[-3].detail["attempt_key"] == delivery.attempt_key


def test_only_the_holder_of_the_key_defers_a_mark_still_sending(
    database: Database, root: str
) -> None:
    """Another attempt key defers nothing; nor does any key once the mark left sending (the
    reaper made it uncertain: it may have been sent, and is never waited on again)."""
    now = datetime.now(UTC)
    delivery = send(database, root, now)
    later = now + timedelta(seconds=5)
    with database.writer() as db, db.begin():
        wrong = defer(db, delivery.mark_id, "another-key", later, later, HELD)
    assert wrong is None
    assert marks_by_root(database, [root])[root].state == "sending"
    past_lease = now + timedelta(seconds=LEASE + 1)
    with database.writer() as db, db.begin():
        reap_lost_leases(db, past_lease)
    (row,) = step.finish(database, past_lease, [(delivery, Outcome("armed", "deferred", HELD))])
    assert row is None
    assert marks_by_root(database, [root])[root].state == "uncertain"


def test_a_deferred_mark_is_still_cleared_by_a_cancel(database: Database, root: str) -> None:
    """A mark waiting after a deferral is armed like any other: a cancel clears it, and the
    sweeper never claims it again."""
    now = datetime.now(UTC)
    delivery = send(database, root, now)
    step.finish(database, now, [(delivery, Outcome("armed", "deferred", HELD))], defer_s=1)
    with database.writer() as db, db.begin():
        cancel_session(db, root, context(now))
    mark = marks_by_root(database, [root])[root]
    assert (mark.state, mark.clear_reason) == ("cleared", "cancel")
    claimed = step.claim_or_expire(
        database, now + timedelta(seconds=5), limit=1, sweeper_id="b", lease_s=LEASE,
        only_ids=[delivery.mark_id],
    )  # fmt: skip
    assert claimed.claims == []
