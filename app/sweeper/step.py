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

from rewake.context import iso
from rewake.db.engine import Database
from rewake.db.models import MarkRow
from rewake.executors.base import Delivery, Executor, Lookup, Outcome
from rewake.marks import repository as mark_repo
from rewake.marks.pacing import PacingRules, accounts_of, plan_starts
from rewake.marks.states import MarkState
from rewake.marks.sweep import (
    SendResult,
    claim_due_marks,
    defer_send,
    mark_sending,
    reap_expired_leases,
    record_outcomes,
)
from rewake.sessions import repository as repo
from rewake.sessions.tombstones import purge_expired

#: How long a start may wait for a lock on PostgreSQL before backing off (below the server's
#: deadlock_timeout of 1 s, so that in any lock cycle with an API request the sweeper yields).
START_LOCK_TIMEOUT_MS = 500
#: How long a deferred mark waits before it is looked at again (REWAKE_DEFER_RECHECK_S).
DEFER_RECHECK_S = 60.0


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim this sweeper holds: the mark, the key that fences it, and when it is due."""

    mark_id: int
    attempt_key: str
    account_key: str | None
    due_at: datetime
    lease_until: datetime

    @classmethod
    def of(cls, row: MarkRow) -> Claim:
        assert row.id is not None and row.attempt_key is not None
        assert row.lease_until is not None
        return cls(row.id, row.attempt_key, row.account_key, row.due_at, row.lease_until)


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


def _timeline(
    db: Session, row: MarkRow, now: datetime, event: str, actor: str, **detail: object
) -> None:
    repo.append_timeline(
        db, row.root_id, now, event, actor=actor, run_id=row.run_id, attempt=row.attempt,
        mark_id=row.id, detail=dict(detail),
    )  # fmt: skip


def database_clock(database: Database, fallback: datetime) -> datetime:
    """The instant to act on: the database's clock on PostgreSQL, `fallback` on SQLite (where
    every sweeper shares this machine's clock)."""
    if database.dialect != "postgresql":
        return fallback
    with database.reader() as db:
        return mark_repo.database_now(db, fallback)


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
        mark_repo.record_heartbeat(db, sweeper_id, now, host=host, pid=pid, executor=executor)


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
        reaped = reap_expired_leases(db, now)
        expired = mark_repo.expire_armed_before(db, now - timedelta(seconds=expire_after_s), now)
        for row in expired:
            _timeline(db, row, now, "mark_expired", "sweeper", due_at=iso(row.due_at))
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
    expired = mark_repo.expire_host_unseen(db, seen_before, now, due_by=now if due_only else None)
    for row in expired:
        _timeline(
            db, row, now, "mark_expired", "sweeper", due_at=iso(row.due_at),
            reason=mark_repo.HOST_UNSEEN, host_seen_before=iso(seen_before),
        )  # fmt: skip
    return expired


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
        rows = claim_due_marks(
            db, now, limit, sweeper_id, lease_s, exclude_accounts, only_ids=only_ids
        )
    return Claimed([Claim.of(row) for row in rows], expired)


@dataclass(slots=True)
class Started:
    """The outcome of one start: deliveries to send now, claims that wait for pacing (with
    the instant to look again, None: when a send of the account finishes), claims that stay
    claimed until a worker is free (`queued`: past the start's limit), and claims that are no
    longer this sweeper's (cleared, deleted, reaped, or released because their due_at moved
    later)."""

    now: datetime
    deliveries: list[Delivery] = field(default_factory=list)
    waiting: dict[int, datetime | None] = field(default_factory=dict)
    queued: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)


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
        started = Started(now)
        mark_repo.limit_lock_waits(db, START_LOCK_TIMEOUT_MS)
        mark_repo.lock_accounts(db, [c.account_key for c in claims if c.account_key is not None])
        current = mark_repo.lock_marks(db, [c.mark_id for c in claims])
        rows: dict[int, MarkRow] = {}
        for claim_ in claims:
            row = current.get(claim_.mark_id)
            if row is None or row.state != "claimed" or row.attempt_key != claim_.attempt_key:
                started.dropped.append(claim_.mark_id)
            elif row.due_at > now:
                mark_repo.release_claim(db, claim_.mark_id, claim_.attempt_key, now)
                _timeline(db, row, now, "mark_released", "sweeper", due_at=iso(row.due_at))
                started.released.append(claim_.mark_id)
            else:
                rows[claim_.mark_id] = row
        candidates = [
            (mark_id, row.account_key)
            for mark_id, row in sorted(rows.items(), key=lambda item: (item[1].due_at, item[0]))
        ]
        loads = mark_repo.account_loads(db, accounts_of(candidates))
        plan = plan_starts(candidates, loads, rules, now, limit=limit)
        started.waiting.update(plan.wait)
        started.queued.extend(plan.later)
        sessions = mark_repo.cli_session_ids(db, [rows[mark_id] for mark_id in plan.start])
        mark_repo.record_starts(
            db,
            [acct for acct in (rows[m].account_key for m in plan.start) if acct is not None],
            now,
        )
        held = [(mark_id, rows[mark_id].attempt_key or "") for mark_id in plan.start]
        moved = {row.id: row for row in mark_sending(db, held, now, lease_s)}
        for mark_id in plan.start:
            row = moved.get(mark_id)
            if row is None:  # pragma: no cover - the row is locked by this transaction
                started.dropped.append(mark_id)
                continue
            session_id = sessions.get((row.root_id, row.run_id, row.attempt))
            started.deliveries.append(delivery_of(row, now, session_id))
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
            if mark_repo.renew_claim(db, claim_.mark_id, claim_.attempt_key, lease_until, now):
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
            row = mark_repo.release_claim(db, claim_.mark_id, claim_.attempt_key, now)
            if row is not None:
                _timeline(db, row, now, "mark_released", "sweeper", reason="sweeper stopping")
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
             for d, o in results if o.state != "armed"]  # fmt: skip
    with database.writer() as db, db.begin():
        moved = {row.id: row for row in record_outcomes(db, sends, now)}
        for d, o in results:
            if o.state == "armed":
                due = now + timedelta(seconds=defer_s)
                row = defer_send(db, d.mark_id, d.attempt_key, now, due, o.detail or o.code)
                moved.update({row.id: row} if row is not None else {})
    return [moved.get(delivery.mark_id) for delivery, _ in results]


def earliest_due(database: Database, exclude_accounts: Sequence[str] = ()) -> datetime | None:
    """When the next armed mark falls due (leaving out accounts this sweeper cannot take)."""
    with database.reader() as db:
        return mark_repo.earliest_armed_due(db, exclude_accounts)


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
        candidates = mark_repo.uncertain_marks(db, limit, after_id=after_id)
        if len(candidates) < limit and after_id > 0:
            wrapped = mark_repo.uncertain_marks(db, limit - len(candidates))
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
    state, outcome = ("done", "done") if found.received else ("failed", "not_sent")
    said = found.detail or ("seen" if found.received else "never seen")
    with database.writer() as db, db.begin():
        moved = mark_repo.move_mark(
            db, row.id, from_states=(MarkState.UNCERTAIN,), to_state=state, now=now,
            attempt_key=row.attempt_key, outcome=outcome, outcome_detail=f"host lookup: {said}",
        )  # fmt: skip
        if moved is None:
            return None
        _timeline(db, moved, now, "mark_reconciled", "sweeper", outcome=outcome)
    return Reconciled(row.id, state)
