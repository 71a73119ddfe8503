"""Queries on marks. Every state change is a compare-and-set: the row count decides who won."""

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
    tuple_,
    update,
)
from sqlmodel import Session, col

from rewake.models import LIVE_STATES, MarkRow

_RETURN = {"synchronize_session": False, "populate_existing": True}


_LATEST_MARK = (
    select(MarkRow)
    .where(col(MarkRow.root_id) == bindparam("root_id"))
    .order_by(col(MarkRow.id).desc())
    .limit(1)
)
_REFRESH = {"populate_existing": True}


def live_mark(db: Session, root_id: str) -> MarkRow | None:
    """The session's armed, claimed or sending mark (there is at most one)."""
    stmt = select(MarkRow).where(
        col(MarkRow.root_id) == root_id, col(MarkRow.state).in_(LIVE_STATES)
    )
    return db.scalars(stmt, execution_options=_REFRESH).first()


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
    stmt = select(
        exists().where(
            col(MarkRow.root_id) == root_id,
            col(MarkRow.run_id) == run_id,
            col(MarkRow.attempt) == attempt,
            col(MarkRow.state).not_in(LIVE_STATES),
            or_(col(MarkRow.clear_reason).is_(None), col(MarkRow.clear_reason).not_in(rearmable)),
        )
    )
    return bool(db.scalar(stmt))


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
    stmt = update(MarkRow).where(col(MarkRow.id) == mark_id, col(MarkRow.state).in_(from_states))
    if attempt_key is not None:
        stmt = stmt.where(col(MarkRow.attempt_key) == attempt_key)
    stmt = stmt.values(state=to_state, updated_at=now, **values).returning(MarkRow)
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
    if not held:
        return []
    stmt = (
        update(MarkRow)
        .where(
            col(MarkRow.id).in_([mark_id for mark_id, _ in held]),
            tuple_(col(MarkRow.id), col(MarkRow.attempt_key)).in_(list(held)),
            col(MarkRow.state) == from_state,
        )
        .values(state=to_state, updated_at=now, **values)
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
    candidates = select(col(MarkRow.id)).where(
        col(MarkRow.state) == "armed", col(MarkRow.due_at) <= now
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
    # armed mark (100,000 waiting marks made an empty sweep 5x slower) instead of looking up
    # the few ids the CTE picked.
    recheck = [col(MarkRow.state) == "armed"] if db.get_bind().dialect.name != "sqlite" else []
    stmt = (
        update(MarkRow)
        .where(col(MarkRow.id).in_(select(due.c.id)), *recheck)
        .values(
            state="claimed",
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
    stmt = (
        update(MarkRow)
        .where(col(MarkRow.state) == from_state, col(MarkRow.lease_until) < now)
        .values(state=to_state, updated_at=now, **values)
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
