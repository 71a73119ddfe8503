"""Every query on marks, behind rewake.marks.lifecycle and rewake.marks.service (nothing
outside rewake.marks imports it). Every state change is a compare-and-set, checked against the
lifecycle (rewake.marks.states): the row count decides who won."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    String,
    bindparam,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql import ColumnElement
from sqlmodel import Session, col

from rewake.db.models import (
    AccountPacingRow,
    FailureRow,
    MarkRow,
    SessionRow,
)
from rewake.marks.pacing import AccountLoad
from rewake.marks.states import LIVE_STATES, MarkState, check_transition

_RETURN = {"synchronize_session": False, "populate_existing": True}


_LATEST_MARK = (
    select(MarkRow)
    .where(col(MarkRow.root_id) == bindparam("root_id"))
    .order_by(col(MarkRow.id).desc())
    .limit(1)
)
_REFRESH = {"populate_existing": True}
# Statements every PUT auto-resume runs, built once (see rewake.sessions.repository).
_LIVE_MARK = select(MarkRow).where(
    col(MarkRow.root_id) == bindparam("root_id"), col(MarkRow.state).in_(LIVE_STATES)
)
_ATTEMPT_RESUMED_BEFORE = select(
    exists().where(
        col(MarkRow.root_id) == bindparam("root_id"),
        col(MarkRow.run_id) == bindparam("run_id"),
        col(MarkRow.attempt) == bindparam("attempt"),
        col(MarkRow.state).not_in(LIVE_STATES),
        or_(
            col(MarkRow.clear_reason).is_(None),
            col(MarkRow.clear_reason).not_in(bindparam("rearmable", expanding=True)),
        ),
    )
)


def live_mark(db: Session, root_id: str) -> MarkRow | None:
    """The session's armed, claimed or sending mark (there is at most one)."""
    return db.scalars(_LIVE_MARK, {"root_id": root_id}, execution_options=_REFRESH).first()


def latest_mark(db: Session, root_id: str) -> MarkRow | None:
    """The session's most recent mark, live or ended."""
    return db.scalars(_LATEST_MARK, {"root_id": root_id}, execution_options=_REFRESH).first()


def list_marks(db: Session, root_id: str) -> list[MarkRow]:
    """Every mark the session had, oldest first."""
    stmt = select(MarkRow).where(col(MarkRow.root_id) == root_id).order_by(col(MarkRow.id))
    return list(db.scalars(stmt, execution_options={"populate_existing": True}))


def attempt_resumed_before(
    db: Session, root_id: str, run_id: str, attempt: int, rearmable: Sequence[str]
) -> bool:
    """Whether a mark of this attempt ended other than by a clear reason in `rearmable`."""
    params = {"root_id": root_id, "run_id": run_id, "attempt": attempt, "rearmable": rearmable}
    return bool(db.scalar(_ATTEMPT_RESUMED_BEFORE, params))


def marks_of_run_in(
    db: Session, root_id: str, run_id: str, states: Sequence[str], below_attempt: int
) -> list[MarkRow]:
    """The run's marks in `states` for attempts before `below_attempt`."""
    stmt = select(MarkRow).where(
        col(MarkRow.root_id) == root_id,
        col(MarkRow.run_id) == run_id,
        col(MarkRow.state).in_(states),
        col(MarkRow.attempt) < below_attempt,
    )
    return list(db.scalars(stmt, execution_options={"populate_existing": True}))


def insert_mark(db: Session, values: Mapping[str, Any]) -> MarkRow:
    """Write a new mark now, so that its id is known (and the live index is checked); the
    row, persistent in `db`. `values` are its columns by name (those not given are NULL)."""
    mark = MarkRow(**values)
    db.add(mark)
    db.flush()
    return mark


def move_mark(
    db: Session,
    mark_id: int,
    *,
    from_states: Sequence[str],
    to_state: str,
    now: datetime,
    attempt_key: str | None = None,
    **values: Any,
) -> MarkRow | None:
    """Compare-and-set a mark's state; the updated row, or None when another writer won."""
    target = check_transition(from_states, to_state)
    stmt = update(MarkRow).where(col(MarkRow.id) == mark_id, col(MarkRow.state).in_(from_states))
    if attempt_key is not None:
        stmt = stmt.where(col(MarkRow.attempt_key) == attempt_key)
    stmt = stmt.values(state=target, updated_at=now, **values).returning(MarkRow)
    return db.scalars(stmt, execution_options=_RETURN).first()


def move_held_marks(
    db: Session,
    held: Sequence[tuple[int, str]],
    *,
    from_state: str,
    to_state: str,
    now: datetime,
    **values: Any,
) -> list[MarkRow]:
    """Compare-and-set several marks in one statement, each on its state and on its own
    attempt key (`held` is (mark id, attempt key) pairs); the rows that moved."""
    target = check_transition([from_state], to_state)
    if not held:
        return []
    stmt = (
        update(MarkRow)
        .where(
            col(MarkRow.id).in_([mark_id for mark_id, _ in held]),
            tuple_(col(MarkRow.id), col(MarkRow.attempt_key)).in_(list(held)),
            col(MarkRow.state) == from_state,
        )
        .values(state=target, updated_at=now, **values)
        .returning(MarkRow)
    )
    return list(db.scalars(stmt, execution_options=_RETURN))


def claim_due(
    db: Session,
    now: datetime,
    *,
    limit: int,
    claimed_by: str,
    lease_s: float,
    batch_key: str,
    exclude_accounts: Sequence[str] = (),
    only_ids: Sequence[int] | None = None,
) -> list[MarkRow]:
    """Claim up to `limit` armed marks due at `now`, earliest first, in one statement.

    Marks of `exclude_accounts` are left armed; with `only_ids`, only those marks are looked at
    (`rewake run` firing its own session's mark). Each claimed mark gets the attempt key
    `<batch_key>-<id>`. On PostgreSQL the candidates are
    picked in a MATERIALIZED CTE with FOR UPDATE SKIP LOCKED, so concurrent sweepers never
    claim the same mark and never wait on each other; SQLite serializes writers instead.
    """
    claimed = check_transition([MarkState.ARMED], MarkState.CLAIMED)
    candidates = select(col(MarkRow.id)).where(
        col(MarkRow.state) == MarkState.ARMED, col(MarkRow.due_at) <= now
    )
    if exclude_accounts:
        candidates = candidates.where(
            or_(
                col(MarkRow.account_key).is_(None),
                col(MarkRow.account_key).not_in(list(exclude_accounts)),
            )
        )
    if only_ids is not None:
        candidates = candidates.where(col(MarkRow.id).in_(list(only_ids)))
    due = (
        candidates.order_by(col(MarkRow.due_at), col(MarkRow.id))
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("due")
        .prefix_with("MATERIALIZED")
    )
    # The state is checked again where rows can change under the CTE's lock (PostgreSQL).
    # SQLite runs the statement alone; there the check would lead its planner to walk every
    # armed mark (an empty sweep slowed with the number of waiting marks; bench/sweep_bench.py
    # holds it to a flat cost) instead of looking up the few ids the CTE picked.
    sqlite = db.get_bind().dialect.name == "sqlite"
    recheck = [] if sqlite else [col(MarkRow.state) == MarkState.ARMED]
    stmt = (
        update(MarkRow)
        .where(col(MarkRow.id).in_(select(due.c.id)), *recheck)
        .values(
            state=claimed,
            claimed_by=claimed_by,
            attempt_key=literal(batch_key + "-") + cast(col(MarkRow.id), String),
            lease_until=now + timedelta(seconds=lease_s),
            updated_at=now,
        )
        .returning(MarkRow)
    )
    rows = list(db.scalars(stmt, execution_options=_RETURN))
    return sorted(rows, key=lambda row: (row.due_at, row.id or 0))


def reap(
    db: Session, now: datetime, *, from_state: str, to_state: str, **values: Any
) -> list[MarkRow]:
    """Move every mark in `from_state` whose lease ended before `now` to `to_state`."""
    target = check_transition([from_state], to_state)
    stmt = (
        update(MarkRow)
        .where(col(MarkRow.state) == from_state, col(MarkRow.lease_until) < now)
        .values(state=target, updated_at=now, **values)
        .returning(MarkRow)
    )
    return list(db.scalars(stmt, execution_options=_RETURN))


def count_by_state(db: Session) -> dict[str, int]:
    """How many marks are in each state."""
    stmt = select(col(MarkRow.state), func.count()).group_by(col(MarkRow.state))
    return {str(state): int(count) for state, count in db.execute(stmt).all()}


def database_now(db: Session, fallback: datetime) -> datetime:
    """The database's clock on PostgreSQL (one clock for every sweeper); `fallback` elsewhere."""
    if db.get_bind().dialect.name != "postgresql":
        return fallback
    value = db.scalar(select(func.now()))
    assert isinstance(value, datetime)
    return value


def earliest_armed_due(db: Session, exclude_accounts: Sequence[str] = ()) -> datetime | None:
    """The earliest due_at among armed marks, leaving out marks of `exclude_accounts`."""
    stmt = select(func.min(col(MarkRow.due_at))).where(col(MarkRow.state) == MarkState.ARMED)
    if exclude_accounts:
        stmt = stmt.where(
            col(MarkRow.account_key).is_(None)
            | col(MarkRow.account_key).not_in(list(exclude_accounts))
        )
    earliest: datetime | None = db.scalar(stmt)  # min() keeps the column's UTC type
    return earliest


def lock_marks(db: Session, mark_ids: Sequence[int]) -> dict[int, MarkRow]:
    """The marks as they are now, locked in id order until the transaction ends (PostgreSQL;
    one lock order for every writer that locks several marks)."""
    if not mark_ids:
        return {}
    stmt = (
        select(MarkRow)
        .where(col(MarkRow.id).in_(sorted(set(mark_ids))))
        .order_by(col(MarkRow.id))
        .with_for_update()
    )
    rows = db.scalars(stmt, execution_options={"populate_existing": True})
    return {row.id: row for row in rows if row.id is not None}


def _held_claim(mark_id: int, attempt_key: str) -> tuple[ColumnElement[bool], ...]:
    """The mark, while it is claimed by the holder of `attempt_key`."""
    return (
        col(MarkRow.id) == mark_id,
        col(MarkRow.state) == MarkState.CLAIMED,
        col(MarkRow.attempt_key) == attempt_key,
    )


def renew_claim(
    db: Session, mark_id: int, attempt_key: str, lease_until: datetime, now: datetime
) -> bool:
    """Extend the lease of a claim this sweeper still holds; False when it lost the claim."""
    stmt = (
        update(MarkRow)
        .where(*_held_claim(mark_id, attempt_key))
        .values(lease_until=lease_until, updated_at=now)
    )
    return bool(db.execute(stmt, execution_options={"synchronize_session": False}).rowcount)  # type: ignore[attr-defined]


def expire_armed_before(db: Session, cutoff: datetime, now: datetime) -> list[MarkRow]:
    """armed -> expired for marks due before `cutoff`: a resume that late is not sent."""
    expired = check_transition([MarkState.ARMED], MarkState.EXPIRED)
    stmt = (
        update(MarkRow)
        .where(col(MarkRow.state) == MarkState.ARMED, col(MarkRow.due_at) < cutoff)
        .values(
            state=expired,
            outcome="expired",
            outcome_detail=f"still armed {cutoff.isoformat()} past its due time",
            updated_at=now,
        )
        .returning(MarkRow)
    )
    return list(db.scalars(stmt, execution_options=_RETURN))


#: The outcome detail of a mark expired because its session's host went unseen.
HOST_UNSEEN = "host_unseen"


def expire_host_unseen(
    db: Session, seen_before: datetime, now: datetime, *, due_by: datetime | None = None
) -> list[MarkRow]:
    """armed -> expired for marks whose session's host was last seen before `seen_before`
    (only those due by `due_by`, when given): nobody is there to take the resume. Sessions
    whose host was never recorded as seen are left alone."""
    expired = check_transition([MarkState.ARMED], MarkState.EXPIRED)
    stale = select(col(SessionRow.root_id)).where(col(SessionRow.host_seen_at) < seen_before)
    stmt = update(MarkRow).where(
        col(MarkRow.state) == MarkState.ARMED, col(MarkRow.root_id).in_(stale)
    )
    if due_by is not None:
        stmt = stmt.where(col(MarkRow.due_at) <= due_by)
    stmt = stmt.values(
        state=expired, outcome="expired", outcome_detail=HOST_UNSEEN, updated_at=now
    ).returning(MarkRow)
    return list(db.scalars(stmt, execution_options=_RETURN))


def uncertain_marks(db: Session, limit: int, *, after_id: int = 0) -> list[MarkRow]:
    """Up to `limit` uncertain marks with an attempt key, in id order from the first after
    `after_id` (where the previous round of lookups stopped)."""
    stmt = (
        select(MarkRow)
        .where(
            col(MarkRow.state) == MarkState.UNCERTAIN,
            col(MarkRow.attempt_key).is_not(None),
            col(MarkRow.id) > after_id,
        )
        .order_by(col(MarkRow.id))
        .limit(limit)
    )
    return list(db.scalars(stmt, execution_options={"populate_existing": True}))


def marks_to_hold(db: Session, account_key: str, before: datetime) -> list[MarkRow]:
    """The account's armed and claimed marks due before `before`."""
    stmt = select(MarkRow).where(
        col(MarkRow.account_key) == account_key,
        col(MarkRow.state).in_((MarkState.ARMED, MarkState.CLAIMED)),
        col(MarkRow.due_at) < before,
    )
    return list(db.scalars(stmt.order_by(col(MarkRow.id))))


def move_due_later(db: Session, mark_id: int, due_at: datetime, now: datetime) -> bool:
    """Set a live, not yet sending mark's due_at to `due_at` if that is later; True if moved."""
    stmt = (
        update(MarkRow)
        .where(
            col(MarkRow.id) == mark_id,
            col(MarkRow.state).in_((MarkState.ARMED, MarkState.CLAIMED)),
            col(MarkRow.due_at) < due_at,
        )
        .values(due_at=due_at, updated_at=now)
    )
    return bool(db.execute(stmt, execution_options={"synchronize_session": False}).rowcount)  # type: ignore[attr-defined]


#: States of a mark whose resume reached (or may have reached) the host.
RESUMED_STATES = (MarkState.SENDING, MarkState.DONE, MarkState.UNCERTAIN)


def marks_a_report_concerns(
    db: Session, root_id: str, run_id: str, attempt: int, open_states: Sequence[str]
) -> list[MarkRow]:
    """In one query, every mark a report of `attempt` of the run may change or be held by: the
    session's marks in `open_states`, and the run's marks for earlier attempts whose resume
    was sent (`sent_marks_of_run` picks those out)."""
    params = {
        "root_id": root_id,
        "run_id": run_id,
        "attempt": attempt,
        "open_states": list(open_states),
    }
    found = db.scalars(_MARKS_A_REPORT_CONCERNS, params, execution_options=_REFRESH)
    return list(found)


_MARKS_A_REPORT_CONCERNS = select(MarkRow).where(
    col(MarkRow.root_id) == bindparam("root_id"),
    col(MarkRow.state).in_(bindparam("open_states", expanding=True))
    | (
        (col(MarkRow.run_id) == bindparam("run_id"))
        & (col(MarkRow.attempt) < bindparam("attempt"))
        & col(MarkRow.state).in_(RESUMED_STATES)
        & col(MarkRow.sent_at).is_not(None)
    ),
)


def sent_marks_of_run(marks: Sequence[MarkRow], run_id: str, below_attempt: int) -> list[MarkRow]:
    """Of `marks`, the run's for attempts before `below_attempt` whose resume was sent, latest
    send first (their states as last read or changed in this transaction)."""
    sent = [
        (mark.sent_at, mark)
        for mark in marks
        if mark.run_id == run_id
        and mark.attempt < below_attempt
        and mark.state in RESUMED_STATES
        and mark.sent_at is not None
    ]
    sent.sort(key=lambda pair: pair[0], reverse=True)
    return [mark for _, mark in sent]


def release_claim(db: Session, mark_id: int, attempt_key: str, now: datetime) -> MarkRow | None:
    """claimed -> armed for the holder of `attempt_key`: nothing was sent, anyone may claim it."""
    armed = check_transition([MarkState.CLAIMED], MarkState.ARMED)
    stmt = (
        update(MarkRow)
        .where(*_held_claim(mark_id, attempt_key))
        .values(state=armed, claimed_by=None, attempt_key=None, lease_until=None, updated_at=now)
        .returning(MarkRow)
    )
    return db.scalars(stmt, execution_options=_RETURN).first()


def _dialect(db: Session) -> str:
    return db.get_bind().dialect.name


#: The first key of rewake's per-account advisory locks on PostgreSQL ("rwpa").
PACING_LOCK_CLASS = 0x72777061


def lock_accounts(db: Session, accounts: Sequence[str]) -> None:
    """Serialize starts per account until the transaction ends (PostgreSQL advisory locks,
    taken in sorted order; SQLite's write lock already serializes every writer)."""
    if _dialect(db) != "postgresql":
        return
    for account in sorted(set(accounts)):
        db.execute(
            text("SELECT pg_advisory_xact_lock(:cls, hashtext(:account))"),
            {"cls": PACING_LOCK_CLASS, "account": account},
        )


def account_loads(db: Session, accounts: Sequence[str]) -> dict[str, AccountLoad]:
    """Sends in flight and the latest start, for each of `accounts`: an index seek on the
    account's sending marks and one pacing row each, however many marks the account has."""
    wanted = sorted(set(accounts))
    if not wanted:
        return {}
    in_flight_stmt = (
        select(col(MarkRow.account_key), func.count())
        .where(col(MarkRow.account_key).in_(wanted), col(MarkRow.state) == MarkState.SENDING)
        .group_by(col(MarkRow.account_key))
    )
    in_flight = {str(account): int(n) for account, n in db.execute(in_flight_stmt).all()}
    last_stmt = select(AccountPacingRow).where(col(AccountPacingRow.account_key).in_(wanted))
    last = {row.account_key: row.last_started_at for row in db.scalars(last_stmt)}
    return {
        account: AccountLoad(in_flight.get(account, 0), last.get(account)) for account in wanted
    }


def record_starts(db: Session, accounts: Sequence[str], now: datetime) -> None:
    """Remember `now` as the latest start of each of `accounts`."""
    wanted = sorted(set(accounts))
    if not wanted:
        return
    insert_fn = pg_insert if _dialect(db) == "postgresql" else sqlite_insert
    stmt = insert_fn(AccountPacingRow).values(
        [{"account_key": account, "last_started_at": now} for account in wanted]
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["account_key"], set_={"last_started_at": stmt.excluded.last_started_at}
    )
    db.execute(stmt)


def cli_session_ids(db: Session, marks: Sequence[MarkRow]) -> dict[tuple[str, str, int], str]:
    """The CLI session id each mark's failure named, for the command executor's
    `{session_id}`, keyed by (root_id, run_id, attempt)."""
    if not marks:
        return {}
    wanted = {(mark.root_id, mark.run_id, mark.attempt) for mark in marks}
    stmt = select(
        col(FailureRow.root_id), col(FailureRow.run_id), col(FailureRow.attempt),
        col(FailureRow.cli_session_id),
    ).where(
        col(FailureRow.root_id).in_(sorted({root for root, _, _ in wanted})),
        col(FailureRow.cli_session_id).is_not(None),
    )  # fmt: skip
    return {
        (root, run, attempt): str(session_id)
        for root, run, attempt, session_id in db.execute(stmt).all()
        if (root, run, attempt) in wanted
    }


def limit_lock_waits(db: Session, milliseconds: int) -> None:
    """On PostgreSQL, give up waiting for a lock after `milliseconds` in this transaction: the
    sweeper backs off and retries rather than keep an API request waiting behind it."""
    if _dialect(db) == "postgresql":
        db.execute(text(f"SET LOCAL lock_timeout = '{int(milliseconds)}ms'"))
