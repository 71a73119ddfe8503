"""Claude Code's failures and markers besides its limit banners: client retry countdowns,
transient API errors, sign-in failures, other failures, warnings, and the session going on.

    API Error (...) · Retrying in 4 seconds… (attempt 4/10)        (client countdown)
    API Error: 529 {"type":"overloaded_error",...}                  (transient)
    Invalid API key · Please run /login                             (login_required)
    Prompt is too long                                              (other_failure)
    Approaching usage limit · resets at 6am                         (a warning: not a stop)
    ⏺ Here is the fix ...                                           (the session went on)
"""

from __future__ import annotations

import re
from typing import Final

from rewake.parsers import findings
from rewake.parsers.findings import Context, Finding
from rewake.parsers.grammar import Gated, module_gates
from rewake.parsers.text import Text
from rewake.parsers.timeres import after_duration, window

PROVIDER: Final = "claude"

COUNTDOWN = Gated(
    r"Retrying\s+in\s+(?P<value>\d{1,6}(?:\.\d{1,3})?)\s?(?:seconds?|secs?|s)\b"
    r"(?:\s{0,2}(?:…|\.\.\.))?\s{0,3}"
    r"(?:\(\s{0,2}attempt\s+\d{1,3}\s{0,2}/\s{0,2}\d{1,3}\s{0,2}\)|·\s{0,3}attempt\s+\d{1,3}/\d{1,3})",
    ("Retrying",),
)
_RETRIED_REACH = 400
_RATE_LIMITED_ERROR = re.compile(r"\b429\b|rate_limit_error|rate limit", re.IGNORECASE)
TRANSIENT = Gated(
    r"overloaded_error|Overloaded\b|API Error:? \(?5\d\d\b|Internal server error"
    r"|Repeated 5\d\d|API Error \(Connection error|Connection error\.|fetch failed"
    r"|server-side issue|API error · Retrying|API Error: Rate limit reached"
    # "Server is temporarily limiting requests (not your usage limit) · Rate limited"
    r"|temporarily limiting requests|Too many CONNECT attempts",
    (
        "overloaded_error",
        "Overloaded",
        "API Error",
        "API error",
        "Internal server error",
        "Repeated 5",
        "Connection error",
        "fetch failed",
        "server-side issue",
        "temporarily limiting requests",
        "Too many CONNECT attempts",
    ),
)
LOGIN = Gated(
    # Every alternative starts with a fixed character ("Run" and "run" spelled out), so the
    # regex engine looks only at positions where one can start.
    r"Not logged in|Please\s+[Rr]un\s+/login|Run\s+/login|run\s+/login|Invalid API key"
    r"|OAuth token (?:has )?expired"
    r"|OAuth token (?:has been )?revoked|\"authentication_error\"|Failed to authenticate"
    r"|require[sd]? authentication|API Error:?\s{0,3}\(?401\b",
    (
        "Not logged in",
        "/login",
        "Invalid API key",
        "OAuth token",
        # Not "authentication": needles with a rarer character ("_", "q") are tested in
        # fewer texts (GateIndex).
        "authentication_error",
        "require",
        "Failed to authenticate",
    ),
)
OTHER = Gated(
    r"Prompt is too long|prompt is too long|invalid_request_error|Login interrupted",
    ("rompt is too long", "invalid_request_error", "Login interrupted"),
)
WARNING = Gated(
    r"Approaching\s+(?:your\s+)?(?:[\w-]{2,12}\s+)?(?:usage\s+)?limit|limit reached, now using"
    r"|Usage credits are off|You've used \d{1,3}% of your",
    ("Approaching", "now using", "Usage credits", "You've used"),
)
# The session went on: the assistant answered again (a ⏺ or ● line that is no limit or error
# line), or a scheduled wakeup resumed it. A prompt line (❯) is not enough: the empty input
# box shows a placeholder there, and a draft may never be sent.
WENT_ON = Gated(
    r"^[ \t]{0,4}[⏺●][ \t]{1,3}(?![^\n]{0,240}?(?:limit|[Ee]rror|failed|[Rr]ate|reset))\S"
    r"|Claude resuming",
    ("⏺", "●", "Claude resuming"),
    re.MULTILINE,
)

#: Every gated pattern of this module, for the Claude scanner's gates.
GATES = module_gates(globals())


def countdowns(text: Text, ctx: Context) -> list[Finding]:
    """Client retry countdowns. One that retries a rate limit follows the server's
    Retry-After, so it also states when the limit lifts."""
    norm = text.norm
    found = []
    for match in COUNTDOWN.pattern.finditer(norm):
        seconds = float(match.group("value"))
        # The error a countdown retries stands on its line or the one before (within reach).
        line_start = text.line_start(match.start())
        context_start = max(text.line_start(max(line_start - 1, 0)), match.start() - _RETRIED_REACH)
        retried = norm[context_start : match.start()]
        rate_limited = bool(_RATE_LIMITED_ERROR.search(retried))
        found.append(
            findings.Finding(
                role="countdown",
                kind="transient",
                provider=PROVIDER,
                start=context_start if rate_limited else match.start(),
                end=match.end(),
                retry_after_s=seconds,
                resolved=(
                    after_duration(
                        seconds, ctx.observed_at, resolution_s=0, limit=window(PROVIDER, None)
                    )
                    if rate_limited
                    else None
                ),
            )
        )
    return found
