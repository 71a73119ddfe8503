"""The sweep step as plain functions: each takes `now`, opens its own transaction, and returns
what it did. The runtime (rewake.sweeper.runtime) only calls these.

`now` is read once at the edge, a timer turn or a sweep tick, through `database_clock`: on
PostgreSQL that is the database's clock, so that all sweepers, on whatever machines, agree on
when a mark is due.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlmodel import Session

from rewake.db.engine import Database
from rewake.db.models import MarkRow
from rewake.executors.base import Delivery, Executor, Lookup, Outcome
from rewake.heartbeats import record_heartbeat
from rewake.marks import lifecycle
from rewake.marks.lifecycle import Claim as Claim  # the sweeper's claims, by this name too
from rewake.marks.lifecycle import SendResult
from rewake.marks.pacing import PacingRules
from rewake.marks.states import MarkState
from rewake.sessions.tombstones import purge_expired

#: How long a start may wait for a lock on PostgreSQL before backing off (below the server's
#: deadlock_timeout of 1 s, so that in any lock cycle with an API request the sweeper yields).
START_LOCK_TIMEOUT_MS = 500
#: How long a deferred mark waits before it is looked at again (REWAKE_DEFER_RECHECK_S).
DEFER_RECHECK_S = 60.0


def delivery_of(row: MarkRow, sent_at: datetime, cli_session_id: str | None) -> Delivery:
    assert row.id is not None and row.attempt_key is not None
    return Delivery(
        mark_id=row.id,
        root_id=row.root_id,
        run_id=row.run_id,
        attempt=row.attempt,
        attempt_key=row.attempt_key,
        reset_at=row.reset_at,
        resolution_s=row.resolution_s,
        due_at=row.due_at,
        armed_by=row.armed_by,
        armed_at=row.armed_at,
        sent_at=sent_at,
        account_key=row.account_key,
        cli_session_id=cli_session_id,
    )


def database_clock(database: Database, fallback: datetime) -> datetime:
    """The instant to act on: the database's clock on PostgreSQL, `fallback` on SQLite (where
    every sweeper shares this machine's clock)."""
    if database.dialect != "postgresql":
        return fallback
    with database.reader() as db:
        return lifecycle.database_now(db, fallback)


def heartbeat(
    database: Database,
    now: datetime,
    sweeper_id: str,
    *,
    host: str | None,
    pid: int | None,
    executor: str,
) -> None:
    """Say that this sweeper is alive and what it does with a due mark (/readyz and the marks'
    warnings read it)."""
    with database.writer() as db, db.begin():
        record_heartbeat(db, sweeper_id, now, host=host, pid=pid, executor=executor)


@dataclass(frozen=True, slots=True)
class Housekeeping:
    """What one sweep's housekeeping changed."""

    rearmed: list[MarkRow]
    uncertain: list[MarkRow]
    expired: list[MarkRow]
    purged_tombstones: int = 0


def housekeeping(
    database: Database,
    now: datetime,
    *,
    expire_after_s: float,
    tombstone_retention_days: int,
    host_unseen_s: float | None = None,
) -> Housekeeping:
    """Reap expired leases (claimed -> armed, sending -> uncertain), expire marks still armed
    `expire_after_s` past their due time (a resume that late is not sent) and, when
    `host_unseen_s` is set, armed marks whose host was last seen longer ago than that; and
    purge the tombstones past their retention (their root_ids may start new sessions)."""
    with database.writer() as db, db.begin():
        reaped = lifecycle.reap_lost_leases(db, now)
        expired = lifecycle.expire_late(db, now - timedelta(seconds=expire_after_s), now)
        expired += _expire_host_unseen(db, now, host_unseen_s)
        purged = purge_expired(db, now, tombstone_retention_days)
    return Housekeeping(reaped.rearmed, reaped.uncertain, expired, purged)


def _expire_host_unseen(
    db: Session, now: datetime, host_unseen_s: float | None, *, due_only: bool = False
) -> list[MarkRow]:
    """armed -> expired (host_unseen) for marks whose host was last seen more than
    `host_unseen_s` before `now` (only those already due, with `due_only`); none when off."""
    if host_unseen_s is None:
        return []
    seen_before = now - timedelta(seconds=host_unseen_s)
    return lifecycle.expire_host_unseen(db, seen_before, now, due_by=now if due_only else None)


def claim(
    database: Database,
    now: datetime,
    *,
    limit: int,
    sweeper_id: str,
    lease_s: float,
    exclude_accounts: Sequence[str] = (),
    host_unseen_s: float | None = None,
) -> list[Claim]:
    """Claim up to `limit` due marks for this sweeper (one statement, earliest due first),
    none of `exclude_accounts`; see `claim_or_expire` for `host_unseen_s`."""
    return claim_or_expire(
        database, now, limit=limit, sweeper_id=sweeper_id, lease_s=lease_s,
        exclude_accounts=exclude_accounts, host_unseen_s=host_unseen_s,
    ).claims  # fmt: skip


@dataclass(frozen=True, slots=True)
class Claimed:
    """What one claim changed: the claims taken, and the due marks expired instead."""

    claims: list[Claim]
    expired: list[MarkRow]


def claim_or_expire(
    database: Database,
    now: datetime,
    *,
    limit: int,
    sweeper_id: str,
    lease_s: float,
    exclude_accounts: Sequence[str] = (),
    host_unseen_s: float | None = None,
    only_ids: Sequence[int] | None = None,
) -> Claimed:
    """`claim`, after expiring, in the same transaction, the due marks whose host was last
    seen more than `host_unseen_s` before `now` (when set): such a mark is never claimed.
    With `only_ids`, only those marks are claimed (`rewake run` firing its own mark)."""
    if limit <= 0:
        return Claimed([], [])
    with database.writer() as db, db.begin():
        expired = _expire_host_unseen(db, now, host_unseen_s, due_only=True)
        rows = lifecycle.claim_due(
            db, now, limit, sweeper_id, lease_s, exclude_accounts, only_ids=only_ids
        )
    return Claimed([Claim.of(row) for row in rows], expired)


@dataclass(slots=True, kw_only=True)
class Started(lifecycle.Starts):
    """The outcome of one start at `now`: what became of each claim (rewake.marks.lifecycle's
    Starts: waiting for pacing, queued past the start's limit, dropped, released), and the
    deliveries to send now, one for each mark that moved to sending."""

    now: datetime
    deliveries: list[Delivery] = field(default_factory=list)


def start(
    database: Database,
    now: datetime,
    claims: Sequence[Claim],
    rules: PacingRules,
    *,
    lease_s: float,
    limit: int | None = None,
) -> Started:
    """Move the claims that pacing lets start from claimed to sending, at most `limit` of them
    (earliest due first), in one durable commit (synchronous=FULL on SQLite): nothing is sent
    before this returns, and each delivery returned must leave at once, as its lease and its
    sent_at (the signed timestamp) start at `now`. The caller passes as `limit` the sends it
    can make now (its free workers); the claims past it stay claimed.

    Each mark is re-read under a lock: a claim lost to a clear, a delete or the reaper is
    dropped, and one whose due_at was moved later (an account hold) goes back to armed, so a
    held mark never starts before its new due_at."""
    with database.durable_writer() as db, db.begin():
        started = Started(now=now)
        lifecycle.start(
            db, now, claims, rules, lease_s=lease_s, limit=limit,
            lock_timeout_ms=START_LOCK_TIMEOUT_MS, into=started,
        )  # fmt: skip
        started.deliveries = [delivery_of(row, now, sid) for row, sid in started.sending]
    return started


def renew(
    database: Database, now: datetime, claims: Sequence[Claim], *, lease_s: float
) -> tuple[list[Claim], list[int]]:
    """Extend the leases of claims waiting for pacing; the renewed claims, and the ids lost."""
    renewed: list[Claim] = []
    lost: list[int] = []
    with database.writer() as db, db.begin():
        lease_until = now + timedelta(seconds=lease_s)
        for claim_ in claims:
            if lifecycle.renew(db, claim_, lease_until, now):
                renewed.append(
                    Claim(claim_.mark_id, claim_.attempt_key, claim_.account_key,
                          claim_.due_at, lease_until)
                )  # fmt: skip
            else:
                lost.append(claim_.mark_id)
    return renewed, lost


def release(database: Database, now: datetime, claims: Sequence[Claim]) -> int:
    """Give claims back (claimed -> armed), e.g. at shutdown; how many were still held."""
    released = 0
    with database.writer() as db, db.begin():
        for claim_ in claims:
            row = lifecycle.release(
                db, claim_.mark_id, claim_.attempt_key, now, reason="sweeper stopping"
            )
            if row is not None:
                released += 1
    return released


def finish(
    database: Database,
    now: datetime,
    results: Sequence[tuple[Delivery, Outcome]],
    *,
    defer_s: float = DEFER_RECHECK_S,
) -> list[MarkRow | None]:
    """sending -> each outcome's state, for the holder of the attempt key, in one
    transaction; a row for each send, in order, or None where the mark was settled meanwhile
    (a later attempt's report, the reaper). An outcome `armed` defers the mark (nothing was
    sent): armed again, due `defer_s` from `now`."""
    sends = [SendResult(d.mark_id, d.attempt_key, o.state, o.code, o.detail)
             for d, o in results if o.state != MarkState.ARMED]  # fmt: skip
    with database.writer() as db, db.begin():
        moved = {row.id: row for row in lifecycle.settle(db, sends, now)}
        for delivery, outcome in results:
            if outcome.state == MarkState.ARMED:
                due = now + timedelta(seconds=defer_s)
                reason = outcome.detail or outcome.code
                row = lifecycle.defer(db, delivery.mark_id, delivery.attempt_key, now, due, reason)
                moved.update({row.id: row} if row is not None else {})
    return [moved.get(delivery.mark_id) for delivery, _ in results]


def earliest_due(database: Database, exclude_accounts: Sequence[str] = ()) -> datetime | None:
    """When the next armed mark falls due (leaving out accounts this sweeper cannot take)."""
    with database.reader() as db:
        return lifecycle.earliest_due(db, exclude_accounts)


@dataclass(frozen=True, slots=True)
class Reconciled:
    mark_id: int
    state: str


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """One round of lookups: the marks settled, how many were asked about, and the id the
    next round starts after (0: from the first uncertain mark again)."""

    settled: list[Reconciled]
    asked: int
    next_after_id: int


def reconcile_uncertain(
    database: Database,
    now: datetime,
    executor: Executor,
    *,
    limit: int = 20,
    after_id: int = 0,
    clock: Callable[[], datetime] | None = None,
    keep_going: Callable[[], bool] = lambda: True,
) -> Reconciliation:
    """Ask the host's lookup route about up to `limit` uncertain marks, taking them in turn
    (id order from the first after `after_id`, then from the start): seen -> done, never seen
    -> failed (not_sent). No answer leaves the mark uncertain, to be asked about again in a
    later round; nothing is ever re-sent. With `clock`, each lookup and each settle reads it
    (a round may take a while: each lookup may take the executor's whole deadline), else
    all happen at `now`. The round stops early once `keep_going()` is false."""
    with database.reader() as db:
        candidates = lifecycle.uncertain_marks(db, limit, after_id=after_id)
        if len(candidates) < limit and after_id > 0:
            wrapped = lifecycle.uncertain_marks(db, limit - len(candidates))
            candidates += [row for row in wrapped if row.id is not None and row.id <= after_id]
    settled: list[Reconciled] = []
    asked = 0
    last_id = 0
    for row in candidates:
        if not keep_going():
            break
        at = now if clock is None else clock()
        found = executor.lookup(delivery_of(row, row.updated_at, None), at)
        asked += 1
        last_id = row.id or 0
        if found is None:
            continue
        if clock is not None:
            at = database_clock(database, clock())
        result = _settle_uncertain(database, at, row, found)
        if result is not None:
            settled.append(result)
    return Reconciliation(settled, asked, last_id)


def _settle_uncertain(
    database: Database, now: datetime, row: MarkRow, found: Lookup
) -> Reconciled | None:
    assert row.id is not None
    said = found.detail or ("seen" if found.received else "never seen")
    with database.writer() as db, db.begin():
        moved = lifecycle.resolve_uncertain(
            db, row.id, delivered=found.received, why=f"host lookup: {said}", now=now,
            actor="sweeper", event="mark_reconciled", attempt_key=row.attempt_key,
        )  # fmt: skip
        if moved is None:
            return None
        return Reconciled(row.id, moved.state)
