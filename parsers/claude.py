"""Claude Code's limit messages.

Forms read (the CLI prints 12-hour times in lower case, drops ":00", and names an IANA zone in
2.x; it prints a date only when the reset is not today, and never a year):

    Claude AI usage limit reached|1755615600                       (epoch, also in `result`)
    Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).
    5-hour limit reached ∙ resets 5am                              (1.x, host zone)
    Opus weekly limit reached ∙ resets Oct 9, 8am.
    Opus weekly limit reached ∙ resets Oct 24                      (date only: time_not_stated)
    5-hour limit reached · resets 2pm (Pacific/Auckland) · /upgrade to Max 20x ...
    You've hit your session limit · resets 11:20am (Europe/Budapest)
    You've hit your weekly limit · resets Jul 25, 9pm (America/New_York)
    You've hit your limit · resets Apr 23 at 4pm (America/Recife)
    You're out of extra usage · resets 1pm (America/Los_Angeles)
    Credit balance too low · Add funds: ...                        (no_reset)
    Error: 429 {..."rate_limit_error"...try again later...}       (not_stated)
    API Error (...) · Retrying in 4 seconds… (attempt 4/10)        (client countdown)
    Approaching usage limit · resets at 6am                        (a warning: not a stop)
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Final

from rewake.parsers import claude_failures, clock, findings
from rewake.parsers.findings import Context, Finding
from rewake.parsers.grammar import (
    DURATION,
    MONTH_NAME,
    TIME_12,
    ZONE_IN_PARENS,
    Gated,
    GateIndex,
    any_within,
    module_gates,
    month_number,
    read_duration,
    squeeze,
)
from rewake.parsers.text import Text
from rewake.parsers.timeres import Resolved, after_duration, at_epoch, window
from rewake.parsers.verdict import Refusal

PROVIDER: Final = "claude"

_EPOCH = Gated(
    r"Claude(?: AI| Max| Pro)? usage limit reached[^|\n]{0,80}\|\s{0,2}(?P<epoch>\d{10,13})(?!\d)",
    ("usage limit reached",),
)

# The epoch form's head ("Claude AI usage limit reached") is read there, not again as a banner.
_EPOCH_HEAD_REACH = 8

_WEEKLY_REST = r"[Ww]eekly\s+limit\s+reached"
_STOP = Gated(
    # Every alternative starts with a literal character, its group after it: only then does
    # the regex engine skip, in C, the positions where no banner can start (a class or a group
    # up front makes it try each alternative at every position, 4x slower). A group is named
    # once, so "Session" and "session" are two; _HEAD_SCOPES maps each to its scope.
    r"5(?P<five_hour>[- ]?hours?\s+limit\s+reached)"
    r"|S(?P<session>ession\s+limit\s+reached)|s(?P<session_>ession\s+limit\s+reached)"
    rf"|O(?P<opus_weekly>pus\s+{_WEEKLY_REST})|S(?P<sonnet_weekly>onnet\s+{_WEEKLY_REST})"
    rf"|F(?P<fable_weekly>able\s+{_WEEKLY_REST})|H(?P<haiku_weekly>aiku\s+{_WEEKLY_REST})"
    r"|W(?P<weekly>eekly\s+limit\s+reached)|w(?P<weekly_>eekly\s+limit\s+reached)"
    r"|M(?P<monthly>onthly\s+limit\s+reached)|m(?P<monthly_>onthly\s+limit\s+reached)"
    r"|Y(?:(?P<hit>ou've\s+hit\s+your\s+"
    r"(?:(?P<which>session|weekly|monthly|daily|Opus|Sonnet|Fable|Haiku)\s+)?limit\b"
    # Gemini Code Assist's "You've hit your daily limit of requests with Gemini ..." fallback.
    r"(?!\s+of\s+requests))"
    r"|(?P<extra>ou're\s+out\s+of\s+extra\s+usage\b))"
    r"|C(?P<legacy>laude(?:\s+(?:AI|Max|Pro))?\s+usage\s+limit\s+reached\b)"
    # 2.0.6x printed a bare "Limit reached · resets 5pm (Etc/Unknown)"; read only with a reset.
    r"|L(?P<bare>imit\s+reached)(?=\s{0,3}·\s{0,3}resets)",
    ("reached", "You've", "You're"),
)
_HIT_SCOPES = {
    "session": "session",
    "weekly": "weekly",
    "monthly": "monthly",
    "daily": "daily",
}

_RESET_LEAD = re.compile(
    # The clause may wrap onto the next line under Claude's indentation.
    r"[.!]?\s{0,16}(?:[·|-]\s{0,16})?(?:Your\s+limit\s+will\s+reset\s+at|[Rr]esets(?:\s+at)?)\s{1,4}"
)
_RESET_IN = re.compile(rf"in\s{{1,4}}(?P<duration>{DURATION})")
_DATE = re.compile(
    rf"{MONTH_NAME}\s{{1,3}}(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
    r"(?:,?\s{1,3}(?P<year>20\d\d)(?!\d))?"
)
_DATE_TIME_SEP = re.compile(r"\s{0,3},\s{0,3}|\s{1,3}at\s{1,3}|\s{1,3}")
_TIME = re.compile(TIME_12)
# The zone may wrap onto the next line under Claude's indentation.
_ZONE = re.compile(r"\s{0,16}" + ZONE_IN_PARENS)
_NATIVE = re.compile(
    r"will\s+(?:auto-?)?continue|auto-?continu\w*|continue\s+when\s+(?:the\s+)?limit\s+resets"
    r"|continuing\s+automatically",
    re.IGNORECASE,
)

#: An organisation's own cap: waiting for a window will not lift it (no_reset).
_ORG_LIMIT = Gated(
    r"You've\s+hit\s+your\s+org(?:anization)?'s\s+(?P<monthly>monthly\s+)?"
    r"(?:usage|spend(?:ing)?)\s+limit",
    # Not "org": with the apostrophe, the needle is tested only in texts that hold one.
    ("org's", "organization's"),
)
_CREDITS = Gated(
    r"[Cc]redit balance (?:is )?too low",
    ("redit balance",),
)
_SPEND = Gated(
    r"(?:hit|reached)\s+(?:your\s+)?(?:org(?:anization)?'s\s+)?(?:monthly\s+)?"
    # "spend cap" is Codex's wording; Claude's is a spend limit.
    r"spend(?:ing)?\s+limit",
    ("spend", "Spend", "SPEND"),
    re.IGNORECASE,
)
_RATE_LIMIT_BODY = Gated(
    r"\"rate_limit_error\"|This request would exceed your account's rate limit",
    ("rate_limit_error", "would exceed your account"),
)
_LIMIT_MENU = Gated(
    r"Stop and wait for limit to reset",
    ("Stop and wait",),
)


def _reset_clause(
    norm: str, pos: int, ctx: Context, scope: str | None
) -> tuple[int, Resolved] | None:
    """Read "· resets ..." or "Your limit will reset at ..." right after a banner's head."""
    lead = _RESET_LEAD.match(norm, pos)
    if lead is None:
        return None
    cursor = lead.end()
    within = _RESET_IN.match(norm, cursor)
    if within:
        duration = read_duration(within.group("duration"))
        if duration is None:
            return within.end(), Refusal("unparseable", "the reset duration could not be read")
        return within.end(), after_duration(
            duration.seconds,
            ctx.observed_at,
            resolution_s=duration.resolution_s,
            limit=window(PROVIDER, scope),
        )
    month = day = year = None
    date = _DATE.match(norm, cursor)
    if date:
        month = month_number(date.group("month"))
        day = int(date.group("day"))
        year = int(date.group("year")) if date.group("year") else None
        cursor = date.end()
        separator = _DATE_TIME_SEP.match(norm, cursor)
        time = _TIME.match(norm, separator.end()) if separator else None
    else:
        time = _TIME.match(norm, cursor)
    hour = minute = None
    meridiem = None
    if time:
        hour_digits, minute_digits, meridiem = time.group("hour", "minute", "meridiem")
        hour = int(hour_digits)
        minute = int(minute_digits or 0)
        cursor = time.end()
    if not date and not time:
        return cursor, Refusal("unparseable", "a reset is announced but its time cannot be read")
    zone = _ZONE.match(norm, cursor)
    iana = None
    if zone and _looks_like_zone(zone.group("zone")):
        iana = zone.group("zone")
        cursor = zone.end()
    # Positional: nine keywords cost more to bind than nine positions, on every banner read.
    printed = clock.Printed(
        hour, minute or 0, meridiem, month, day, year, iana, None, norm[lead.end() : cursor]
    )
    return cursor, clock.resolve(printed, ctx, PROVIDER, scope)


# Cached on the words in parentheses: a pure function of a short printed fragment, and the
# same few zone names recur.
@lru_cache(maxsize=512)
def _looks_like_zone(words: str) -> bool:
    """A parenthesis after a time names a zone only if it reads like one ("Area/City", UTC):
    the next line's "(No content)" is not a zone."""
    name = squeeze(words)
    return "/" in name or name in ("UTC", "GMT", "Z")


_HEAD_SCOPES = {
    "five_hour": "five_hour",
    "session": "session",
    "session_": "session",
    "opus_weekly": "weekly",
    "sonnet_weekly": "weekly",
    "fable_weekly": "weekly",
    "haiku_weekly": "weekly",
    "weekly": "weekly",
    "weekly_": "weekly",
    "monthly": "monthly",
    "monthly_": "monthly",
    "extra": "extra_usage",
}


def _scope(match: re.Match[str]) -> str | None:
    # The banner's alternatives are named groups; `which` is nested in `hit`, which closes
    # after it, so the last group closed names the alternative that matched.
    head = match.lastgroup
    if head == "hit":
        which = match.group("which")
        if which is None:
            return None
        return _HIT_SCOPES.get(which, "model")
    return _HEAD_SCOPES.get(head or "")


_COMMON = findings.CommonPatterns(
    transient=claude_failures.TRANSIENT,
    login=claude_failures.LOGIN,
    login_command="/login",
    other=claude_failures.OTHER,
    warning=claude_failures.WARNING,
    went_on=claude_failures.WENT_ON,
)

#: Every gated pattern this scanner runs; a text that opens none holds nothing it reads.
GATES = module_gates(globals(), *claude_failures.GATES)
_GATE_SET = frozenset(GATES)
_INDEX = GateIndex(GATES)


def scan(text: Text, ctx: Context, opened: AbstractSet[Gated] | None = None) -> list[Finding]:
    """Every Claude Code banner, failure and marker in the text."""
    norm = text.norm
    if opened is None:
        opened = _INDEX.open(norm)
    if opened.isdisjoint(_GATE_SET):
        return []
    found: list[Finding] = []
    epoch_starts: list[int] = []
    for match in _EPOCH.pattern.finditer(norm) if _EPOCH in opened else ():
        epoch_starts.append(match.start())
        resolved = at_epoch(
            float(match.group("epoch")),
            ctx.observed_at,
            limit=window(PROVIDER, None),
            form="epoch",
        )
        found.append(findings.stop(PROVIDER, match.start(), match.end(), resolved))
    for match in _STOP.pattern.finditer(norm) if _STOP in opened else ():
        if epoch_starts and any_within(
            epoch_starts, match.start() - _EPOCH_HEAD_REACH, match.start()
        ):
            continue
        scope = _scope(match)
        clause = _reset_clause(norm, match.end(), ctx, scope)
        if clause is None and match.group("bare"):
            continue
        if clause is None:
            what = match.group(0)
            found.append(findings.not_stated(PROVIDER, match.start(), match.end(), scope, what))
            continue
        end, resolved = clause
        native = False
        if scope == "five_hour":
            line_end = text.line_end(end)
            next_line_end = text.line_end(min(line_end + 1, len(norm)))
            native = bool(_NATIVE.search(norm, end, next_line_end))
        found.append(
            findings.stop(
                PROVIDER,
                match.start(),
                end,
                resolved,
                scope,
                native_auto_continue=native,
            )
        )
    for match in _ORG_LIMIT.pattern.finditer(norm) if _ORG_LIMIT in opened else ():
        scope = "monthly" if match.group("monthly") else "spend_cap"
        found.append(
            findings.no_reset(PROVIDER, match.start(), match.end(), scope, "an org limit is hit")
        )
    for match in _CREDITS.pattern.finditer(norm) if _CREDITS in opened else ():
        found.append(
            findings.no_reset(
                PROVIDER, match.start(), match.end(), "credits", "prepaid credit is used up"
            )
        )
    for match in _SPEND.pattern.finditer(norm) if _SPEND in opened else ():
        found.append(
            findings.no_reset(
                PROVIDER, match.start(), match.end(), "spend_cap", "a spend cap is reached"
            )
        )
    for match in _LIMIT_MENU.pattern.finditer(norm) if _LIMIT_MENU in opened else ():
        found.append(
            findings.not_stated(PROVIDER, match.start(), match.end(), None, "the limit menu")
        )
    if claude_failures.COUNTDOWN in opened:
        found.extend(claude_failures.countdowns(text, ctx))
    for match in _RATE_LIMIT_BODY.pattern.finditer(norm) if _RATE_LIMIT_BODY in opened else ():
        found.append(
            findings.not_stated(PROVIDER, match.start(), match.end(), None, "the API's rate limit")
        )
    found.extend(findings.scan_common(text, PROVIDER, _COMMON, opened))
    return found
