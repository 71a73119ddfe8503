"""What every domain call is given: the instant of the request, who acts, and the policy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any, Protocol

from rewake.parsers.verdict import Verdict, format_instant


class ParseFn(Protocol):
    """`rewake.parsers.parse`'s signature, so that the service can be given it."""

    def __call__(
        self,
        text: str,
        *,
        observed_at: datetime,
        zone: str | None = None,
        provider: str | None = None,
    ) -> Verdict: ...


@dataclass(frozen=True, slots=True)
class Context:
    """One request's view of the world: read the clock once, pass this down."""

    now: datetime
    actor: str
    resume_delay_s: int
    display_zone: tzinfo | None
    tombstone_retention_days: int = 365
    #: A resumed attempt reporting a new limit this soon holds its account's other marks.
    hold_window_s: float = 600.0


def iso(instant: datetime | None) -> str | None:
    """An instant as the API writes it: ISO-8601 UTC with a Z."""
    return format_instant(instant) if instant is not None else None


JSON = dict[str, Any]
