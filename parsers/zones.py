"""Zones as the CLIs print them: IANA names, en-US short names, and GMT offsets (rule 5)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: The short names en-US prints (Intl.DateTimeFormat, timeZoneName 'short'); each is one fixed
#: offset. Every other zone prints as GMT+h / GMT-h:mm.
EN_US_SHORT_NAMES: dict[str, int] = {
    "PST": -8 * 60,
    "PDT": -7 * 60,
    "MST": -7 * 60,
    "MDT": -6 * 60,
    "CST": -6 * 60,
    "CDT": -5 * 60,
    "EST": -5 * 60,
    "EDT": -4 * 60,
    "AKST": -9 * 60,
    "AKDT": -8 * 60,
    "HST": -10 * 60,
    "GMT": 0,
    "UTC": 0,
}

_IANA_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+){0,2}")
_GMT_OFFSET = re.compile(r"(?:GMT|UTC)([+-])(\d{1,2})(?::?(\d{2}))?")
# Names that are valid zone keys but say nothing about where the host is.
_UNKNOWN_ZONES = frozenset({"Etc/Unknown", "Factory", "localtime", "posixrules"})


class ZoneError(ValueError):
    """A zone that cannot be used; `code` is the refusal code to give."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@lru_cache(maxsize=512)
def iana_zone(name: str) -> ZoneInfo | None:
    """The IANA zone of that name (aliases such as Asia/Calcutta included), or None."""
    if name in _UNKNOWN_ZONES or not _IANA_NAME.fullmatch(name):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def host_zone(zone: str | None) -> ZoneInfo:
    """The host's zone as the caller gave it, or a ZoneError that says why it cannot be used."""
    found = host_zone_or_error(zone)
    if isinstance(found, ZoneError):
        raise found
    return found


# Most calls repeat one of a few zone names (often None); a raised and caught exception costs
# more than the rest of resolving a time, so the lookup returns the error and is cached.
@lru_cache(maxsize=256)
def host_zone_or_error(zone: str | None) -> ZoneInfo | ZoneError:
    """host_zone, returning its ZoneError instead of raising it."""
    if zone is None or not zone.strip():
        return ZoneError(
            "zone_unknown", "the time is in the host's local zone; pass the host's IANA zone"
        )
    found = iana_zone(zone.strip())
    if found is None:
        return ZoneError("zone_unknown", f"{zone!r} is not a usable IANA zone")
    return found


def is_offset_label(label: str) -> bool:
    """Whether a label is a GMT/UTC offset such as "GMT-3" or "UTC+5:30"."""
    return _GMT_OFFSET.fullmatch(label) is not None


def fixed_offset(minutes: int, name: str) -> tzinfo:
    return timezone(timedelta(minutes=minutes), name)


def printed_zone(label: str) -> tzinfo | None:
    """A zone a CLI printed: an en-US short name or a GMT/UTC offset. None if neither."""
    label = label.strip()
    if label in EN_US_SHORT_NAMES:
        return fixed_offset(EN_US_SHORT_NAMES[label], label)
    match = _GMT_OFFSET.fullmatch(label)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        hours = int(match.group(2))
        minutes = int(match.group(3) or 0)
        if hours > 14 or minutes >= 60:
            return None
        return fixed_offset(sign * (hours * 60 + minutes), label)
    return None


def abbreviation_in_host_zone(label: str, zone: str | None, near: datetime) -> tzinfo | None:
    """An abbreviation outside the en-US list resolves only when the host's zone uses it
    around that instant (rule 5); returns the host zone then."""
    try:
        host = host_zone(zone)
    except ZoneError:
        return None
    for hours in (0, 12, 24, -12):
        if host.tzname(near + timedelta(hours=hours)) == label:
            return host
    return None
