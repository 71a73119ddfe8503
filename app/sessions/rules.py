"""Pure rules of sessions: their state from their runs, and how long a tombstone is kept."""

from __future__ import annotations

from datetime import datetime, timedelta


def session_state(cancelled: bool, run_statuses: list[str]) -> str:
    """cancelled, else paused if a run is paused, running if one runs, finished otherwise."""
    if cancelled:
        return "cancelled"
    if "paused" in run_statuses:
        return "paused"
    if "running" in run_statuses:
        return "running"
    return "finished"


def tombstone_kept(deleted_at: datetime, now: datetime, retention_days: int) -> bool:
    """A deleted session's tombstone is kept, and refuses its root_id, for `retention_days`."""
    return now - deleted_at <= timedelta(days=retention_days)


def tombstones_expire_before(now: datetime, retention_days: int) -> datetime:
    """Tombstones of sessions deleted before this instant are past their retention."""
    return now - timedelta(days=retention_days)
