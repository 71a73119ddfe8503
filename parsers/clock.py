"""From the pieces of a printed reset (time, date, zone) to a Reset or a Refusal."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Literal, NamedTuple

from rewake.parsers import timeres
from rewake.parsers.findings import Observation
from rewake.parsers.grammar import (
    MONTH_NAME,
    TIME_12,
    TIME_24,
    WEEKDAY,
    ZONE_IN_PARENS,
    month_number,
    squeeze,
    weekday_number,
)
from rewake.parsers.timeres import Resolved
from rewake.parsers.verdict import Form, Provider, Refusal
from rewake.parsers.zones import (
    ZoneError,
    abbreviation_in_host_zone,
    host_zone_or_error,
    iana_zone,
    is_offset_label,
    printed_zone,
)


# A NamedTuple: as immutable as a frozen dataclass, and cheaper to build on the hot path.
class Printed(NamedTuple):
    """A reset as printed: a time of day, maybe a date, maybe a zone label."""

    hour: int | None
    minute: int
    meridiem: str | None
    month: int | None = None
    day: int | None = None
    year: int | None = None
    #: An IANA name from parentheses, or None when the zone was not printed.
    iana: str | None = None
    #: An en-US short name or GMT offset as Gemini prints it.
    short_zone: str | None = None
    #: The words as printed, echoed in refusals.
    as_printed: str = ""
    #: "resets Tuesday 9am": the weekday, 0 for Monday.
    weekday: int | None = None

    @property
    def quoted(self) -> str:
        return repr(" ".join(self.as_printed.split())) if self.as_printed else "the reset"


def _named(printed: Printed, ctx: Observation, name: str) -> tuple[tzinfo, Form] | Refusal:
    """The zone a message names in a zone's place (rule 5): any IANA key, with or without a
    slash; a GMT/UTC offset; an abbreviation the host's zone uses at that instant. Anything
    else is zone_unknown: the time is never read in the host's zone instead."""
    if name in ("Etc/Unknown", "Unknown"):
        return Refusal(
            "zone_unknown", f"{printed.quoted}: the CLI printed {name}: its zone is unknown"
        )
    if is_offset_label(name):
        # "GMT+5:30" is the offset it reads as; only "Etc/GMT+5" has POSIX's inverted sign.
        fixed = printed_zone(name)
        if fixed is None:
            return Refusal("zone_unknown", f"{printed.quoted}: {name!r} is not a UTC offset")
        return fixed, "offset_zone"
    if name == "Z":
        return UTC, "named_zone"
    found = iana_zone(name)
    if found is not None:
        return found, "named_zone"
    host = abbreviation_in_host_zone(name, ctx.zone, ctx.observed_at)
    if host is not None:
        return host, "named_zone"
    return Refusal("zone_unknown", f"{printed.quoted}: {name!r} is not an IANA zone")


def _zone(printed: Printed, ctx: Observation) -> tuple[tzinfo, Form] | Refusal:
    if printed.iana is not None:
        return _named(printed, ctx, squeeze(printed.iana))
    if printed.short_zone is not None:
        fixed = printed_zone(printed.short_zone)
        if fixed is None:
            return Refusal("zone_ambiguous", f"{printed.short_zone!r} is not one fixed offset")
        return fixed, "offset_zone"
    host = host_zone_or_error(ctx.zone)
    if isinstance(host, ZoneError):
        return Refusal(host.code, f"{printed.quoted}: {host.detail}")
    return host, "local_time"


def resolve(
    printed: Printed,
    ctx: Observation,
    provider: Provider,
    scope: str | None,
    *,
    bare_time: Literal["next", "same_day"] = "next",
) -> Resolved:
    """The instant a printed reset names, by rules 3-5 and 7."""
    if printed.hour is None:
        if printed.month is not None and printed.day is not None:
            return Refusal(
                "time_not_stated", f"{printed.quoted} gives a date without a time of day"
            )
        return Refusal("unparseable", f"{printed.quoted} names no time")
    clock = timeres.to_24h(printed.hour, printed.minute, printed.meridiem)
    if clock is None:
        return Refusal("unparseable", f"{printed.quoted} is not a time of day")
    hour, minute = clock
    zone = _zone(printed, ctx)
    if isinstance(zone, Refusal):
        return zone
    tz, form = zone
    if printed.month is not None and printed.day is not None:
        return timeres.dated_time(
            printed.year,
            printed.month,
            printed.day,
            hour,
            minute,
            tz,
            ctx.observed_at,
            limit=timeres.window(provider, scope),
            form=form,
        )
    if printed.weekday is not None:
        return timeres.next_weekday_time(
            printed.weekday,
            hour,
            minute,
            tz,
            ctx.observed_at,
            limit=timeres.window(provider, scope),
            form=form,
            dateless_tomorrow=provider == "claude",
        )
    if bare_time == "same_day":
        return timeres.same_day_time(hour, minute, tz, ctx.observed_at, form=form)
    return timeres.next_time_of_day(
        hour,
        minute,
        tz,
        ctx.observed_at,
        limit=timeres.time_of_day_window(provider, scope),
        form=form,
        dateless_tomorrow=provider == "claude",
    )


_WEEKDAY = re.compile(rf"{WEEKDAY},?\s{{1,3}}(?:at\s{{1,3}})?")
_DATE = re.compile(
    rf"{MONTH_NAME}\s{{1,3}}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
    r"(?:,?\s{1,3}(?P<year>20\d\d)(?!\d))?"
)
_DATE_TIME_SEP = re.compile(r"\s{0,3},\s{0,3}|\s{1,3}at\s{1,3}|\s{1,3}")
_TIME_12 = re.compile(TIME_12)
_TIME_24 = re.compile(TIME_24)
# The zone may wrap onto the next line under the banner's indentation.
_ZONE = re.compile(r"\s{0,16}" + ZONE_IN_PARENS)
_WRAP = re.compile(r"\s*\n\s*")
#: A date printed after the time: "Resets by 4:00 AM Friday Apr 24", "19:00 Fri, Apr 24".
_TRAILING_DATE = re.compile(rf"\s{{1,3}}(?:on\s{{1,3}})?(?:{WEEKDAY},?\s{{1,3}})?(?=[A-Z])")
#: An ISO-8601 instant with its offset: "2026-06-06T15:00:00+09:00", "2026-06-06 06:00Z".
ISO_INSTANT = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})[T ](?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,9}))?)?"
    r"(?P<offset>Z|[+-]\d{2}:?\d{2})(?![\d:])"
)


def iso_instant(match: re.Match[str]) -> datetime | None:
    """The instant an ISO_INSTANT match names; None for a date or offset no calendar has."""
    offset = match.group("offset")
    if offset == "Z":
        minutes = 0
    else:
        digits = offset[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + int(digits[2:])
        if int(digits[2:]) > 59 or minutes > 18 * 60:
            return None
        minutes = -minutes if offset[0] == "-" else minutes
    fraction = (match.group("fraction") or "").ljust(6, "0")[:6]
    try:
        return datetime(
            int(match.group("year")),
            int(match.group("month")),
            int(match.group("day")),
            int(match.group("hour")),
            int(match.group("minute")),
            int(match.group("second") or 0),
            int(fraction),
            tzinfo=timezone(timedelta(minutes=minutes)),
        ).astimezone(UTC)
    except (ValueError, OverflowError):  # Feb 30, or year 9999 at -14:00 past datetime's end
        return None


def resolve_iso(
    match: re.Match[str],
    ctx: Observation,
    provider: Provider,
    scope: str | None,
    *,
    form: Form,
) -> Resolved:
    """An ISO-8601 instant with its offset, whatever the host's zone. In a structured field it
    is exact. In text, printed to the minute (no seconds, or ":00", which a writer that cuts
    seconds prints too), the rest of that minute is its resolution (never early); with
    seconds other than zero, the second is exact."""
    at = iso_instant(match)
    if at is None:
        return Refusal("unparseable", f"{match.group(0)!r} is no instant")
    exact = (
        form == "structured"
        or bool(match.group("fraction"))
        or (match.group("second") or "00") != "00"
    )
    return timeres.at_instant(
        at,
        ctx.observed_at,
        limit=timeres.window(provider, scope),
        resolution_s=0 if exact else 60,
        form=form,
    )


def read_phrase(norm: str, pos: int) -> tuple[int, Printed] | None:
    """A reset as a CLI prints it after "resets": [weekday] [date [year]] [at] time [(zone)],
    the time in 12- or 24-hour form. None when neither a date nor a time stands at pos."""
    cursor = pos
    weekday = None
    named_day = _WEEKDAY.match(norm, cursor)
    if named_day:
        weekday = weekday_number(named_day.group("weekday"))
        cursor = named_day.end()
    month = day = year = None
    date = _DATE.match(norm, cursor)
    if date:
        month = month_number(date.group("month"))
        day = int(date.group("day"))
        year = int(date.group("year")) if date.group("year") else None
        cursor = date.end()
        separator = _DATE_TIME_SEP.match(norm, cursor)
        time_at = separator.end() if separator else cursor
    else:
        time_at = cursor
    time = _TIME_12.match(norm, time_at) or _TIME_24.match(norm, time_at)
    if date and not time and norm[time_at : time_at + 1].isdigit():
        # "May 28 at 7": a time was printed but is none of the forms (no meridiem, no
        # minutes); not a date without a time.
        return None
    hour: int | None = None
    minute = 0
    meridiem = None
    if time:
        hour_digits, minute_digits = time.group("hour", "minute")
        meridiem = time.groupdict().get("meridiem")
        hour = int(hour_digits)
        minute = int(minute_digits or 0)
        cursor = time.end()
    elif not date:
        return None
    if time and not date and weekday is None:
        # "Resets by 4:00 AM Friday Apr 24": the date may follow the time.
        lead = _TRAILING_DATE.match(norm, cursor)
        after = _DATE.match(norm, lead.end()) if lead else None
        if lead and after:
            month = month_number(after.group("month"))
            day = int(after.group("day"))
            year = int(after.group("year")) if after.group("year") else None
            date = after
            cursor = after.end()
    if date:
        weekday = None  # the date says which day; a weekday before it adds nothing
    elif weekday is not None and hour is None:
        return None
    zone = _ZONE.match(norm, cursor)
    iana = None
    if zone and hour is not None:
        label = _zone_label(norm[cursor : zone.start("zone")], zone.group("zone"))
        if label is not None:
            iana = label
            cursor = zone.end()
    printed = Printed(
        hour=hour,
        minute=minute,
        meridiem=meridiem,
        month=month,
        day=day,
        year=year,
        iana=iana,
        as_printed=norm[pos:cursor],
        weekday=weekday,
    )
    return cursor, printed


def _zone_label(before: str, words: str) -> str | None:
    """The zone named in parentheses after a time, or None when the parentheses hold
    something else: prose ("(No content)"), or, on the next line, a word no zone has. A
    single word in the zone's own place (same line) is returned whatever it is: one that is
    no zone is refused as zone_unknown, never read in the host's zone."""
    unwrapped = _WRAP.sub("", words)
    if any(char.isspace() for char in unwrapped):
        return None
    if "\n" in before and not _known_zone(unwrapped):
        return None
    return unwrapped


def _known_zone(name: str) -> bool:
    return name in ("Z", "Etc/Unknown") or is_offset_label(name) or iana_zone(name) is not None
