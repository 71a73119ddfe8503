"""Instants as the API writes them: ISO 8601 with `Z` or an offset.

One parser for the runner, the terminal views and the web page. Standard library only: the
runner's hook path imports this and must start fast.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def parse_instant(text: str) -> datetime:
    """An instant the API wrote (`2026-11-30T16:40:00Z`); raises ValueError for other text.
    For values the caller already trusts to be the API's own: a bad one is a bug, not input."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def instant(value: Any) -> datetime | None:
    """An instant of the API's JSON, or None for anything else (missing, not text, not ISO, or
    a time without an offset, which names no instant)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = parse_instant(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def local_clock(at: datetime) -> str:
    """An instant as this machine's wall clock, with its zone (`17:40:30 CET`)."""
    return at.astimezone().strftime("%H:%M:%S %Z")
