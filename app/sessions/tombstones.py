"""Tombstones of deleted sessions: kept, shown and refusing their root_id for the retention
(REWAKE_TOMBSTONE_RETENTION_DAYS), then purged; after that the root_id starts afresh."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session

from rewake.context import Context
from rewake.db.models import TombstoneRow
from rewake.errors import DomainError
from rewake.sessions import repository as repo
from rewake.sessions.rules import tombstone_kept, tombstones_expire_before


def kept_tombstone(db: Session, root_id: str, ctx: Context) -> TombstoneRow | None:
    """The root_id's tombstone while within the retention; None before a delete or after it."""
    row = repo.get_tombstone(db, root_id)
    return row if row is not None and _kept(row.deleted_at, ctx) else None


def refuse_if_deleted(db: Session, root_id: str, ctx: Context) -> None:
    """410 session_deleted while the root_id's tombstone is kept."""
    deleted_at = repo.tombstone_deleted_at(db, root_id)
    if deleted_at is not None and _kept(deleted_at, ctx):
        raise DomainError("session_deleted", f"session {root_id!r} was deleted")


def _kept(deleted_at: datetime, ctx: Context) -> bool:
    """Whether a tombstone written at `deleted_at` is still within the retention."""
    return tombstone_kept(deleted_at, ctx.now, ctx.tombstone_retention_days)


def purge_expired(db: Session, now: datetime, retention_days: int) -> int:
    """Delete the tombstones past their retention at `now`; how many there were."""
    return repo.purge_tombstones(db, tombstones_expire_before(now, retention_days))
