"""The one column type every instant goes through: UTC, aware, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """An instant stored as UTC: naive datetimes are refused, results come back aware in UTC.

    `DateTime(timezone=True)` alone is not enough: on SQLite it drops the offset, so a reset at
    09:00-05:00 was read back as 09:00Z and fired five hours early.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        utc = _as_utc(value)
        # SQLite stores text: one format, always UTC, so text order is time order.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _as_utc(value: Any) -> datetime:
    """`value` as an aware UTC datetime; TypeError for what is no datetime, ValueError for a
    naive one."""
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()} cannot be stored as an instant")
    return value.astimezone(UTC)
