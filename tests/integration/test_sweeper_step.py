"""The sweep step on a real SQLite file and a real PostgreSQL: claim, fence, pace, send,
record, reap, expire, reconcile; never early, never twice."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from rewake.db.engine import Database
from rewake.executors.base import Outcome
from rewake.executors.webhook import WebhookExecutor
from rewake.marks import repository as mark_repo
from rewake.marks.lifecycle import start_sending
from rewake.marks.pacing import PacingRules
from rewake.session_service.actions import cancel_session
from rewake.sweeper import step
from tests.hosts.example_host import ExampleHost
from tests.support.sweeper import arm, context, marks_by_root, seed_marks

LEASE = 60.0
NO_PACING = PacingRules(max_in_flight=100, stagger_s=0)


@pytest.fixture
def prefix() -> str:
    return f"st-{uuid.uuid4().hex[:8]}"


def claim_mine(
    database: Database, now: datetime, roots: list[str], limit: int = 500
) -> list[step.Claim]:
    """Claim what is due and give back (to armed) anything another test left due."""
    claims = step.claim(database, now, limit=limit, sweeper_id="t", lease_s=LEASE)
    ids = {row.id for row in marks_by_root(database, roots).values()}
    others = [c for c in claims if c.mark_id not in ids]
    if others:
        step.release(database, now, others)
    return [c for c in claims if c.mark_id in ids]


def test_claims_only_due_marks_and_never_twice(database: Database, prefix: str) -> None:
    """Of marks due before and after now, only the due ones are claimed, and a second claim
    finds nothing more."""
    now = datetime.now(UTC)
    roots = seed_marks(
        database, 6, prefix=prefix,
        due_at=lambda n: now - timedelta(seconds=5) if n % 2 else now + timedelta(hours=1),
    )  # fmt: skip
    first = claim_mine(database, now, roots)
    second = claim_mine(database, now, roots)
    marks = marks_by_root(database, roots)
    due_ids = {marks[r].id for r in roots[1::2]}
    assert {c.mark_id for c in first} == due_ids
    assert second == []
    assert len({c.attempt_key for c in first}) == 3


def test_non_utc_reset_falls_due_at_its_instant(database: Database, prefix: str) -> None:
    """A mark whose reset was written with a -05:00 offset is due at that instant in UTC,
    not hours early: claimed one second after, not one second before."""
    eastern = datetime.fromisoformat("2026-11-30T09:00:00-05:00")
    roots = seed_marks(database, 1, prefix=prefix, due_at=lambda _n: eastern)
    before = claim_mine(database, datetime(2026, 11, 30, 13, 59, 59, tzinfo=UTC), roots)
    after = claim_mine(database, datetime(2026, 11, 30, 14, 0, 1, tzinfo=UTC), roots)
    assert before == []
    assert len(after) == 1


def test_start_commits_sending_with_sent_at(database: Database, prefix: str) -> None:
    """A started claim is sending, with sent_at set and a delivery carrying its key."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 1, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    claims = claim_mine(database, now, roots)
    started = step.start(database, now, claims, NO_PACING, lease_s=LEASE)
    (delivery,) = started.deliveries
    row = marks_by_root(database, roots)[roots[0]]
    assert row.state == "sending"
    assert row.sent_at is not None and row.attempt_key == delivery.attempt_key
    assert delivery.sent_at >= delivery.due_at


def test_cleared_or_deleted_after_claim_is_never_sent(database: Database, prefix: str) -> None:
    """A mark cancelled while claimed, and one whose session row vanished, are dropped at
    the start: nothing is sent for them."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 2, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    claims = claim_mine(database, now, roots)
    with database.writer() as db, db.begin():
        cancel_session(db, roots[0], context(now))
    with database.writer() as db, db.begin():
        from rewake.sessions.repository import delete_session_rows

        delete_session_rows(db, roots[1])
    started = step.start(database, now, claims, NO_PACING, lease_s=LEASE)
    assert started.deliveries == []
    assert sorted(started.dropped) == sorted(c.mark_id for c in claims)


def test_held_after_claim_goes_back_to_armed(database: Database, prefix: str) -> None:
    """A claimed mark whose due_at moved later is released, not sent early."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 1, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    (claim,) = claim_mine(database, now, roots)

    with database.writer() as db, db.begin():
        assert mark_repo.move_due_later(db, claim.mark_id, now + timedelta(hours=1), now)
    started = step.start(database, now, [claim], NO_PACING, lease_s=LEASE)
    assert started.deliveries == [] and started.released == [claim.mark_id]
    assert marks_by_root(database, roots)[roots[0]].state == "armed"


def test_pacing_holds_an_accounts_second_start(database: Database, prefix: str) -> None:
    """Three marks of one account due together: one starts, the others wait for the stagger
    and for the in-flight limit."""
    now = datetime.now(UTC)
    account = f"{prefix}-acct"
    roots = seed_marks(
        database, 3, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1),
        account=lambda _n: account,
    )  # fmt: skip
    claims = claim_mine(database, now, roots)
    rules = PacingRules(max_in_flight=2, stagger_s=10)
    first = step.start(database, now, claims, rules, lease_s=LEASE)
    assert len(first.deliveries) == 1
    assert set(first.waiting.values()) == {first.now + timedelta(seconds=10)}
    waiting = [c for c in claims if c.mark_id in first.waiting]
    later = first.now + timedelta(seconds=10)
    second = step.start(database, later, waiting, rules, lease_s=LEASE)
    assert len(second.deliveries) == 1
    (third,) = [c for c in waiting if c.mark_id in second.waiting]
    assert second.waiting[third.mark_id] is None  # two in flight: wait for a finish
    step.finish(database, later, [(first.deliveries[0], Outcome("done", "done"))])
    last = step.start(database, later + timedelta(seconds=10), [third], rules, lease_s=LEASE)
    assert len(last.deliveries) == 1


def test_outcome_recorded_once_for_the_key_holder(database: Database, prefix: str) -> None:
    """The outcome lands for the holder of the attempt key; a second finish changes nothing."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 1, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    started = step.start(database, now, claim_mine(database, now, roots), NO_PACING, lease_s=LEASE)
    (delivery,) = started.deliveries
    assert step.finish(database, now, [(delivery, Outcome("done", "done", "ok"))]) != [None]
    assert step.finish(database, now, [(delivery, Outcome("failed", "http_500"))]) == [None]
    row = marks_by_root(database, roots)[roots[0]]
    assert (row.state, row.outcome, row.outcome_detail) == ("done", "done", "ok")


def test_housekeeping_reaps_and_expires(database: Database, prefix: str) -> None:
    """Past their lease, a claimed mark is re-armed and a sending one becomes uncertain; a
    mark armed far past its due time expires instead of firing."""
    now = datetime.now(UTC)
    roots = seed_marks(
        database, 3, prefix=prefix,
        due_at=lambda n: now - (timedelta(days=2) if n == 2 else timedelta(seconds=1)),
    )  # fmt: skip
    marks = marks_by_root(database, roots)
    claims = step.claim(database, now, limit=500, sweeper_id="t", lease_s=1)
    mine = {c.mark_id: c for c in claims if c.mark_id in {m.id for m in marks.values()}}
    step.release(database, now, [c for c in claims if c.mark_id not in mine])
    sending_id = marks[roots[1]].id
    with database.writer() as db, db.begin():
        assert start_sending(db, [(sending_id, mine[sending_id].attempt_key or "")], now, 1) != []
    step.release(database, now, [mine[marks[roots[2]].id]])
    later = now + timedelta(seconds=5)
    done = step.housekeeping(database, later, expire_after_s=3600, tombstone_retention_days=365)
    assert marks[roots[0]].id in {m.id for m in done.rearmed}
    assert sending_id in {m.id for m in done.uncertain}
    assert marks[roots[2]].id in {m.id for m in done.expired}
    states = {root: row.state for root, row in marks_by_root(database, roots).items()}
    assert states == {roots[0]: "armed", roots[1]: "uncertain", roots[2]: "expired"}


def test_renew_keeps_a_waiting_claim(database: Database, prefix: str) -> None:
    """A renewed claim survives past its first lease; a claim lost meanwhile is reported."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 2, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    claims = claim_mine(database, now, roots)
    with database.writer() as db, db.begin():
        cancel_session(db, roots[1], context(now))
    renewed, lost = step.renew(database, now + timedelta(seconds=30), claims, lease_s=LEASE)
    assert [c.mark_id for c in renewed] == [marks_by_root(database, roots)[roots[0]].id]
    assert lost == [marks_by_root(database, roots)[roots[1]].id]
    assert renewed[0].lease_until > claims[0].lease_until


def test_uncertain_is_reconciled_through_the_lookup(database: Database, prefix: str) -> None:
    """An uncertain mark the host saw becomes done; one it never saw becomes failed
    (not_sent); neither is sent again."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 2, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    started = step.start(database, now, claim_mine(database, now, roots), NO_PACING, lease_s=0.5)
    with ExampleHost("secret-1234567890") as host:
        executor = WebhookExecutor(
            host.resume_template, "secret-1234567890", lookup_template=host.lookup_template
        )
        seen = next(d for d in started.deliveries if d.root_id == roots[0])
        assert executor.deliver(seen).state == "done"  # delivered, but the outcome was lost
        step.housekeeping(
            database, now + timedelta(seconds=2), expire_after_s=3600, tombstone_retention_days=365
        )
        step.reconcile_uncertain(database, now + timedelta(seconds=3), executor, limit=500)
        executor.close()
        assert len(host.calls()) == 1
    rows = marks_by_root(database, roots)
    assert (rows[roots[0]].state, rows[roots[0]].outcome) == ("done", "done")
    assert (rows[roots[1]].state, rows[roots[1]].outcome) == ("failed", "not_sent")


def test_armed_through_the_domain_fires_after_true_reset(database: Database, prefix: str) -> None:
    """A mark armed from a real limit message is not claimable before reset + resolution +
    delay, and is claimable right after."""
    observed = datetime(2026, 11, 30, 20, 5, tzinfo=UTC)  # 15:05 in New York
    message = "You've hit your session limit · resets 5:40pm (America/New_York)"
    mark = arm(
        database, prefix, message=message, observed_at=observed,
        now=observed + timedelta(minutes=1), zone="America/New_York",
    )  # fmt: skip
    due = datetime(2026, 11, 30, 22, 41, 30, tzinfo=UTC)  # 17:40 EST + 60 s + 30 s
    assert mark["due_at"] == "2026-11-30T22:41:30Z"
    assert claim_mine(database, due - timedelta(milliseconds=1), [prefix]) == []
    assert len(claim_mine(database, due, [prefix])) == 1


def test_outcomes_recorded_together_each_fenced_by_its_key(database: Database, prefix: str) -> None:
    """Outcomes written in one batch land for each key holder with their own detail; a mark
    settled meanwhile, or presented with another mark's key, is left alone."""
    now = datetime.now(UTC)
    roots = seed_marks(database, 3, prefix=prefix, due_at=lambda _n: now - timedelta(seconds=1))
    started = step.start(database, now, claim_mine(database, now, roots), NO_PACING, lease_s=LEASE)
    first, second, third = sorted(started.deliveries, key=lambda d: d.root_id)
    with database.writer() as db, db.begin():
        assert start_sending(db, [(first.mark_id, second.attempt_key)], now, LEASE) == []
    step.housekeeping(
        database,
        now + timedelta(seconds=LEASE + 1),
        expire_after_s=3600,
        tombstone_retention_days=365,
    )
    later = now + timedelta(seconds=LEASE + 2)
    rows = step.finish(
        database, later,
        [(first, Outcome("done", "done", "a")), (second, Outcome("failed", "http_500", "b")),
         (third, Outcome("done", "done", "c"))],
    )  # fmt: skip
    assert rows == [None, None, None]  # every lease had run out: the reaper said uncertain
    fresh = seed_marks(database, 3, prefix=prefix + "b", due_at=lambda _n: now)
    started = step.start(database, now, claim_mine(database, now, fresh), NO_PACING, lease_s=LEASE)
    a, b, c = sorted(started.deliveries, key=lambda d: d.root_id)
    forged = type(c)(**{**{f: getattr(c, f) for f in c.__slots__}, "attempt_key": a.attempt_key})
    rows = step.finish(
        database, now,
        [(a, Outcome("done", "done", "a")), (b, Outcome("failed", "http_500", "b")),
         (forged, Outcome("done", "done", "forged"))],
    )  # fmt: skip
    assert [row.state if row else None for row in rows] == ["done", "failed", None]
    marks = marks_by_root(database, fresh)
    assert [(marks[r].state, marks[r].outcome_detail) for r in fresh] == [
        ("done", "a"), ("failed", "b"), ("sending", None),
    ]  # fmt: skip
