"""The sweeper's queries that are not about one mark: account loads, locks and starts, the
CLI session ids a delivery needs, and the lock timeout of a start (every mark query is in
rewake.repository.marks)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col

from rewake.models import AccountPacingRow, FailureRow, MarkRow
from rewake.sweeper.pacing import AccountLoad

_RETURN = {"synchronize_session": False, "populate_existing": True}
#: The first key of rewake's per-account advisory locks on PostgreSQL ("rwpa").
PACING_LOCK_CLASS = 0x72777061


def _dialect(db: Session) -> str:
    return db.get_bind().dialect.name


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
        .where(col(MarkRow.account_key).in_(wanted), col(MarkRow.state) == "sending")
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
