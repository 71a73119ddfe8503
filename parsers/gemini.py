"""Google Gemini CLI's limit messages.

The quota dialog formats `now + retryDelay` with en-US `Intl.DateTimeFormat` (12-hour, short
zone name, no date, seconds cut): each short name is one fixed offset, other zones print as
"GMT-3" or "GMT+5:30". Forms read:

    Usage limit reached for gemini-2.5-pro.
    Access resets at 2:55 PM PST.
    You have exhausted your capacity on this model. Your quota will reset after 8h44m7s.
    ... Please retry in 39.844676573s.      (AI Studio; with `limit: 0` it never resets)
    "retryDelay": "34.074824224s"           (RetryInfo in a 429 body)
    You have exhausted your daily quota on this model.               (not_stated, daily)
    Quota exceeded for quota metric '...' and limit '... per day ...' (not_stated, daily)
    We are currently experiencing high demand.                        (transient)
    Attempt 1 failed: ... Retrying after 6173ms...                    (client countdown)
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
    Gated,
    GateIndex,
    any_within,
    module_gates,
    read_duration,
)
from rewake.parsers.text import Text
from rewake.parsers.timeres import THROTTLE_S, Resolved, after_duration, window
from rewake.parsers.verdict import Refusal
from rewake.parsers.zones import abbreviation_in_host_zone, printed_zone

PROVIDER: Final = "gemini"
_REACH = 400

_USAGE_LIMIT = Gated(
    # With or without the final period: a model's name ends the line when the period is
    # missing (the dialog's border, folded to spaces, may follow).
    r"Usage limit reached for (?:[^\n]{1,80}?\.(?=\s|$)"
    r"|(?:all [\w.-]{1,20} models|[\w.:/-]{2,80})(?=[ \t]*(?:\n|$)))",
    ("Usage limit reached for",),
)
_ACCESS_RESETS = Gated(
    r"Access resets at\s{1,3}(?P<hour>\d{1,2}):(?P<minute>\d{2})\s?(?P<meridiem>[AP]M)"
    # The zone the dialog formats with the time; a dialog that prints none (the overage
    # menu's "Access resets at 3:45 PM") is read in the host's zone (rule 5).
    r"(?:\s{1,3}(?P<zone>GMT[+-]\d{1,2}(?::\d{2})?|UTC[+-]\d{1,2}(?::\d{2})?|[A-Z]{2,5})"
    r"(?![A-Za-z]))?",
    ("Access resets",),
)
_RESET_AFTER = Gated(
    rf"[Qq]uota will reset after\s{{1,4}}(?P<duration>{DURATION})",
    ("uota will reset",),
)
_RETRY_IN = Gated(
    r"(?:Please retry in|Suggested retry after)\s{1,4}"
    r"(?P<value>\d{1,9}(?:\.\d{1,12})?)(?P<unit>ms|s)\b",
    ("Please retry in", "Suggested retry after"),
)
_RETRY_DELAY = Gated(
    # Also with its quotes escaped, as a JSON body quoted inside another one prints them.
    r"\"retryDelay\\{0,3}\"\s{0,4}:\s{0,4}\\{0,3}\"(?P<value>\d{1,9}(?:\.\d{1,12})?)(?P<unit>ms|s)\\{0,3}\"",
    ('"retryDelay',),
)
_LIMIT_ZERO = Gated(
    r"limit:\s{0,4}0(?!\d|\.\d)",
    ("limit:",),
)
_DAILY = Gated(
    r"exhausted your daily quota|reached your daily (?:[\w.\-]{1,40} )?quota limit",
    # Not "daily": "q" is in few texts, so the needle is tested less often (GateIndex).
    ("quota",),
)
_QUOTA_METRIC = Gated(
    r"Quota exceeded for quota metric '[^']{1,120}' and limit '(?P<limit>[^']{1,160})'",
    ("Quota exceeded for quota metric",),
)
#: A QuotaFailure naming a per-day quota: the limit is the daily one (quotaId may be wrapped).
_PER_DAY_QUOTA = re.compile(r"quotaId[\\\"\s:]{1,12}\w{0,60}Per\s{0,12}Day")
_BODY_REACH = 3000
_CURRENT_QUOTA = Gated(
    r"You exceeded your current quota",
    ("You exceeded your current quota",),
)
_EXHAUSTED = Gated(
    r"Resource has been exhausted|Resource exhausted|RESOURCE_EXHAUSTED",
    ("Resource has been exhausted", "Resource exhausted", "RESOURCE_EXHAUSTED"),
)
_CAPACITY = Gated(
    r"MODEL_CAPACITY_EXHAUSTED|No capacity available for model"
    r"|We are currently experiencing high demand|is currently experiencing high demand"
    r"|Trying to reach [\w.\-]{1,60} \(Attempt \d{1,3}/\d{1,3}\)"
    r"|Retrying with backoff|The model is overloaded",
    (
        "MODEL_CAPACITY_EXHAUSTED",
        "No capacity available",
        "high demand",
        "Trying to reach",
        "Retrying with backoff",
        "The model is overloaded",
    ),
)
_COUNTDOWN = Gated(
    r"Retrying after (?P<ms>\d{1,9})ms",
    ("Retrying after",),
)
_LOGIN = Gated(
    # "Login" and "login" spelled out: every alternative starts with a fixed character, so
    # the regex engine looks only at positions where one can start.
    r"Login required|login required|Failed to sign in|Failed to login"
    r"|authentication page in your browser"
    # The API's answer to a key it does not know (400 INVALID_ARGUMENT, reason API_KEY_INVALID):
    # a new key is needed, which no wait or retry gives.
    r"|API key not valid|API_KEY_INVALID",
    ("ogin required", "Failed to sign in", "Failed to login", "browser", "API key not valid",
     "API_KEY_INVALID"),
)  # fmt: skip
_OTHER = Gated(
    r"exceeds the maximum number of tokens|INVALID_ARGUMENT",
    ("exceeds the maximum number of tokens", "INVALID_ARGUMENT"),
)
_WARNING = Gated(
    r"Automatically switching from|daily limit of requests with Gemini"
    r"|Slow response times detected|\(Resets in [^)\n]{1,20}\)",
    ("Automatically switching", "Slow response times", "Resets in", "limit of requests"),
)
_WENT_ON = Gated(
    r"Responding with [\w.\-]{2,60}",
    ("Responding with",),
)


def _wait(
    value: float,
    resolution_s: int,
    ctx: Observation,
    start: int,
    end: int,
    *,
    structured: bool,
    scope: str | None = None,
) -> Finding:
    """A stated wait: a throttle under 300 s (rule 10), else a stop with its reset."""
    resolved = after_duration(
        value, ctx.observed_at, resolution_s=resolution_s, limit=window(PROVIDER, None)
    )
    if structured and not isinstance(resolved, Refusal):
        resolved = resolved._replace(form="structured")
    if value < THROTTLE_S:
        finding = findings.failure(
            "transient", PROVIDER, start, end, retry_after_s=value, resolved=resolved, scope=scope
        )
    else:
        finding = findings.stop(PROVIDER, start, end, resolved, scope)
    return finding._replace(structured=structured)


def _before(norm: str, start: int) -> str:
    return norm[max(0, start - 120) : start]


def _seconds(value: str, unit: str) -> float:
    return float(value) / 1000.0 if unit == "ms" else float(value)


def _access_resets(match: re.Match[str], ctx: Observation) -> Resolved:
    label = match.group("zone")
    if label is None:
        return clock.resolve(
            clock.Printed(
                hour=int(match.group("hour")),
                minute=int(match.group("minute")),
                meridiem=match.group("meridiem"),
                as_printed=match.group(0).removeprefix("Access resets at").strip(),
            ),
            ctx,
            PROVIDER,
            None,
        )
    printed = clock.Printed(
        hour=int(match.group("hour")),
        minute=int(match.group("minute")),
        meridiem=match.group("meridiem"),
        short_zone=label,
        as_printed=match.group(0).removeprefix("Access resets at").strip(),
    )
    if printed_zone(label) is None:
        host = abbreviation_in_host_zone(label, ctx.zone, ctx.observed_at)
        if host is None:
            return Refusal(
                "zone_ambiguous",
                f"{label!r} is not an en-US short name and the host's zone does not use it",
            )
        printed = printed._replace(short_zone=None)
    return clock.resolve(printed, ctx, PROVIDER, None)


_COMMON = findings.CommonPatterns(
    login=_LOGIN, login_command="/auth", other=_OTHER, warning=_WARNING, went_on=_WENT_ON
)

#: Every gated pattern this scanner runs; a text that opens none holds nothing it reads.
GATES = module_gates(globals())
_GATE_SET = frozenset(GATES)


# Built when first needed: parse passes the gates it opened for all scanners at once, so only
# a caller that scans without them (a test) needs this scanner's own index.
@cache
def _index() -> GateIndex:
    """Which of GATES a text opens."""
    return GateIndex(GATES)


def scan(text: Text, ctx: Observation, opened: AbstractSet[Gated] | None = None) -> list[Finding]:
    """Every Gemini banner, failure and marker in the text."""
    norm = text.norm
    if opened is None:
        opened = _index().open(norm)
    if opened.isdisjoint(_GATE_SET):
        return []
    found: list[Finding] = []
    # Each pattern reads the text once; its matches are kept where another pattern asks.
    access_resets = list(_ACCESS_RESETS.finditer(norm) if _ACCESS_RESETS in opened else ())
    access_at = [match.start() for match in access_resets]
    usage_limits = list(_USAGE_LIMIT.finditer(norm) if _USAGE_LIMIT in opened else ())
    heads = [match.end() for match in usage_limits]
    for match in access_resets:
        per_model = any_within(heads, match.start() - _REACH, match.start())
        found.append(
            findings.stop(
                PROVIDER,
                match.start(),
                match.end(),
                _access_resets(match, ctx),
                "model" if per_model else None,
            )
        )
    for match in usage_limits:
        if any_within(access_at, match.end(), match.end() + _REACH):
            continue
        found.append(
            findings.not_stated(PROVIDER, match.start(), match.end(), "model", "the usage limit")
        )
    waits_on_line: set[int] = set()
    for match in _RESET_AFTER.finditer(norm) if _RESET_AFTER in opened else ():
        duration = read_duration(match.group("duration"))
        if duration is None:
            continue
        waits_on_line.add(text.line_start(match.start()))
        found.append(
            _wait(
                duration.seconds,
                duration.resolution_s,
                ctx,
                match.start(),
                match.end(),
                structured=False,
                scope="model" if "capacity on this model" in _before(norm, match.start()) else None,
            )
        )
    limits_zero = list(_LIMIT_ZERO.finditer(norm) if _LIMIT_ZERO in opened else ())
    zero_limits = [match.start() for match in limits_zero]
    for match in limits_zero:
        found.append(
            findings.no_reset(PROVIDER, match.start(), match.end(), None, "the quota's limit is 0")
        )
    retries = list(_RETRY_IN.finditer(norm) if _RETRY_IN in opened else ())
    retry_starts = [match.start() for match in retries]
    dailies = list(_DAILY.finditer(norm) if _DAILY in opened else ())
    daily_starts = [match.start() for match in dailies]
    for match in retries:
        waits_on_line.add(text.line_start(match.start()))
        if any_within(zero_limits, match.start() - 2000, match.start() + 2000):
            continue
        seconds = _seconds(match.group("value"), match.group("unit"))
        # The CLI's error dump quotes the API's own delay next to its daily-quota line (under
        # it in text mode, above the error JSON with --output-format json): that delay is
        # when the daily quota resets.
        daily = any_within(daily_starts, match.start() - _BODY_REACH, match.end() + _BODY_REACH)
        found.append(
            _wait(
                seconds,
                0,
                ctx,
                match.start(),
                match.end(),
                structured=False,
                scope="daily" if daily else None,
            )
        )
    for match in _RETRY_DELAY.finditer(norm) if _RETRY_DELAY in opened else ():
        if any_within(zero_limits, match.start() - 2000, match.start() + 2000):
            continue
        seconds = _seconds(match.group("value"), match.group("unit"))
        body = norm[max(0, match.start() - 2000) : match.end() + 2000]
        scope = "model" if "capacity on this model" in body else None
        found.append(
            _wait(seconds, 0, ctx, match.start(), match.end(), structured=True, scope=scope)
        )
    for match in dailies:
        if any_within(retry_starts, match.start() - _BODY_REACH, match.end() + _BODY_REACH):
            continue  # the delay beside it states this quota's reset
        found.append(
            findings.not_stated(PROVIDER, match.start(), match.end(), "daily", "the daily quota")
        )
    for match in _QUOTA_METRIC.finditer(norm) if _QUOTA_METRIC in opened else ():
        limit = match.group("limit")
        if re.search(r"per\s+day", limit):
            found.append(
                findings.not_stated(
                    PROVIDER, match.start(), match.end(), "daily", "the daily quota"
                )
            )
        elif re.search(r"per\s+minute", limit):
            found.append(
                findings.failure("transient", PROVIDER, match.start(), match.end(), scope="minute")
            )
        else:
            found.append(
                findings.not_stated(PROVIDER, match.start(), match.end(), None, "the quota")
            )
    for match in _CURRENT_QUOTA.finditer(norm) if _CURRENT_QUOTA in opened else ():
        nearby_retry = any_within(retry_starts, match.end(), match.end() + 2000)
        if not nearby_retry:
            body = norm[match.end() : match.end() + _BODY_REACH]
            scope = "daily" if _PER_DAY_QUOTA.search(body) else None
            found.append(
                findings.not_stated(PROVIDER, match.start(), match.end(), scope, "the API quota")
            )
    capacity = list(_CAPACITY.finditer(norm) if _CAPACITY in opened else ())
    # RESOURCE_EXHAUSTED is in every 429 body; it speaks only when nothing more precise did
    # (a daily quota, a wait, a capacity reason).
    if not found and not capacity:
        # The message and its status repeat one fact: the first words say it.
        for match in _EXHAUSTED.finditer(norm) if _EXHAUSTED in opened else ():
            found.append(
                findings.not_stated(PROVIDER, match.start(), match.end(), None, "the quota")
            )
            break
    for match in capacity:
        found.append(findings.failure("transient", PROVIDER, match.start(), match.end()))
    for match in _COUNTDOWN.finditer(norm) if _COUNTDOWN in opened else ():
        if text.line_start(match.start()) in waits_on_line:
            continue
        # "Attempt 1 failed: <error>. Retrying after 6173ms...": the countdown covers the
        # error it retries (rule 10), from the start of its line.
        found.append(
            findings.Finding(
                role="countdown",
                kind="transient",
                provider=PROVIDER,
                start=max(text.line_start(match.start()), match.start() - _REACH),
                end=match.end(),
                retry_after_s=int(match.group("ms")) / 1000.0,
            )
        )
    found.extend(findings.scan_common(text, PROVIDER, _COMMON, opened))
    return found
