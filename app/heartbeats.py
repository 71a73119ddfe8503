"""The sweepers' heartbeats: each sweeper says it is alive, and what it does with a due mark;
/readyz, the marks' warnings and `rewake doctor` read when one was last seen."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, func, select
from sqlmodel import Session, col

from rewake.db.models import SweeperHeartbeatRow

_LATEST_HEARTBEAT = select(func.max(col(SweeperHeartbeatRow.seen_at)))
_EXECUTORS_SEEN_SINCE = select(col(SweeperHeartbeatRow.executor)).where(
    col(SweeperHeartbeatRow.seen_at) >= bindparam("since")
)


def record_heartbeat(
    db: Session,
    sweeper_id: str,
    now: datetime,
    *,
    host: str | None,
    pid: int | None,
    executor: str | None,
) -> None:
    """Say that sweeper `sweeper_id`, which runs `executor`, is alive at `now`."""
    row = db.get(SweeperHeartbeatRow, sweeper_id)
    if row is None:
        row = SweeperHeartbeatRow(
            sweeper_id=sweeper_id, seen_at=now, started_at=now, host=host, pid=pid,
            executor=executor,
        )  # fmt: skip
        db.add(row)
    else:
        row.seen_at, row.host, row.pid, row.executor = now, host, pid, executor


def executors_seen_since(db: Session, since: datetime) -> list[str | None]:
    """The executor of every sweeper seen at `since` or later (None for one of an older
    rewake, which does not say)."""
    return list(db.scalars(_EXECUTORS_SEEN_SINCE, {"since": since}))


def latest_heartbeat(db: Session) -> datetime | None:
    """When any sweeper was last seen."""
    latest: datetime | None = db.scalar(_LATEST_HEARTBEAT)
    return latest
