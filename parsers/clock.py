"""From the pieces of a printed reset (time, date, zone) to a Reset or a Refusal."""

from __future__ import annotations

from datetime import tzinfo
from typing import Literal, NamedTuple

from rewake.parsers import timeres
from rewake.parsers.findings import Context
from rewake.parsers.grammar import squeeze
from rewake.parsers.timeres import Resolved
from rewake.parsers.verdict import Form, Provider, Refusal
from rewake.parsers.zones import ZoneError, host_zone_or_error, iana_zone, printed_zone


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

    @property
    def quoted(self) -> str:
        return repr(" ".join(self.as_printed.split())) if self.as_printed else "the reset"


def _zone(printed: Printed, ctx: Context) -> tuple[tzinfo, Form] | Refusal:
    if printed.iana is not None:
        name = squeeze(printed.iana)
        if name in ("Etc/Unknown", "Unknown"):
            return Refusal(
                "zone_unknown", f"{printed.quoted}: the CLI printed {name}: its zone is unknown"
            )
        found = iana_zone(name)
        if found is None:
            return Refusal("zone_unknown", f"{printed.quoted}: {name!r} is not an IANA zone")
        return found, "named_zone"
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
    ctx: Context,
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
    if bare_time == "same_day":
        return timeres.same_day_time(hour, minute, tz, ctx.observed_at, form=form)
    return timeres.next_time_of_day(
        hour,
        minute,
        tz,
        ctx.observed_at,
        limit=timeres.time_of_day_window(provider, scope),
        form=form,
    )
