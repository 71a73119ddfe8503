"""Turning what a message states into one instant: rules 2-7 of docs/design.md#rules.

Every function takes `observed_at` and never reads the clock. A result is a `Reset` or a
`Refusal` that names why no instant can be trusted.
"""

from __future__ import annotations

from collections.abc import Iterable
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


# A wall time in a zone, as whenever names the three cases: one instant, two (a DST fold),
# or none (a DST gap). NamedTuples: as immutable as frozen dataclasses, cheaper to build.
class Unambiguous(NamedTuple):
    """A wall time that happens once."""

    at: datetime


class Fold(NamedTuple):
    """A wall time that happens twice, when the clocks go back."""

    earlier: datetime
    later: datetime


class Gap(NamedTuple):
    """A wall time the clocks skip. `before` and `after` read it with the offset in force
    before and after the change; the skip lies between them."""

    before: datetime
    after: datetime


WallReading = Unambiguous | Fold | Gap


def read_wall(day: date, hour: int, minute: int, zone: tzinfo) -> WallReading:
    """Which instants a wall-clock time names in a zone (PEP 495: fold=0 reads it with the
    offset before a change, fold=1 with the offset after)."""
    # The wall time labelled UTC: ZoneInfo and timezone read only its fields and fold.
    # Positional arguments: keyword parsing costs more than the datetimes themselves.
    year, month, day_of_month = day.year, day.month, day.day
    wall = datetime(year, month, day_of_month, hour, minute, 0, 0, UTC)
    offset_before = zone.utcoffset(wall)
    offset_after = zone.utcoffset(
        datetime(year, month, day_of_month, hour, minute, 0, 0, UTC, fold=1)
    )
    if offset_before is None or offset_after is None:
        raise ValueError(f"{zone} gives no UTC offset")
    if offset_before == offset_after:
        return Unambiguous(wall - offset_before)
    first, second = wall - offset_before, wall - offset_after
    # Clocks going back repeat the hour (the first reading is the earlier instant); clocks
    # going forward skip it (the first reading is the later one).
    return Fold(first, second) if first < second else Gap(first, second)


def wall_instant(day: date, hour: int, minute: int, zone: tzinfo) -> datetime | Refusal:
    """The instant rewake reads a wall time as: the later one in a fold (never early); a gap
    is `nonexistent_local_time`."""
    match read_wall(day, hour, minute, zone):
        case Unambiguous(at):
            return at
        case Fold(later=later):
            return later
        case Gap():
            return _gap(day, hour, minute, zone)


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


_MINUTE = timedelta(minutes=1)


def _earliest(reading: WallReading) -> datetime:
    """The earliest instant a reading may stand for: it decides whether a day is in range."""
    if isinstance(reading, Unambiguous):
        return reading.at
    if isinstance(reading, Fold):
        return reading.earlier
    return min(reading.before, reading.after)


def _next_occurrence(
    days: Iterable[date],
    hour: int,
    minute: int,
    zone: tzinfo,
    observed_at: datetime,
    *,
    limit: timedelta,
    form: Form,
    what: str,
    dateless_tomorrow: bool,
) -> Resolved:
    """Rule 3a: of the wall time on these days (in order), the first whose printed minute has
    not passed at observed_at, within `limit`. Only when that one lies beyond the window does
    a time that passed under 10 min ago stand (due at once): where the window admits the next
    occurrence, the next one it is, never early."""
    passed: datetime | None = None
    readings = [(day, read_wall(day, hour, minute, zone)) for day in days]
    for index, (day, reading) in enumerate(readings):
        if isinstance(reading, Gap):
            # A gap on a day whose time has passed anyway does not matter.
            if max(reading.before, reading.after) + _MINUTE > observed_at:
                return _gap(day, hour, minute, zone)
            continue
        at = reading.at if isinstance(reading, Unambiguous) else reading.later
        if at + _MINUTE <= observed_at:
            passed = at
            continue
        if _earliest(reading) <= observed_at + limit:
            following = readings[index + 1][1] if index + 1 < len(readings) else None
            if not dateless_tomorrow:
                return Reset(at, 60, form)
            if (later := _printed_alike(at, following, observed_at, limit)) is not None:
                return Reset(later, 60, form)
            if _also_dateless(following, observed_at, limit):
                return Refusal(
                    "day_ambiguous",
                    f"{what} in {zone} is {at.isoformat()}, and the next {what} is under 24 h "
                    "ahead too (the day is shortened by DST): the CLI prints both without a "
                    "date, so the text cannot say which one it means",
                )
            return Reset(at, 60, form)
        if passed is not None and passed >= observed_at - GRACE:
            return Reset(passed, 60, form)
        return Refusal(
            "stale",
            f"the next {what} in {zone} is {at.isoformat()}, further than {limit} ahead: "
            "the message was printed for an earlier reset",
        )
    return Refusal("unparseable", f"no {what} found in {zone}")


def _also_dateless(following: WallReading | None, observed_at: datetime, limit: timedelta) -> bool:
    """Whether the next day's occurrence is under 24 h ahead as well, and in the window.

    Claude prints no date for a reset under 24 h ahead. On a normal day the occurrence after
    one still ahead is more than 24 h ahead, so a dateless time names one instant; on a day
    that DST shortens (23 or 23.5 hours) a time under an hour ahead recurs under 24 h ahead,
    and both are printed alike. Neither reading may be taken then: the first would resume a
    day early if the CLI meant the other, the second a day late if it did not."""
    if following is None or isinstance(following, Gap):
        return False  # a time the zone skips that day cannot be the one printed
    earliest, observed = _earliest(following), observed_at.astimezone(UTC)  # elapsed, not wall
    return earliest < observed + _DAY and earliest <= observed + limit


def _printed_alike(
    at: datetime, following: WallReading | None, observed_at: datetime, limit: timedelta
) -> datetime | None:
    """The next occurrence, when the text cannot tell it from `at` and the window admits it.

    Claude prints no date for a reset under 24 h ahead (Gemini prints one for any reset on
    another day, so its bare time is never tomorrow's). While the printed minute is under way
    at observed_at, the next occurrence is under 24 h ahead too and would be printed alike (a
    reset 23 h 59 min ahead reads "3:28am" at 03:28:41). Reading `at` would then be a day early
    if the CLI meant the other; the later is never early (rule 2), as for a time that passed
    minutes ago in a window that admits the next day (rule 3a)."""
    if at > observed_at or following is None:
        return None
    if isinstance(following, Gap):
        return None  # a time the zone skips that day cannot be the one printed
    later = following.at if isinstance(following, Unambiguous) else following.later
    return later if _earliest(following) <= observed_at + limit else None


def next_time_of_day(
    hour: int,
    minute: int,
    zone: tzinfo,
    observed_at: datetime,
    *,
    limit: timedelta,
    form: Form,
    dateless_tomorrow: bool = False,
) -> Resolved:
    """Rule 3a for a time without a date: its first occurrence in the zone whose printed
    minute has not passed, which must lie within `limit` of observed_at. `dateless_tomorrow`:
    the CLI prints tomorrow's reset without a date too (Claude), see `_printed_alike`."""
    # From the day before observed_at's local date: a passed time may stand (the grace).
    first_day = (observed_at - GRACE).astimezone(zone).date()
    days = (first_day + timedelta(days=offset) for offset in range(4))
    return _next_occurrence(
        days, hour, minute, zone, observed_at, limit=limit, form=form,
        what=f"{hour:02d}:{minute:02d}", dateless_tomorrow=dateless_tomorrow,
    )  # fmt: skip


_WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def next_weekday_time(
    weekday: int,
    hour: int,
    minute: int,
    zone: tzinfo,
    observed_at: datetime,
    *,
    limit: timedelta,
    form: Form,
    dateless_tomorrow: bool = False,
) -> Resolved:
    """Rule 3a for "resets Tuesday 9am" (weekday 0 = Monday): the first such weekday at that
    time whose printed minute has not passed, within `limit`."""
    first_day = (observed_at - GRACE).astimezone(zone).date()
    days = (
        first_day + timedelta(days=offset)
        for offset in range(16)
        if (first_day + timedelta(days=offset)).weekday() == weekday
    )
    return _next_occurrence(
        days, hour, minute, zone, observed_at, limit=limit, form=form,
        what=f"{_WEEKDAY_NAMES[weekday]} {hour:02d}:{minute:02d}",
        dateless_tomorrow=dateless_tomorrow,
    )  # fmt: skip


def same_day_time(
    hour: int, minute: int, zone: tzinfo, observed_at: datetime, *, form: Form
) -> Resolved:
    """Rule 3b (Codex): a bare time means the host's current local date; never tomorrow."""
    day = observed_at.astimezone(zone).date()
    at = wall_instant(day, hour, minute, zone)
    if isinstance(at, Refusal):
        return at
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
        passed: datetime | None = None
        for candidate_year in (base_year, base_year + 1, base_year + 4):
            try:
                candidate_day = date(candidate_year, month, day)
            except ValueError:
                continue
            at = wall_instant(candidate_day, hour, minute, zone)
            if isinstance(at, Refusal):
                return at
            if at >= observed_at - _DAY:
                chosen = at
                break
            passed = at
        if chosen is None:
            return Refusal("unparseable", f"no date {month}/{day} found")
        if passed is not None and chosen > observed_at + limit:
            # "Jul 4" seen on Jul 10: this year's has passed, next year's is no limit's reset.
            return _stale(passed, observed_at)
    else:
        try:
            printed_day = date(year, month, day)
        except ValueError:
            return Refusal("unparseable", f"{year}-{month}-{day} is not a date")
        at = wall_instant(printed_day, hour, minute, zone)
        if isinstance(at, Refusal):
            return at
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


def at_instant(
    at: datetime, observed_at: datetime, *, limit: timedelta, resolution_s: int, form: Form
) -> Resolved:
    """An instant the text states whole (an ISO-8601 time with its offset), as an epoch is:
    stale once it passed more than the grace ago, out of window beyond the limit."""
    if at < observed_at - GRACE:
        return _stale(at, observed_at)
    return _check_ahead(at, observed_at, limit, resolution_s, form)


def at_epoch(value: float, observed_at: datetime, *, limit: timedelta, form: Form) -> Resolved:
    """An epoch (or a structured field holding one): exact, stale once passed."""
    at = epoch_instant(value)
    if at is None:
        return Refusal("unparseable", f"{value} is not a plausible reset epoch")
    if at < observed_at - GRACE:
        return _stale(at, observed_at)
    return _check_ahead(at, observed_at, limit, 0, form)
