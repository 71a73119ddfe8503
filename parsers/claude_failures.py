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
from bisect import bisect_right
from typing import Final

from rewake.parsers import findings
from rewake.parsers.findings import Finding, Observation
from rewake.parsers.grammar import Gated, lines_led_by, module_gates
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
    r"overloaded_error|Overloaded\b|API Error:? ?\(?5\d\d\b|Internal server error"
    r"|Repeated 5\d\d|API Error \(Connection error|Connection error\.|fetch failed"
    r"|server-side issue|API error · Retrying|API Error: Rate limit reached"
    # "Server is temporarily limiting requests (not your usage limit) · Rate limited"
    r"|temporarily limiting requests|Too many CONNECT attempts"
    # "Opus is experiencing high load, please use /model to switch to Sonnet": any model.
    r"|is\s+experiencing\s+high\s+load",
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
        "experiencing",
    ),
)
#: The API's throttles in other words, with no wait: they lift on their own (rule 10). Apart
#: from TRANSIENT so that their lower-case heads cost nothing where their needles are absent.
THROTTLE = Gated(
    r"api error:?\s?\(?5\d\d\b|Rate limit exceeded|rate limit exceeded"
    r"|Too many requests|too many requests|exceeded your rate limit",
    ("api error", "ate limit exceeded", "oo many requests", "exceeded your rate limit"),
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
        # "API Error: 401 ...", the one alternative no needle above is in.
        "API Error",
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
# box shows a placeholder there, and a draft may never be sent. Nor is a dialog's selected
# option ("● 1. Keep trying" under Gemini's limit): a menu waits for a choice, no turn ran.
#
# More work shows too: a tool call ("● Bash(psql ... limit 8)": its words are the agent's, so
# "limit" in them says nothing), the spinner Claude shows while it works ("✻ Cogitating…
# (esc to interrupt)"), and a tool's result (tool_results below).
#
# A background task's notice ('⏺ Background command "npm run dev" completed (exit code 0)') is
# the CLI reporting a process started before the banner: no turn ran, so no sign of going on;
# nor is "● Automatic continue cancelled" (the user pressed Esc at the waiting line).
WENT_ON = Gated(
    r"^[ \t]{0,4}[⏺●][ \t]{1,3}(?!\d{1,2}\.[ \t])"
    r"(?!Background\s+(?:command|task|agent|shell|[Bb]ash)\b|Automatic\s+continue\b)"
    r"(?:[A-Z][A-Za-z]{1,30}\((?!\))"
    r"|(?![^\n]{0,240}?(?:limit|[Ee]rror|failed|[Rr]ate|reset))\S)"
    r"|Esc to interrupt|esc to interrupt"
    r"|Claude resuming",
    ("⏺", "●", "sc to interrupt", "Claude resuming"),
    re.MULTILINE,
)

#: Every gated pattern of this module, for the Claude scanner's gates.
GATES = module_gates(globals())


#: How far along its line a ⎿ may stand. The pattern below is tried only at the start of the
#: lines such a glyph leads (lines_led_by), not at every line of a long scrollback.
_TOOL_RESULT_INDENT = 8
# A tool's result on a ⎿ line that is no banner, error or interruption, and no line of the
# CLI's own chrome (a key hint: "⎿  Backgrounded agent (↓ to manage · ctrl+o to expand)"), nor
# a hook's output ("⎿  Stop hook feedback: ..."): the CLI runs its Stop hooks when the turn
# ends, at a limit too, so their lines show no turn.
# The fold makes ⎿ a space in `norm` (it is drawn like a border), so these lines are found in
# the original text.
_TOOL_RESULT = re.compile(
    rf"^[ \t]{{0,{_TOOL_RESULT_INDENT}}}⎿[ \t]{{1,4}}"
    r"(?![^\n]{0,240}?(?:limit|[Ee]rror|failed|[Rr]ate|reset|Interrupted|[Cc]ancel"
    r"|ctrl\+|shift\+|[↑↓←→] to |to expand\b|[Hh]ooks?\b))\S",
    re.MULTILINE,
)


#: How far along its line a prompt's ❯ may stand; tried as a tool's result is.
_PROMPT_INDENT = 4
# A prompt the user typed, on Claude's ❯ line (> in 1.x), that is not a menu's cursor.
_PROMPT = re.compile(
    rf"^[ \t]{{0,{_PROMPT_INDENT}}}[>❯][ \t]{{1,3}}(?![ \t]{{0,3}}\d{{1,2}}\.)\S", re.MULTILINE
)


def answered_prompts(text: Text, stops: list[Finding]) -> list[Finding]:
    """A prompt line between two banners is a new turn: the prompt was sent, and the banner
    after it is the CLI's answer to it, so the banner before it no longer counts (rule 8).
    A prompt with no banner after it proves nothing (a draft, or the empty box's placeholder)."""
    if len(stops) < 2:
        return []
    first = min(stop.start for stop in stops)
    last = max(stop.start for stop in stops)
    norm = text.norm
    found = []
    for line_start in lines_led_by(norm, "❯>", _PROMPT_INDENT, text.line_end(first), last):
        match = _PROMPT.match(norm, line_start, last)
        if match:
            found.append(findings.marker("went_on", PROVIDER, match.start(), match.end()))
    return found


#: A local slash command the user typed ("> /export", "❯ /usage"): its answer on the ⎿ line
#: under it is the CLI's own, printed without a request to the API, so no turn ran. Not
#: /compact, which asks the model for a summary.
_LOCAL_COMMAND = re.compile(r"[ \t]{0,4}[>❯][ \t]{1,3}/(?!compact\b)[\w:-]{1,40}(?:[ \t][^\n]*)?\n")


def _answers_local_command(original: str, line_start: int) -> bool:
    """Whether the ⎿ line at line_start stands right under a local slash command's prompt."""
    if line_start == 0:
        return False
    previous = original.rfind("\n", max(0, line_start - 200), line_start - 1) + 1
    if previous == 0 and line_start - 1 > 200:
        return False
    return _LOCAL_COMMAND.fullmatch(original, previous, line_start) is not None


def tool_results(text: Text) -> list[Finding]:
    """The session went on: a tool ran and Claude shows its result on a ⎿ line."""
    original = text.original
    if "⎿" not in original:
        return []
    found = []
    for line_start in lines_led_by(original, "⎿", _TOOL_RESULT_INDENT):
        match = _TOOL_RESULT.match(original, line_start)
        if match is None or _answers_local_command(original, line_start):
            continue
        start = _norm_offset(text, match.start())
        if start is not None:
            found.append(findings.marker("went_on", PROVIDER, start, start + len(match.group())))
    return found


def _norm_offset(text: Text, original_offset: int) -> int | None:
    """Where a position of the original text stands in `norm`; None inside a removed escape."""
    runs_orig = text._runs_orig
    index = bisect_right(runs_orig, original_offset) - 1
    if index < 0:
        return None
    offset = text._runs_norm[index] + (original_offset - runs_orig[index])
    following = text._runs_norm[index + 1] if index + 1 < len(text._runs_norm) else len(text.norm)
    return offset if offset < following else None


def countdowns(text: Text, ctx: Observation) -> list[Finding]:
    """Client retry countdowns. One that retries a rate limit follows the server's
    Retry-After, so it also states when the limit lifts."""
    norm = text.norm
    found = []
    for match in COUNTDOWN.finditer(norm):
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
