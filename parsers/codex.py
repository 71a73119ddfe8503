"""OpenAI Codex CLI's limit messages.

Codex formats the reset in the host's local zone and never prints the zone
(`format_retry_timestamp`): a bare "3:28 PM" when the reset falls on the host's current date,
else "May 11th, 2026 1:36 PM". Forms read:

    You've hit your usage limit. Try again at 3:51 PM.
    You've hit your usage limit. Upgrade to Plus ..., or try again at Jul 5th, 2026 8:19 PM.
    You've hit your usage limit for GPT-5.3-Codex-Spark. Switch to another model now, or ...
    You've hit your usage limit. ... or try again in 2 days 10 hours 19 minutes.   (before Oct 2025)
    You've hit your usage limit. Try again later.                     (not_stated)
    ... or try again at 10 de jul. de 2026, 11:52.                    (Codex App, pt-BR)
    ... 2026. 9. 13. 오전 10:36에 다시 시도하세요.                       (Codex App, ko)
    Your workspace is out of credits. ... / You hit your spend cap ... (no_reset)
    Quota exceeded. Check your plan and billing details.              (no_reset)
    Rate limit reached for ... Please try again in 5.448s.            (a throttle: transient)
    {"error":{"type":"usage_limit_reached",...,"resets_at":1775317531,...}}
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import cache
from typing import Final

from rewake.parsers import clock, findings
from rewake.parsers.findings import Finding, Observation
from rewake.parsers.grammar import (
    DURATION,
    MONTH_NAME,
    Gated,
    GateIndex,
    module_gates,
    month_number,
    read_duration,
    wrappable,
)
from rewake.parsers.localized import LOCALIZED_DATES, resolve_localized
from rewake.parsers.text import Text
from rewake.parsers.timeres import THROTTLE_S, Reset, Resolved, after_duration, at_epoch, window
from rewake.parsers.verdict import Kind, Refusal

PROVIDER: Final = "codex"

_USAGE_LIMIT = Gated(
    r"You(?:'ve|\s+have)\s+(?:hit|reached)\s+your\s+usage\s+limit"
    r"(?:\s+for\s+(?P<limit_name>[^\n]{1,60}?)(?=\.\s))?",
    ("usage",),
)
#: The Codex App's own banner: "You're out of Codex messages / Your rate limit resets on ...".
# The needle is the one word every match holds whole: the regex lets a line break stand
# between the others, and a needle spanning two words would hide that wrapped banner.
_OUT_OF_MESSAGES = Gated(r"You're\s+out\s+of\s+Codex\s+messages", ("Codex",))
_LOCALIZED_LIMIT = Gated(
    r"atingiu o limite|limite de uso|límite de uso|사용 한도에 도달|사용 한도|лимит запросов"
    # ja "利用制限に達しました" / "利用上限に達しました", zh "已达到使用上限" / "使用限制".
    r"|(?:利用|使用)(?:制限|上限)に達しました|已达到使用(?:上限|限制)|已達到使用(?:上限|限制)"
    r"|Nutzungslimit erreicht|limite d.utilisation|limite di utilizzo",
    (
        "limite",
        "límite",
        "사용 한도",
        "лимит",
        "に達しました",
        "已达到使用",
        "已達到使用",
        "Nutzungslimit",
        "utilisation",
    ),
)
# How far after the head the retry clause may stand: the longest template is ~200 chars.
_CLAUSE_REACH = 400
# Every alternative starts with a literal ("T", "t" spelled out, not [Tt]): only then does
# the search skip, in C, the positions where none can start.
_TRY_AT = re.compile(
    rf"(?:T{wrappable('ry again')}\s+(?:at|after)|t{wrappable('ry again')}\s+(?:at|after)"
    rf"|R{wrappable('esets on')}|r{wrappable('esets on')}|{wrappable('reset on')})\s+"
)
_TRY_IN = re.compile(rf"[Tt]{wrappable('ry again in')}\s+(?P<duration>{DURATION})")
_TRY_LATER = re.compile(rf"[Tt]{wrappable('ry again later')}")
_TIMESTAMP = re.compile(
    rf"(?:{MONTH_NAME}\s(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,\s(?P<year>\d{{4}}),?\s(?:at\s)?)?"
    # A 24-hour time after a date ("August 7, 2026 at 21:15"): hours 13-23 or zero-padded.
    r"(?:(?P<hour>\d{1,2}):(?P<minute>\d{2})\s?(?P<meridiem>[AP]M)\b"
    r"|(?<=[\s,])(?P<hour24>0\d|1[3-9]|2[0-3]):(?P<minute24>[0-5]\d)(?![\d:]|\s?[AaPp]\.?[Mm]))"
)

_NO_RESET: tuple[tuple[Gated, str | None, str], ...] = (
    (
        Gated(r"Your workspace is out of credits", ("workspace",)),
        "credits",
        "the workspace is out of credits",
    ),
    (Gated(r"You hit your spend cap", ("spend cap",)), "spend_cap", "a spend cap is reached"),
    (
        Gated(r"Quota exceeded\.\s+Check your plan and billing details", ("Quota exceeded",)),
        "credits",
        "the API quota (billing) is used up",
    ),
    (
        Gated(r"Insufficient quota", ("nsufficient", "NSUFFICIENT"), re.IGNORECASE),
        "credits",
        "the API quota is used up",
    ),
    (
        Gated(r"To use Codex with your ChatGPT plan,\s+upgrade to", ("To use Codex",)),
        None,
        "the plan does not include Codex",
    ),
    (
        Gated(r"free quota has been exhausted", ("free quota",)),
        "credits",
        "the free quota is used up",
    ),
    (
        # The Codex App's "out of credits" in its other locales: ko, ja, pt and es. Not the
        # limit banner's way out ("クレジットを追加してください", add credits to continue).
        Gated(
            r"크레딧이\s{0,2}(?:부족|소진|모두\s소진|없습니다)"
            r"|クレジット(?:が|の残高が)(?:不足|なくなり|足りません)"
            r"|(?:sem|sin)\s+créditos|créditos\s+(?:insuficientes|esgotados|agotados)",
            ("크레딧", "クレジット", "créditos"),
        ),
        "credits",
        "the workspace is out of credits",
    ),
)

_API_RATE_LIMIT = Gated(
    r"Rate\s+limit\s+reached\s+for",
    ("Rate",),
)
_PLEASE_TRY_IN = re.compile(rf"try\s+again\s+in\s+(?P<duration>{DURATION})")
_RETRY_LIMIT = Gated(
    r"[Ee]xceeded retry limit, last status: (?P<status>\d{3})",
    ("xceeded retry limit",),
)
_BODY = Gated(
    r"\"usage_limit_reached\"",
    ('"usage_limit_reached"',),
)
_BODY_RESETS_AT = re.compile(
    r"\"resets_at\"\s{0,4}:\s{0,4}(?:(?P<epoch>\d{9,13})|\"(?P<iso>[^\"\n]{10,40})\")"
)
_BODY_RESETS_IN = re.compile(r"\"resets_in_seconds\"\s{0,4}:\s{0,4}(?P<seconds>\d{1,9})")
_BODY_REACH = 800

# Each alternative of these starts with a fixed character (both cases spelled out), so the
# regex engine looks only at positions where one can start.
_TRANSIENT = Gated(
    r"Selected model is at capacity|We're currently experiencing high demand"
    r"|Stream disconnected before completion|stream disconnected before completion"
    # An API deployment's per-minute limit ("... have exceeded rate limit."): a throttle.
    r"|exceeded\s+(?:the\s+)?(?:token\s+)?rate\s+limit"
    r"|Reconnecting\.\.\.|Connection failed|error sending request for url"
    r"|unexpected status 5\d\d",
    (
        # Not "at capacity": a needle of common letters is tested in most texts.
        "Selected model",
        "experiencing high demand",
        "tream disconnected",
        "exceeded",
        "Reconnecting",
        "Connection failed",
        "error sending request",
        "unexpected status",
    ),
)
_LOGIN = Gated(
    r"unexpected status 40[13]\b|access token could not be refreshed"
    r"|Please (?:log out and )?sign in again|please (?:log out and )?sign in again|codex login"
    r"|Failed to refresh token|refresh token (?:has )?already been used",
    (
        "unexpected status",
        "could not be refreshed",
        "sign in again",
        "codex login",
        "refresh token",
    ),
)
_OTHER = Gated(
    r"ran out of room in the model's context window",
    ("ran out of room",),
)
_WARNING = Gated(
    r"Heads up, you|Approaching rate limits",
    ("Heads up", "Approaching rate limits"),
)


def _timestamp(match: re.Match[str], ctx: Observation, scope: str | None) -> Resolved:
    hour, minute, meridiem, month, day, year = match.group(
        "hour", "minute", "meridiem", "month", "day", "year"
    )
    if hour is None:
        hour, minute = match.group("hour24", "minute24")
    printed = clock.Printed(
        hour=int(hour),
        minute=int(minute),
        meridiem=meridiem,
        month=month_number(month) if month else None,
        day=int(day) if day else None,
        year=int(year) if year else None,
        as_printed=match.group(0),
    )
    return clock.resolve(printed, ctx, PROVIDER, scope, bare_time="same_day")


def _retry_clause(
    norm: str, start: int, ctx: Observation, scope: str | None
) -> tuple[int, Resolved]:
    """The retry suffix after a usage-limit head: at a time, in a duration, or later."""
    reach = min(len(norm), start + _CLAUSE_REACH)
    at = _TRY_AT.search(norm, start, reach)
    if at:
        stamp = _TIMESTAMP.match(norm, at.end())
        if stamp:
            return stamp.end(), _timestamp(stamp, ctx, scope)
        for pattern in LOCALIZED_DATES:
            local = pattern.match(norm, at.end())
            if local:
                return local.end(), resolve_localized(local, ctx, PROVIDER, scope)
        return at.end(), Refusal("unparseable", "the retry time could not be read")
    within = _TRY_IN.search(norm, start, reach)
    if within:
        duration = read_duration(within.group("duration"))
        if duration is not None:
            return within.end(), after_duration(
                duration.seconds,
                ctx.observed_at,
                resolution_s=duration.resolution_s,
                limit=window(PROVIDER, scope),
            )
    later = _TRY_LATER.search(norm, start, reach)
    if later:
        return later.end(), Refusal("not_stated", "Codex says to try again later")
    for pattern in LOCALIZED_DATES:
        local = pattern.search(norm, start, reach)
        if local:
            return local.end(), resolve_localized(local, ctx, PROVIDER, scope)
    return start, Refusal("not_stated", "the usage-limit message states no reset time")


_COMMON = findings.CommonPatterns(
    transient=_TRANSIENT,
    login=_LOGIN,
    login_command="codex login",
    other=_OTHER,
    warning=_WARNING,
)

#: Every gated pattern this scanner runs; a text that opens none holds nothing it reads.
GATES = module_gates(globals(), *(pattern for pattern, _, _ in _NO_RESET))
_NO_RESET_GATES = frozenset(pattern for pattern, _, _ in _NO_RESET)
_GATE_SET = frozenset(GATES)


# Built when first needed: parse passes the gates it opened for all scanners at once, so only
# a caller that scans without them (a test) needs this scanner's own index.
@cache
def _index() -> GateIndex:
    """Which of GATES a text opens."""
    return GateIndex(GATES)


def scan(text: Text, ctx: Observation, opened: AbstractSet[Gated] | None = None) -> list[Finding]:
    """Every Codex banner, failure and marker in the text."""
    norm = text.norm
    if opened is None:
        opened = _index().open(norm)
    if opened.isdisjoint(_GATE_SET):
        return []
    found: list[Finding] = []
    for match in _BODY.finditer(norm) if _BODY in opened else ():
        # The body's own keys follow its type; a resets_at before it belongs to something else.
        reach = min(len(norm), match.end() + _BODY_REACH)
        resets_at = _BODY_RESETS_AT.search(norm, match.end(), reach)
        instant = (
            clock.ISO_INSTANT.fullmatch(resets_at.group("iso"))
            if resets_at and resets_at.group("iso")
            else None
        )
        if resets_at and resets_at.group("epoch"):
            resolved = at_epoch(
                float(resets_at.group("epoch")),
                ctx.observed_at,
                limit=window(PROVIDER, None),
                form="structured",
            )
            end = resets_at.end()
        elif resets_at and instant:
            # An ISO-8601 instant with its offset in the body's field: as exact as an epoch.
            resolved = clock.resolve_iso(instant, ctx, PROVIDER, None, form="structured")
            end = resets_at.end()
        elif resets_at:
            resolved = Refusal("unparseable", f"resets_at {resets_at.group('iso')!r}")
            end = resets_at.end()
        else:
            resets_in = _BODY_RESETS_IN.search(norm, match.end(), reach)
            if resets_in:
                resolved = after_duration(
                    float(resets_in.group("seconds")),
                    ctx.observed_at,
                    resolution_s=0,
                    limit=window(PROVIDER, None),
                )
                if isinstance(resolved, Reset):
                    resolved = resolved._replace(form="structured")
                end = resets_in.end()
            else:
                resolved = Refusal("not_stated", "the usage-limit body states no reset")
                end = match.end()
        start = match.start()
        found.append(findings.as_structured(findings.stop(PROVIDER, start, end, resolved)))
    for match in _USAGE_LIMIT.finditer(norm) if _USAGE_LIMIT in opened else ():
        scope = "model" if match.group("limit_name") else None
        end, resolved = _retry_clause(norm, match.end(), ctx, scope)
        found.append(findings.stop(PROVIDER, match.start(), max(end, match.end()), resolved, scope))
    for match in _OUT_OF_MESSAGES.finditer(norm) if _OUT_OF_MESSAGES in opened else ():
        end, resolved = _retry_clause(norm, match.end(), ctx, None)
        found.append(findings.stop(PROVIDER, match.start(), max(end, match.end()), resolved))
    for match in _LOCALIZED_LIMIT.finditer(norm) if _LOCALIZED_LIMIT in opened else ():
        end, resolved = _retry_clause(norm, match.end(), ctx, None)
        found.append(findings.stop(PROVIDER, match.start(), max(end, match.end()), resolved))
    # Seven gates, rarely any open: one set test skips the loop.
    if not opened.isdisjoint(_NO_RESET_GATES):
        for pattern, scope, what in _NO_RESET:
            for match in pattern.finditer(norm) if pattern in opened else ():
                found.append(findings.no_reset(PROVIDER, match.start(), match.end(), scope, what))
    for match in _API_RATE_LIMIT.finditer(norm) if _API_RATE_LIMIT in opened else ():
        found.append(_api_rate_limit(norm, match, ctx))
    for match in _RETRY_LIMIT.finditer(norm) if _RETRY_LIMIT in opened else ():
        status = match.group("status")
        kind: Kind = "login_required" if status in ("401", "403") else "transient"
        found.append(findings.failure(kind, PROVIDER, match.start(), match.end()))
    found.extend(findings.scan_common(text, PROVIDER, _COMMON, opened))
    return found


def _api_rate_limit(norm: str, match: re.Match[str], ctx: Observation) -> Finding:
    """An OpenAI API rate limit: a throttle when its wait is short (rule 10)."""
    reach = min(len(norm), match.end() + _CLAUSE_REACH)
    wait = _PLEASE_TRY_IN.search(norm, match.end(), reach)
    per_minute = bool(re.search(r"per\s+min", norm[match.end() : reach]))
    scope = "minute" if per_minute else None
    if wait is None:
        return findings.failure("transient", PROVIDER, match.start(), match.end(), scope=scope)
    duration = read_duration(wait.group("duration"))
    if duration is None:
        return findings.failure("transient", PROVIDER, match.start(), wait.end(), scope=scope)
    resolved = after_duration(
        duration.seconds,
        ctx.observed_at,
        resolution_s=duration.resolution_s,
        limit=window(PROVIDER, scope),
    )
    if duration.seconds < THROTTLE_S:
        return findings.failure(
            "transient",
            PROVIDER,
            match.start(),
            wait.end(),
            retry_after_s=duration.seconds,
            resolved=resolved,
            scope=scope,
        )
    return findings.stop(PROVIDER, match.start(), wait.end(), resolved, scope)
