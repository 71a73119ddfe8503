"""Render usage-limit messages exactly as each CLI prints them, from the true reset instant.

A renderer takes what the CLI knew (the true reset instant, the host's IANA zone and the
moment it printed) and returns the text it prints, with what a parser needs to know to check
itself against the truth: the scope the text names, the resolution the parser should report,
the wall time and zone it printed, and whether it needs the host's zone at all.

The formats follow /work/shared/corpus/FORMATS.md:

- Codex `format_retry_timestamp`: "3:28 PM" when the reset falls on the host's local date of
  "now", else "May 11th, 2026 1:36 PM"; seconds are dropped (the minute is truncated) and the
  zone is never printed. The older duration form "try again in 3 days 2 hours 5 minutes" floors
  to the minute and drops zero units.
- Gemini `Intl.DateTimeFormat('en-US', {hour, minute, timeZoneName: 'short'})` of now + delay:
  "2:55 PM PST", "10:57 PM GMT-3", "2:30 PM GMT+5:30", sometimes with U+202F before AM/PM; and
  the server's Go duration "Your quota will reset after 8h44m7s.".
- Claude: "5:40pm" / "5pm" (":00" dropped) with the IANA zone in parentheses, a date ("Jul 25,
  9pm" or "Apr 23 at 4pm") only when the reset is not on the local "today"; the epoch form
  "Claude AI usage limit reached|<epoch>"; stream-json `rate_limit_event` lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any, Literal
from zoneinfo import ZoneInfo

Shape = Literal["time_of_day", "dated", "duration", "epoch", "structured"]

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

#: Host zones for round trips: west and east of UTC, half- and quarter-hour offsets, DST in
#: both hemispheres (Lord Howe's is 30 minutes, Dublin's is negative), the +14 edge, aliases
#: and the POSIX-inverted Etc zones.
HOST_ZONES: tuple[str, ...] = (
    "UTC",
    "Etc/GMT+5",
    "Etc/GMT-14",
    "Africa/Abidjan",
    "Atlantic/Azores",
    "Europe/London",
    "Europe/Dublin",
    "Europe/Berlin",
    "Europe/Warsaw",
    "Europe/Moscow",
    "Asia/Tehran",
    "Asia/Kolkata",
    "Asia/Calcutta",
    "Asia/Kathmandu",
    "Asia/Tokyo",
    "Australia/Adelaide",
    "Australia/Lord_Howe",
    "Pacific/Auckland",
    "Pacific/Chatham",
    "Pacific/Kiritimati",
    "Pacific/Pago_Pago",
    "Pacific/Honolulu",
    "America/Anchorage",
    "America/Los_Angeles",
    "America/Phoenix",
    "America/Denver",
    "America/Chicago",
    "America/New_York",
    "America/St_Johns",
    "America/Sao_Paulo",
    "America/Recife",
)

#: The zones en-US gives a short name of its own (CLDR's US metazones): (standard, daylight).
US_SHORT_NAMES: dict[str, tuple[str, str]] = {
    "America/Los_Angeles": ("PST", "PDT"),
    "America/Phoenix": ("MST", "MDT"),
    "America/Denver": ("MST", "MDT"),
    "America/Chicago": ("CST", "CDT"),
    "America/New_York": ("EST", "EDT"),
    "America/Anchorage": ("AKST", "AKDT"),
    "Pacific/Honolulu": ("HST", "HDT"),
}

#: JSON as JavaScript's JSON.stringify writes it: no spaces.
COMPACT = (",", ":")

UTC_ZONE_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu"})


@dataclass(frozen=True, slots=True)
class Rendered:
    """One printed message and what a parser must make of it."""

    text: str
    provider: str
    #: The scope the text names, as docs/parsing.md spells it; only checked when pinned.
    scope: str | None
    scope_pinned: bool
    #: The resolution_s a parser should report for this text.
    resolution_s: int
    shape: Shape
    #: The IANA zone the text names, if any (then `zone` is not needed).
    printed_zone: str | None = None
    #: True when only the host's zone can place the printed wall time.
    needs_host_zone: bool = False
    #: The printed wall time (minute-truncated, naive) and the zone it is local to, for
    #: DST-fold checks; None for durations, epochs and fixed-offset times.
    wall_time: datetime | None = None
    wall_zone: str | None = None


@dataclass(frozen=True, slots=True)
class Family:
    """A message family: how to render it and which true resets it can state."""

    name: str
    provider: str
    render: Callable[..., Rendered]
    #: How far ahead of the moment of printing the true reset may lie, in seconds.
    min_lead_s: int
    max_lead_s: int
    #: True resets fall on multiples of one of these (seconds since the epoch).
    granularities_s: tuple[int, ...] = (1,)
    #: The lead is drawn in milliseconds (the CLI prints fractional seconds).
    lead_in_ms: bool = False
    options: Mapping[str, Sequence[Any]] = field(default_factory=dict)


# --------------------------------------------------------------------------- time helpers


def local(instant: datetime, zone: str) -> datetime:
    """The instant as a wall time in the IANA zone."""
    return instant.astimezone(ZoneInfo(zone))


def twelve_hour(hour: int) -> int:
    """The hour on a 12-hour clock: 0 -> 12, 13 -> 1."""
    return hour % 12 or 12


def ordinal_suffix(day: int) -> str:
    """Codex's `day_suffix`: st/nd/rd/th, with 11, 12 and 13 taking th."""
    if 11 <= day % 100 <= 13:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def minute_floor(instant: datetime) -> datetime:
    """The instant with seconds and below dropped."""
    return instant.replace(second=0, microsecond=0)


def gmt_offset_name(offset: timedelta) -> str:
    """en-US's fallback zone name: "GMT", "GMT-3", "GMT+5:30", "GMT+12:45"."""
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return "GMT"
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"GMT{sign}{hours}" + (f":{rest:02d}" if rest else "")


def en_us_short_zone_name(instant: datetime, zone: str) -> str:
    """What `timeZoneName: 'short'` prints in en-US for the zone at that instant."""
    wall = local(instant, zone)
    if zone in UTC_ZONE_NAMES:
        return "UTC"
    if zone in US_SHORT_NAMES:
        standard, daylight = US_SHORT_NAMES[zone]
        return daylight if wall.dst() else standard
    offset = wall.utcoffset()
    assert offset is not None
    return gmt_offset_name(offset)


@cache
def utc_offset_changes(
    zone: str, first_year: int = 2024, last_year: int = 2031
) -> tuple[datetime, ...]:
    """Instants (UTC, to the second) at which the zone's UTC offset changes, in those years."""
    tz = ZoneInfo(zone)
    changes: list[datetime] = []
    day = datetime(first_year, 1, 1, tzinfo=UTC)
    end = datetime(last_year + 1, 1, 1, tzinfo=UTC)
    while day < end:
        following = day + timedelta(days=1)
        if day.astimezone(tz).utcoffset() != following.astimezone(tz).utcoffset():
            low, high = day, following
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                middle = middle.replace(microsecond=0)
                if middle.astimezone(tz).utcoffset() == low.astimezone(tz).utcoffset():
                    low = middle
                else:
                    high = middle
            changes.append(high)
        day = following
    return tuple(changes)


def fold_shift(wall_time: datetime, zone: str) -> timedelta:
    """How much later the second reading of a repeated wall time is (zero when not repeated)."""
    tz = ZoneInfo(zone)
    first = wall_time.replace(tzinfo=tz, fold=0).astimezone(UTC)
    second = wall_time.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if first.astimezone(tz).replace(tzinfo=None) != wall_time:
        return timedelta(0)  # in a gap: not a repeated time
    return max(second - first, timedelta(0))


# --------------------------------------------------------------------------- Codex


def codex_retry_timestamp(reset: datetime, zone: str, now: datetime) -> str:
    """Codex `format_retry_timestamp`: a bare time on the host's current date, else dated."""
    wall = local(reset, zone)
    clock = f"{twelve_hour(wall.hour)}:{wall.minute:02d} {'AM' if wall.hour < 12 else 'PM'}"
    if wall.date() == local(now, zone).date():
        return clock
    month = MONTHS[wall.month - 1]
    return f"{month} {wall.day}{ordinal_suffix(wall.day)}, {wall.year} {clock}"


CODEX_AT_TEMPLATES: dict[str, str] = {
    "enterprise": "You{a}ve hit your usage limit. Try again at {t}.",
    "plus": (
        "You{a}ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
        "https://chatgpt.com/codex/settings/usage to purchase more credits or try again at {t}."
    ),
    "team": (
        "You{a}ve hit your usage limit. To get more access now, send a request to your admin or "
        "try again at {t}."
    ),
    "free": (
        "You{a}ve hit your usage limit. Upgrade to Plus to continue using Codex "
        "(https://chatgpt.com/explore/plus), or try again at {t}."
    ),
    "pro": (
        "You{a}ve hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase "
        "more credits or try again at {t}."
    ),
    "pricing": (
        "You{a}ve hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try "
        "again at {t}."
    ),
    "model": (
        "You{a}ve hit your usage limit for GPT-5.3-Codex-Spark. Switch to another model now, or "
        "try again at {t}."
    ),
}

CODEX_PREFIXES = ("", "■ ", "🖐  ")


def codex_try_again_at(
    reset: datetime,
    zone: str,
    now: datetime,
    plan: str = "enterprise",
    apostrophe: str = "'",
    prefix: str = "",
) -> Rendered:
    """Codex's usage-limit error with an absolute retry time, for one plan's template."""
    stamp = codex_retry_timestamp(reset, zone, now)
    text = prefix + CODEX_AT_TEMPLATES[plan].format(a=apostrophe, t=stamp)
    wall = minute_floor(local(reset, zone)).replace(tzinfo=None)
    dated = local(reset, zone).date() != local(now, zone).date()
    return Rendered(
        text=text,
        provider="codex",
        scope="model" if plan == "model" else None,
        scope_pinned=True,
        resolution_s=60,
        shape="dated" if dated else "time_of_day",
        needs_host_zone=True,
        wall_time=wall,
        wall_zone=zone,
    )


def codex_duration_words(seconds: float) -> str:
    """The old Codex duration: "4 days 2 hours", "3 hours 2 minutes"; floored, zeros dropped."""
    minutes = int(seconds // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [
        f"{n} {unit}" for n, unit in ((days, "days"), (hours, "hours"), (minutes, "minutes")) if n
    ]
    if not parts:
        raise ValueError("Codex printed no duration under a minute")
    return " ".join(parts)


def codex_try_again_in(
    reset: datetime, zone: str, now: datetime, pricing: bool = False, prefix: str = ""
) -> Rendered:
    """Codex before Oct 2025: "Try again in 3 days 2 hours 5 minutes." counted from now."""
    del zone  # a duration needs no zone
    words = codex_duration_words((reset - now).total_seconds())
    if pricing:
        body = (
            "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or "
            f"try again in {words}."
        )
    else:
        body = f"You've hit your usage limit. Try again in {words}."
    return Rendered(
        text=prefix + body,
        provider="codex",
        scope=None,
        scope_pinned=True,
        resolution_s=60,
        shape="duration",
    )


# --------------------------------------------------------------------------- Gemini


def gemini_reset_time(reset: datetime, zone: str, narrow_space: bool = False) -> str:
    """`Intl.DateTimeFormat('en-US', {hour, minute: '2-digit', timeZoneName: 'short'})`."""
    wall = local(reset, zone)
    space = "\u202f" if narrow_space else " "
    meridiem = "AM" if wall.hour < 12 else "PM"
    name = en_us_short_zone_name(reset, zone)
    return f"{twelve_hour(wall.hour)}:{wall.minute:02d}{space}{meridiem} {name}"


def gemini_usage_dialog(
    reset: datetime,
    zone: str,
    now: datetime,
    model: str = "all Pro models",
    narrow_space: bool = False,
    auth_line: bool = False,
) -> Rendered:
    """Gemini's quota dialog; its time is now + retryDelay, formatted on the host."""
    del now  # the CLI formats now + delay, which is the reset itself
    lines = [
        f"Usage limit reached for {model}.",
        f"Access resets at {gemini_reset_time(reset, zone, narrow_space)}.",
        "/stats model for usage details",
        "/model to switch models.",
    ]
    if auth_line:
        lines.append("/auth to switch to API key.")
    return Rendered(
        text="\n".join(lines),
        provider="gemini",
        scope=None,
        scope_pinned=False,
        resolution_s=60,
        shape="time_of_day",
    )


def go_duration(milliseconds: int) -> str:
    """Go's `time.Duration.String` for a whole number of milliseconds: "8h44m7s", "1m0.5s"."""
    if milliseconds == 0:
        return "0s"
    if milliseconds < 1000:
        return f"{milliseconds}ms"
    seconds, fraction = divmod(milliseconds, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    second_text = str(seconds) + (f".{fraction:03d}".rstrip("0") if fraction else "") + "s"
    if hours:
        return f"{hours}h{minutes}m{second_text}"
    if minutes:
        return f"{minutes}m{second_text}"
    return second_text


def gemini_capacity_reset_after(
    reset: datetime, zone: str, now: datetime, wrapped: bool = False
) -> Rendered:
    """Code Assist's "Your quota will reset after 8h44m7s." with the server's exact delay."""
    del zone
    delay_ms = round((reset - now) / timedelta(milliseconds=1))
    if (reset - now) != timedelta(milliseconds=delay_ms):
        raise ValueError("the Go-duration renderer needs a whole number of milliseconds")
    body = (
        "You have exhausted your capacity on this model. "
        f"Your quota will reset after {go_duration(delay_ms)}."
    )
    return Rendered(
        text=f"[API Error: {body}]" if wrapped else body,
        provider="gemini",
        scope=None,
        scope_pinned=False,
        resolution_s=0,
        shape="duration",
    )


# --------------------------------------------------------------------------- Claude


def claude_clock(wall: datetime) -> str:
    """Claude's time of day: "5pm", "5:40pm", "12am"; the minute dropped when it is :00."""
    meridiem = "am" if wall.hour < 12 else "pm"
    hour = twelve_hour(wall.hour)
    return f"{hour}{meridiem}" if wall.minute == 0 else f"{hour}:{wall.minute:02d}{meridiem}"


#: Claude prints no date for a reset under 24 h ahead, even one on the next local day (seen
#: from the real CLI 2.1.332: "resets 4:35pm (UTC)" 20 h ahead), and a date from 24 h on.
CLAUDE_BARE_TIME_LEAD = timedelta(hours=24)


def claude_dated(reset: datetime, now: datetime) -> bool:
    """Whether Claude prints the reset's date: 24 h or more ahead."""
    return reset - now >= CLAUDE_BARE_TIME_LEAD


def claude_when(reset: datetime, zone: str, now: datetime, date_style: str = "comma") -> str:
    """Claude's reset time: bare under 24 h ahead, else "Jul 25, 9pm" / "Jul 25 at 9pm"."""
    wall = local(reset, zone)
    clock = claude_clock(wall)
    if not claude_dated(reset, now):
        return clock
    day = f"{MONTHS[wall.month - 1]} {wall.day}"
    return f"{day}, {clock}" if date_style == "comma" else f"{day} at {clock}"


def _claude_wall(
    text: str,
    reset: datetime,
    zone: str,
    now: datetime,
    scope: str | None,
    printed_zone: str | None,
    dated_allowed: bool,
) -> Rendered:
    wall = local(reset, zone)
    dated = dated_allowed and claude_dated(reset, now)
    return Rendered(
        text=text,
        provider="claude",
        scope=scope,
        scope_pinned=True,
        resolution_s=60,
        shape="dated" if dated else "time_of_day",
        printed_zone=printed_zone,
        needs_host_zone=printed_zone is None,
        wall_time=minute_floor(wall).replace(tzinfo=None),
        wall_zone=zone,
    )


CLAUDE_SESSION_FOOTERS = (
    "",
    "\n/upgrade to increase your usage limit.",
    "\n/login to switch to an API usage-billed account.",
    "\n     /usage-credits to finish what you’re working on.",
)


def claude_session_limit(
    reset: datetime, zone: str, now: datetime, date_style: str = "comma", footer: str = ""
) -> Rendered:
    """Claude 2.x: "You've hit your session limit · resets 5:40pm (Europe/Berlin)"."""
    when = claude_when(reset, zone, now, date_style)
    text = f"You've hit your session limit · resets {when} ({zone}){footer}"
    return _claude_wall(text, reset, zone, now, "session", zone, dated_allowed=True)


def claude_hit_limit(reset: datetime, zone: str, now: datetime, date_style: str = "at") -> Rendered:
    """Claude 2.1: "You've hit your limit · resets 8pm (Europe/Berlin)", no scope named."""
    when = claude_when(reset, zone, now, date_style)
    text = f"You've hit your limit · resets {when} ({zone})"
    return _claude_wall(text, reset, zone, now, None, zone, dated_allowed=True)


def claude_weekly_limit(
    reset: datetime, zone: str, now: datetime, date_style: str = "comma"
) -> Rendered:
    """Claude 2.x: "You've hit your weekly limit · resets Jul 25, 9pm (America/New_York)"."""
    when = claude_when(reset, zone, now, date_style)
    text = f"You've hit your weekly limit · resets {when} ({zone})"
    return _claude_wall(text, reset, zone, now, "weekly", zone, dated_allowed=True)


def claude_five_hour(reset: datetime, zone: str, now: datetime, with_zone: bool = True) -> Rendered:
    """Claude 1.x/2.0: "5-hour limit reached · resets 2pm (Pacific/Auckland) · /upgrade ..."."""
    clock = claude_clock(local(reset, zone))
    if with_zone:
        text = (
            f"5-hour limit reached · resets {clock} ({zone}) · /upgrade to Max 20x or turn on "
            "/extra-usage"
        )
    else:
        text = f"5-hour limit reached ∙ resets {clock}"
    printed = zone if with_zone else None
    return _claude_wall(text, reset, zone, now, "five_hour", printed, dated_allowed=False)


CLAUDE_WILL_RESET_FOOTERS = (
    "",
    "\n • /upgrade to increase your usage limit.",
    "\n     /upgrade to increase your usage limit.",
)


def claude_will_reset(reset: datetime, zone: str, now: datetime, footer: str = "") -> Rendered:
    """Claude 1.0: "Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw)."."""
    clock = claude_clock(local(reset, zone))
    text = f"Claude usage limit reached. Your limit will reset at {clock} ({zone}).{footer}"
    return _claude_wall(text, reset, zone, now, None, zone, dated_allowed=False)


def claude_epoch(reset: datetime, zone: str, now: datetime) -> Rendered:
    """Claude's raw form: "Claude AI usage limit reached|<unix seconds>"."""
    del zone, now
    return Rendered(
        text=f"Claude AI usage limit reached|{int(reset.timestamp())}",
        provider="claude",
        scope=None,
        scope_pinned=True,
        resolution_s=0,
        shape="epoch",
    )


def claude_stream_json(
    reset: datetime,
    zone: str,
    now: datetime,
    allowed_before: bool = False,
    result_line: bool = False,
    ascii_json: bool = False,
) -> Rendered:
    """Claude `--output-format stream-json`: a rejected rate_limit_event (and its neighbours)."""

    def event(status: str, resets_at: datetime) -> str:
        info = {
            "status": status,
            "resetsAt": int(resets_at.timestamp()),
            "rateLimitType": "five_hour",
        }
        line = {"type": "rate_limit_event", "rate_limit_info": info}
        return json.dumps(line, separators=COMPACT)

    lines = []
    if allowed_before:
        # Emitted while allowed too, with an earlier window: only "rejected" may count.
        lines.append(event("allowed", reset - timedelta(hours=3)))
    lines.append(event("rejected", reset))
    if result_line:
        banner = claude_session_limit(reset, zone, now).text
        result = {"type": "result", "subtype": "success", "is_error": True, "result": banner}
        lines.append(json.dumps(result, ensure_ascii=ascii_json, separators=COMPACT))
    return Rendered(
        text="\n".join(lines),
        provider="claude",
        scope="five_hour",
        scope_pinned=True,
        resolution_s=0,
        shape="structured",
    )


# --------------------------------------------------------------------------- catalogue

MINUTE = 60
HOUR = 3600
DAY = 86400

#: Times of day without a date stay under 23 h 58 min ahead: one a day ahead to within the
#: minute shares its printed minute with the one passing now, which rule 3a reads (see
#: test_roundtrip's module docstring).
TIME_OF_DAY_MAX_LEAD_S = 23 * HOUR + 58 * MINUTE

FAMILIES: tuple[Family, ...] = (
    Family(
        "codex_try_again_at",
        "codex",
        codex_try_again_at,
        MINUTE,
        7 * DAY,
        options={
            "plan": tuple(CODEX_AT_TEMPLATES),
            "apostrophe": ("'", "’"),
            "prefix": CODEX_PREFIXES,
        },
    ),
    Family(
        "codex_try_again_at_5h",
        "codex",
        codex_try_again_at,
        MINUTE,
        5 * HOUR,
        options={"plan": tuple(CODEX_AT_TEMPLATES), "prefix": CODEX_PREFIXES},
    ),
    Family(
        "codex_try_again_in",
        "codex",
        codex_try_again_in,
        MINUTE,
        7 * DAY,
        options={"pricing": (False, True), "prefix": CODEX_PREFIXES},
    ),
    Family(
        "gemini_usage_dialog",
        "gemini",
        gemini_usage_dialog,
        MINUTE,
        TIME_OF_DAY_MAX_LEAD_S,
        options={
            "model": ("all Pro models", "gemini-2.5-pro", "gemini-3-pro-preview"),
            "narrow_space": (False, True),
            "auth_line": (False, True),
        },
    ),
    Family(
        "gemini_capacity_reset_after",
        "gemini",
        gemini_capacity_reset_after,
        # Under 300 s a stated wait is a throttle (rule 10), not a stop.
        301,
        DAY,
        lead_in_ms=True,
        options={"wrapped": (False, True)},
    ),
    Family(
        "claude_session_limit",
        "claude",
        claude_session_limit,
        MINUTE,
        5 * HOUR,
        granularities_s=(MINUTE, 10 * MINUTE),
        options={"date_style": ("comma", "at"), "footer": CLAUDE_SESSION_FOOTERS},
    ),
    Family(
        "claude_hit_limit",
        "claude",
        claude_hit_limit,
        MINUTE,
        5 * HOUR,
        granularities_s=(MINUTE, 10 * MINUTE),
        options={"date_style": ("comma", "at")},
    ),
    Family(
        "claude_five_hour",
        "claude",
        claude_five_hour,
        MINUTE,
        5 * HOUR,
        granularities_s=(MINUTE, 10 * MINUTE),
        options={"with_zone": (True, False)},
    ),
    Family(
        "claude_will_reset",
        "claude",
        claude_will_reset,
        MINUTE,
        5 * HOUR,
        granularities_s=(MINUTE,),
        options={"footer": CLAUDE_WILL_RESET_FOOTERS},
    ),
    Family(
        "claude_weekly_limit",
        "claude",
        claude_weekly_limit,
        MINUTE,
        7 * DAY,
        granularities_s=(MINUTE, 10 * MINUTE),
        options={"date_style": ("comma", "at")},
    ),
    Family("claude_epoch", "claude", claude_epoch, MINUTE, 5 * HOUR, granularities_s=(MINUTE,)),
    Family(
        "claude_stream_json",
        "claude",
        claude_stream_json,
        MINUTE,
        5 * HOUR,
        granularities_s=(MINUTE, 10 * MINUTE),
        options={
            "allowed_before": (False, True),
            "result_line": (False, True),
            "ascii_json": (False, True),
        },
    ),
)

FAMILIES_BY_NAME: dict[str, Family] = {family.name: family for family in FAMILIES}


def local_midnight(day: date, zone: str) -> datetime:
    """The first instant of the local date (its first reading if midnight is repeated)."""
    return datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone)).astimezone(UTC)
