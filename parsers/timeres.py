"""Turning what a message states into one instant: rules 2-7 of DESIGN.md section 1.

Every function takes `observed_at` and never reads the clock. A result is a `Reset` or a
`Refusal` that names why no instant can be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import NamedTuple

from rewake.parsers.verdict import Form, Provider, Refusal

#: A stated wait shorter than this is a throttle, not a stop (rule 10).
THROTTLE_S = 300.0

#: A reset that passed this long ago is still that instant (due at once), not the next one.
GRACE = timedelta(minutes=10)

_HOUR = timedelta(hours=1)
_DAY = timedelta(days=1)
#: (window, slack) per scope; docs/parsing.md lists them.
_WINDOWS: dict[str, tuple[timedelta, timedelta]] = {
    "five_hour": (timedelta(hours=5), timedelta(minutes=15)),
    "session": (timedelta(hours=5), timedelta(minutes=15)),
    "minute": (_DAY, _HOUR),
    "daily": (_DAY, _HOUR),
    "weekly": (timedelta(days=7), _HOUR),
    "monthly": (timedelta(days=31), _DAY),
}
_PROVIDER_LONGEST: dict[str, tuple[timedelta, timedelta]] = {
    "claude": (timedelta(days=31), _DAY),
    "codex": (timedelta(days=31), _DAY),
    "gemini": (_DAY, _HOUR),
}


# A NamedTuple: as immutable as a frozen dataclass, and cheaper to build on the hot path.
class Reset(NamedTuple):
    """A reset instant (UTC), how much later the true reset may be, and how it was stated."""

    at: datetime
    resolution_s: int
    form: Form


Resolved = Reset | Refusal


# Cached: a pure function of two short strings, asked for on every reset read (bounded: a
# scope may come from a JSON field).
@lru_cache(maxsize=64)
def window(provider: Provider | None, scope: str | None) -> timedelta:
    """How far ahead a reset of this scope may lie, slack included (rule 7)."""
    if scope in _WINDOWS:
        span, slack = _WINDOWS[scope]
    else:
        span, slack = _PROVIDER_LONGEST.get(provider or "", (timedelta(days=31), _DAY))
    return span + slack


@lru_cache(maxsize=64)
def time_of_day_window(provider: Provider | None, scope: str | None) -> timedelta:
    """A time printed without a date lies within the day, or within a shorter scope (rule 3a)."""
    return min(window(provider, scope), _DAY + _HOUR)


def to_24h(hour: int, minute: int, meridiem: str | None) -> tuple[int, int] | None:
    """12am is midnight and 12pm noon; None for a time that cannot be (13pm, 25:00)."""
    if minute > 59:
        return None
    if meridiem is None:
        return (hour, minute) if hour <= 23 else None
    if not 1 <= hour <= 12:
        return None
    hour = hour % 12
    if meridiem.lower().startswith("p"):
        hour += 12
    return hour, minute


def _readings(day: date, hour: int, minute: int, zone: tzinfo) -> tuple[datetime, datetime | None]:
    """(first reading, local_instant) of a wall time, computed once for both."""
    # The wall time labelled UTC: ZoneInfo and timezone read only its fields and fold.
    # Every argument by position, and the fold=1 copy built, not replace()d: keyword parsing
    # costs more than the datetimes (replace(fold=1) alone is 2.5x a positional constructor).
    year, month, day_of_month = day.year, day.month, day.day
    wall = datetime(year, month, day_of_month, hour, minute, 0, 0, UTC)
    offset = zone.utcoffset(wall)
    # Almost every wall time is neither in a gap nor in a fold: both readings of it have one
    # offset, and the instant is the wall time less that offset, without the round trips
    # below (half the cost).
    later = datetime(year, month, day_of_month, hour, minute, 0, 0, UTC, fold=1)
    if offset is not None and offset == zone.utcoffset(later):
        instant = wall - offset
        return instant, instant
    return _first_reading(day, hour, minute, zone), _checked_instant(day, hour, minute, zone)


def local_instant(day: date, hour: int, minute: int, zone: tzinfo) -> datetime | None:
    """The instant of a wall-clock time in a zone: the later one in a DST fold (never early),
    None when the time falls in a DST gap."""
    return _readings(day, hour, minute, zone)[1]


def _checked_instant(day: date, hour: int, minute: int, zone: tzinfo) -> datetime | None:
    later = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone, fold=1)
    instant = later.astimezone(UTC)
    back = instant.astimezone(zone)
    # The wall time survives the round trip unless it is in a gap. Compared field by field:
    # two naive copies (replace(tzinfo=None)) cost more than the rest of this function.
    wall = (back.year, back.month, back.day, back.hour, back.minute, back.second, back.microsecond)
    if wall != (day.year, day.month, day.day, hour, minute, 0, 0):
        return None
    return instant


def _gap(day: date, hour: int, minute: int, zone: tzinfo) -> Refusal:
    return Refusal(
        "nonexistent_local_time",
        f"{day.isoformat()} {hour:02d}:{minute:02d} does not exist in {zone}: "
        "the clocks skip it, so that zone cannot be the CLI's",
    )


@dataclass(frozen=True, slots=True)
class Stale(Refusal):
    """A stale refusal that remembers the passed instant: a structured reset that passed
    still tells which day a time-of-day banner about the same limit meant."""

    at: datetime


def _stale(at: datetime, observed_at: datetime) -> Refusal:
    return Stale(
        "stale",
        f"the stated reset {at.isoformat()} passed before "
        f"{observed_at.astimezone(UTC).isoformat()}",
        at,
    )


def _check_ahead(
    at: datetime, observed_at: datetime, limit: timedelta, resolution_s: int, form: Form
) -> Resolved:
    if at > observed_at + limit:
        return Refusal(
            "out_of_window",
            f"the stated reset {at.isoformat()} is more than {limit} after the message",
        )
    return Reset(at, resolution_s, form)


def _first_reading(day: date, hour: int, minute: int, zone: tzinfo) -> datetime:
    """The first reading of a wall time (fold=0): in a DST fold the earlier instant, which
    decides whether the day is in range; the answer is still the later one (never early)."""
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone).astimezone(UTC)


def next_time_of_day(
    hour: int,
    minute: int,
    zone: tzinfo,
    observed_at: datetime,
    *,
    limit: timedelta,
    form: Form,
) -> Resolved:
    """Rule 3a: the first occurrence in the zone at or after observed_at - 10 min, which must
    lie within `limit` of observed_at, else the message is older than it looks (stale)."""
    earliest = observed_at - GRACE
    day = earliest.astimezone(zone).date()
    for _ in range(3):
        first, at = _readings(day, hour, minute, zone)
        if at is None:
            # A gap on a day whose time would be in the past anyway does not matter.
            if first >= earliest:
                return _gap(day, hour, minute, zone)
        elif at >= earliest:
            if first > observed_at + limit:
                return Refusal(
                    "stale",
                    f"the next {hour:02d}:{minute:02d} in {zone} is {at.isoformat()}, further "
                    f"than {limit} ahead: the message was printed for an earlier reset",
                )
            return Reset(at, 60, form)
        day += _DAY
    return Refusal("unparseable", f"no {hour:02d}:{minute:02d} found in {zone}")


def same_day_time(
    hour: int, minute: int, zone: tzinfo, observed_at: datetime, *, form: Form
) -> Resolved:
    """Rule 3b (Codex): a bare time means the host's current local date; never tomorrow."""
    day = observed_at.astimezone(zone).date()
    at = local_instant(day, hour, minute, zone)
    if at is None:
        return _gap(day, hour, minute, zone)
    if at < observed_at - GRACE:
        return _stale(at, observed_at)
    return Reset(at, 60, form)


def dated_time(
    year: int | None,
    month: int,
    day: int,
    hour: int,
    minute: int,
    zone: tzinfo,
    observed_at: datetime,
    *,
    limit: timedelta,
    form: Form,
) -> Resolved:
    """A printed date and time. Without a year, the next occurrence at or after
    observed_at - 1 day (rule 4). A dated reset that has passed is stale."""
    if year is None:
        base_year = (observed_at - _DAY).astimezone(zone).year
        chosen: datetime | None = None
        for candidate_year in (base_year, base_year + 1, base_year + 4):
            try:
                candidate_day = date(candidate_year, month, day)
            except ValueError:
                continue
            at = local_instant(candidate_day, hour, minute, zone)
            if at is None:
                return _gap(candidate_day, hour, minute, zone)
            if at >= observed_at - _DAY:
                chosen = at
                break
        if chosen is None:
            return Refusal("unparseable", f"no date {month}/{day} found")
    else:
        try:
            printed_day = date(year, month, day)
        except ValueError:
            return Refusal("unparseable", f"{year}-{month}-{day} is not a date")
        at = local_instant(printed_day, hour, minute, zone)
        if at is None:
            return _gap(printed_day, hour, minute, zone)
        chosen = at
    if chosen < observed_at - GRACE:
        return _stale(chosen, observed_at)
    return _check_ahead(chosen, observed_at, limit, 60, form)


def after_duration(
    seconds: float, observed_at: datetime, *, resolution_s: int, limit: timedelta
) -> Resolved:
    """Rule 6: a duration counts from when the message was printed."""
    if not seconds <= limit.total_seconds():
        return Refusal(
            "out_of_window", f"a wait of {seconds:.0f} s is longer than this limit's {limit}"
        )
    at = (observed_at + timedelta(0, seconds)).astimezone(UTC)
    return _check_ahead(at, observed_at, limit, resolution_s, "duration")


#: Epochs outside these years are not reset times (token counts, ids).
_EPOCH_MIN = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
_EPOCH_MAX = datetime(2100, 1, 1, tzinfo=UTC).timestamp()


def epoch_instant(value: float) -> datetime | None:
    """Seconds or milliseconds since 1970, when plausible as a reset."""
    if not _EPOCH_MIN <= value <= _EPOCH_MAX * 1000.0:
        return None
    if value > _EPOCH_MAX:
        value /= 1000.0
    if not _EPOCH_MIN <= value <= _EPOCH_MAX:
        return None
    return datetime.fromtimestamp(value, UTC)


def at_epoch(value: float, observed_at: datetime, *, limit: timedelta, form: Form) -> Resolved:
    """An epoch (or a structured field holding one): exact, stale once passed."""
    at = epoch_instant(value)
    if at is None:
        return Refusal("unparseable", f"{value} is not a plausible reset epoch")
    if at < observed_at - GRACE:
        return _stale(at, observed_at)
    return _check_ahead(at, observed_at, limit, 0, form)
