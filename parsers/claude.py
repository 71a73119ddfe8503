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
from bisect import bisect_right
from collections.abc import Set as AbstractSet
from functools import cache, lru_cache
from typing import Final

from rewake.parsers import claude_failures, clock, findings
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
    # up front makes it try each alternative at every position). A group is named
    # once, so "Session" and "session" are two; _HEAD_SCOPES maps each to its scope.
    r"5(?P<five_hour>[- ]?hours?\s+limit\s+reached)"
    r"|S(?P<session>ession\s+limit\s+reached)|s(?P<session_>ession\s+limit\s+reached)"
    rf"|O(?P<opus_weekly>pus\s+{_WEEKLY_REST})|S(?P<sonnet_weekly>onnet\s+{_WEEKLY_REST})"
    rf"|F(?P<fable_weekly>able\s+{_WEEKLY_REST})|H(?P<haiku_weekly>aiku\s+{_WEEKLY_REST})"
    r"|W(?P<weekly>eekly\s+limit\s+reached)|w(?P<weekly_>eekly\s+limit\s+reached)"
    r"|M(?P<monthly>onthly\s+limit\s+reached)|m(?P<monthly_>onthly\s+limit\s+reached)"
    # "You've hit your <limit name> limit": the name is a word group the CLI fills in from
    # the limit's claim ("5-hour", "weekly", "Opus", "Fable 5", "usage", "individual spend",
    # none at all), read as words and mapped to a scope by _hit_scope, not listed one by one.
    # An owner may stand before the name ("org's monthly usage", "channel's monthly spend").
    r"|Y(?:(?P<hit>ou(?:'ve|\s+have)?\s+(?:hit|reached)\s+your\s+(?P<which>(?:[\w.+'-]{1,24}\s+){0,3}?)limit\b"
    # Gemini Code Assist's "You've hit your daily limit of requests with Gemini ..." fallback.
    r"(?!\s+of\s+requests)"
    # The Claude apps' "You've hit your limit for Claude messages. Limits will reset at ...".
    r"(?:\s+for\s+Claude\s+messages\b)?)"
    r"|(?P<extra>ou're\s+out\s+of\s+extra\s+usage\b)"
    r"|(?P<credits_out>ou're\s+out\s+of\s+(?:usage\s+)?credits\b))"
    # The interactive CLI's own line once it waits: "Usage limit reached · set to continue
    # automatically at 11:40pm", and its status line "Usage limit reached · limit resets 11:40pm";
    # read only with a time (Gemini's "Usage limit reached for <model>." has none).
    r"|U(?P<waiting>sage\s+limit\s+reached(?:\s+again)?)(?=\s{0,3}·|[ \t]{0,3}\.?[ \t]*(?:\n|$))"
    r"|C(?:(?P<legacy>laude(?:\s+(?:AI|Max|Pro))?\s+usage\s+limit\s+reached\b)"
    # The auto-continue footer on its own ("Continuing automatically at 4:41pm · Esc to
    # cancel"): the reset clause reads it again from its first word.
    r"|(?P<continuing>ontinuing)(?=\s+automatically\s+at\s))"
    # 2.0.6x printed a bare "Limit reached · resets 5pm (Etc/Unknown)"; read only with a reset.
    # Without a reset header it prints the head alone, on a line of its own.
    r"|L(?P<bare>imit\s+reached)(?=\s{0,3}·\s{0,3}resets|[ \t]{0,3}\.?[ \t]*(?:\n|$))",
    # "hit", not "You hit": the regex lets a line break stand between the two words.
    ("reached", "You've", "You're", "hit", "ontinuing"),
)

_RESET_LEAD = re.compile(
    # The clause may wrap onto the next line under Claude's indentation.
    # "Limits will reset at 9:30 AM" is the Claude apps' wording; "Resets by 4:00 AM ..." and
    # "resets in: 3 hours" are wordings seen beside the CLI's.
    r"[.!]?\s{0,16}(?:[·|-]\s{0,16})?(?:(?:Your\s+)?[Ll]imits?\s+will\s+reset\s+at"
    r"|(?:[Ll]imits?\s+)?[Rr]esets?(?:\s+(?:at|by|on))?"
    r"|set\s+to\s+continue\s+automatically\s+at|[Cc]ontinuing\s+automatically\s+at"
    # "· try again in 0 minutes": a wait, read as a duration from observed_at (rule 6).
    r"|try\s+again(?=\s{1,4}in\s))\s{1,4}"
)
#: After a spend limit, the window whose reset lifts the stop: "· your weekly limit resets ...".
#: The clause may stand on a line of its own, a line or two under the banner's head, where a
#: narrow terminal wraps it (each part bounded: the match stays linear).
_SPEND_WINDOW = re.compile(
    r"[^\n]{0,200}?(?:\n[ \t]{0,16}[^\n]{0,200}?){0,2}?"
    r"·\s{0,3}your\s+(?P<which>(?:[\w.+-]{1,24}\s+){0,3}?)limit(?=\s+resets\b)"
)
_RESET_IN = re.compile(rf"in:?\s{{1,4}}(?P<duration>{DURATION})")
_NATIVE = re.compile(
    r"will\s+(?:auto-?)?continue|auto-?continu\w*|continue\s+when\s+(?:the\s+)?limit\s+resets"
    # Not the limit menu's offer "2. Wait here, then continue automatically at ...".
    r"|(?<!then )continue\s+automatically|continuing\s+automatically",
    re.IGNORECASE,
)

#: An organisation's own cap: waiting for a window will not lift it (no_reset).
_ORG_LIMIT = Gated(
    r"You've\s+hit\s+your\s+org(?:anization)?'s\s+(?P<monthly>monthly\s+)?"
    r"(?:usage|spend(?:ing)?)\s+limit",
    # Not "org": with the apostrophe, the needle is tested only in texts that hold one.
    ("org's", "organization's"),
)
#: A cap set to nothing ("Your group's usage limit is set to $0"): no window lifts it.
_ZERO_CAP = Gated(
    r"Your\s+(?:[\w.-]{1,24}'s\s+)?(?:[\w-]{1,16}\s+){0,2}?limit\s+is\s+set\s+to\s+\$0(?![\d.,])",
    ("$0",),
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
_NOT_THE_LIMIT = re.compile(r"not\s+your\s+usage\s+limit")
_LIMIT_MENU = Gated(
    # "1. Stop and wait for limit to reset", or "Wait for limit to reset" beside a spend
    # limit's own option.
    r"[Ww]ait for limit to reset",
    ("ait for limit to reset",),
)


def _reset_clause(
    norm: str, pos: int, ctx: Observation, scope: str | None
) -> tuple[int, Resolved] | None:
    """Read "· resets ..." or "Your limit will reset at ..." right after a banner's head."""
    lead = _RESET_LEAD.match(norm, pos)
    if lead is None:
        return None
    cursor = lead.end()
    instant = clock.ISO_INSTANT.match(norm, cursor)
    if instant:
        return instant.end(), clock.resolve_iso(instant, ctx, PROVIDER, scope, form="offset_zone")
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
    phrase = clock.read_phrase(norm, cursor)
    if phrase is None:
        return cursor, Refusal("unparseable", "a reset is announced but its time cannot be read")
    cursor, printed = phrase
    return cursor, clock.resolve(printed, ctx, PROVIDER, scope)


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
    "credits_out": "credits",
}


_NAMED_WINDOWS = (
    (re.compile(r"\b(?:5|five)[- ]?hours?\b"), "five_hour"),
    (re.compile(r"\bsession\b"), "session"),
    (re.compile(r"\bweek(?:ly)?\b"), "weekly"),
    (re.compile(r"\b(?:daily|day)\b"), "daily"),
    # Before the month: a "monthly spend limit" is a spend limit, lifted by no window.
    (re.compile(r"\bspend(?:ing)?\b"), "spend_cap"),
    (re.compile(r"\bmonth(?:ly)?\b"), "monthly"),
    # Claude's name for the pay-as-you-go usage past the plan (the "overage" claim).
    (re.compile(r"\b(?:extra\s+)?usage\b"), "extra_usage"),
)


@lru_cache(maxsize=256)
def limit_scope(words: str) -> str | None:
    """The scope a limit's name says: a window ("5-hour", "weekly"), a spend limit, the extra
    usage, or else a model's own limit ("Opus", "Fable 5"); None when no name is printed."""
    name = " ".join(words.lower().split())
    if not name:
        return None
    for pattern, scope in _NAMED_WINDOWS:
        if pattern.search(name):
            return scope
    return "model"


#: A menu's option ("2. Wait here, then continue automatically at ...") is an offer the user
#: has not taken: the CLI waits for a choice, and stops when the first option is taken.
#: How far along a line the words saying the CLI continues by itself are looked for.
_NATIVE_REACH = 240
_MENU_OPTION = re.compile(r"[ \t]{0,8}(?:❯[ \t]{0,3})?\d{1,2}\.[ \t]")


def _continues_by_itself(text: Text, head_end: int, end: int) -> bool:
    """Whether the banner, or the line after it, says the CLI goes on by itself at the reset
    ("set to continue automatically at 11:40pm", "Continuing automatically at 11:40pm"), for
    any limit: the CLI says so for five-hour, weekly and extra-usage limits alike."""
    norm = text.norm
    line_end = text.line_end_within(end, _NATIVE_REACH)
    following = text.line_end_within(line_end + 1, _NATIVE_REACH) if line_end < len(norm) else 0
    # Every wording says "continu..." (any case): most banners are ruled out by one find.
    region = norm[head_end : max(line_end, following)]
    if "ontinu" not in region and "ONTINU" not in region:
        return False
    if _NATIVE.search(norm, head_end, end):
        return True
    if _NATIVE.search(norm, end, line_end):
        return True
    if line_end >= len(norm) or norm[line_end] != "\n":
        return False
    next_start = line_end + 1
    if _MENU_OPTION.match(norm, next_start):
        return False
    return bool(_NATIVE.search(norm, next_start, text.line_end_within(next_start, _NATIVE_REACH)))


#: What may stand before a head printed alone: indentation and the CLI's glyphs.
_LINE_LEAD = re.compile(r"[ \t⏺●⚠✗×!]*")


def _alone_on_line(text: Text, start: int) -> bool:
    line_start = text.line_start_within(start, 40)
    return _LINE_LEAD.fullmatch(text.norm, line_start, start) is not None


def _scope(match: re.Match[str]) -> str | None:
    # The banner's alternatives are named groups; `which` is nested in `hit`, which closes
    # after it, so the last group closed names the alternative that matched.
    head = match.lastgroup
    if head == "hit":
        return limit_scope(match.group("which") or "")
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


# Built when first needed: parse passes the gates it opened for all scanners at once, so only
# a caller that scans without them (a test) needs this scanner's own index.
@cache
def _index() -> GateIndex:
    """Which of GATES a text opens."""
    return GateIndex(GATES)


def scan(text: Text, ctx: Observation, opened: AbstractSet[Gated] | None = None) -> list[Finding]:
    """Every Claude Code banner, failure and marker in the text."""
    norm = text.norm
    if opened is None:
        opened = _index().open(norm)
    if opened.isdisjoint(_GATE_SET):
        return []
    found: list[Finding] = []
    epoch_starts: list[int] = []
    spend_spans: list[tuple[int, int]] = []
    waiting_starts: set[int] = set()
    #: Where a banner read above starts: the owner-cap patterns below do not read it again.
    read_starts: set[int] = set()
    for match in _EPOCH.finditer(norm) if _EPOCH in opened else ():
        epoch_starts.append(match.start())
        resolved = at_epoch(
            float(match.group("epoch")),
            ctx.observed_at,
            limit=window(PROVIDER, None),
            form="epoch",
        )
        found.append(findings.stop(PROVIDER, match.start(), match.end(), resolved))
    for match in _STOP.finditer(norm) if _STOP in opened else ():
        if epoch_starts and any_within(
            epoch_starts, match.start() - _EPOCH_HEAD_REACH, match.start()
        ):
            continue
        scope = _scope(match)
        continuing = match.group("continuing") is not None
        head_end = match.start() if continuing else match.end()
        if scope == "spend_cap":
            # "You've hit your individual spend limit · ask your admin ... · your weekly limit
            # resets Dec 4, 8:33pm": the spend limit stops the extra usage past the plan, and
            # the plan's window named after it resets as stated; waiting for that reset helps.
            window_named = _SPEND_WINDOW.match(norm, head_end)
            if window_named is None:
                spend_spans.append((match.start(), head_end))
                read_starts.add(match.start())
                found.append(
                    findings.no_reset(
                        PROVIDER, match.start(), head_end, scope, "a spend limit is reached"
                    )
                )
                continue
            scope = limit_scope(window_named.group("which"))
            head_end = window_named.end()
            spend_spans.append((match.start(), head_end))
        clause = _reset_clause(norm, head_end, ctx, scope)
        waiting = match.group("waiting") is not None or continuing
        if clause is None and match.group("bare") and not _alone_on_line(text, match.start()):
            continue
        if (
            match.group("hit")
            and (match.group("which") or "").split() == ["usage"]
            and "·" not in norm[head_end : (clause[0] if clause else head_end)]
        ):
            # "You've hit your usage limit." without Claude's "· resets" is Codex's wording.
            continue
        if clause is None and "'" in (match.group("which") or ""):
            continue  # an org's own limit without a reset: read as such below
        read_starts.add(match.start())
        if clause is None:
            what = match.group(0)
            found.append(findings.not_stated(PROVIDER, match.start(), head_end, scope, what))
            continue
        end, resolved = clause
        native = _continues_by_itself(text, head_end, end)
        if waiting:
            waiting_starts.add(match.start())
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
    for match in _ORG_LIMIT.finditer(norm) if _ORG_LIMIT in opened else ():
        if match.start() in read_starts:
            continue
        scope = "monthly" if match.group("monthly") else "spend_cap"
        found.append(
            findings.no_reset(PROVIDER, match.start(), match.end(), scope, "an org limit is hit")
        )
    for match in _ZERO_CAP.finditer(norm) if _ZERO_CAP in opened else ():
        found.append(
            findings.no_reset(PROVIDER, match.start(), match.end(), "spend_cap", "a cap of $0")
        )
    for match in _CREDITS.finditer(norm) if _CREDITS in opened else ():
        found.append(
            findings.no_reset(
                PROVIDER, match.start(), match.end(), "credits", "prepaid credit is used up"
            )
        )
    # The spans follow the banners' order: which one may hold a match is found by bisection,
    # not by a look at every span (thousands of spend banners stay linear).
    span_starts = [start for start, _ in spend_spans]
    span_reach: list[int] = []  # the furthest end among the spans up to each one
    for _, end in spend_spans:
        span_reach.append(max(end, span_reach[-1]) if span_reach else end)
    for match in _SPEND.finditer(norm) if _SPEND in opened else ():
        index = bisect_right(span_starts, match.start()) - 1
        if index >= 0 and match.start() < span_reach[index]:
            continue  # read with its banner above
        found.append(
            findings.no_reset(
                PROVIDER, match.start(), match.end(), "spend_cap", "a spend cap is reached"
            )
        )
    for match in _LIMIT_MENU.finditer(norm) if _LIMIT_MENU in opened else ():
        found.append(
            findings.not_stated(PROVIDER, match.start(), match.end(), None, "the limit menu")
        )
    if claude_failures.COUNTDOWN in opened:
        found.extend(claude_failures.countdowns(text, ctx))
    for match in _RATE_LIMIT_BODY.finditer(norm) if _RATE_LIMIT_BODY in opened else ():
        if _NOT_THE_LIMIT.search(text.around(match.start(), match.end())):
            # "Server is temporarily limiting requests (not your usage limit) · This request
            # would exceed ...": a throttle that says it is not the usage limit (rule 8).
            continue
        found.append(
            findings.not_stated(PROVIDER, match.start(), match.end(), None, "the API's rate limit")
        )
    for match in (
        claude_failures.THROTTLE.finditer(norm) if claude_failures.THROTTLE in opened else ()
    ):
        found.append(findings.failure("transient", PROVIDER, match.start(), match.end()))
    found = _redrawn(norm, found, waiting_starts)
    found.extend(findings.scan_common(text, PROVIDER, _COMMON, opened))
    found.extend(claude_failures.tool_results(text))
    # The waiting line answers no prompt: the empty input box (and its placeholder) stands
    # between the banner and the status line, and must not supersede the banner.
    stops = [f for f in found if f.role == "stop" and f.start not in waiting_starts]
    found.extend(claude_failures.answered_prompts(text, stops))
    if waiting_starts:
        found = _waiting_joined(found, waiting_starts)
    cancelled = norm.rfind("Automatic continue cancelled") if "continue cancelled" in norm else -1
    if cancelled >= 0:
        # "Automatic continue cancelled · /rate-limit-options to wait again": the user pressed
        # Esc, and the CLI will not go on by itself at the reset printed before.
        found = [
            f._replace(native_auto_continue=False)
            if f.native_auto_continue and f.start < cancelled
            else f
            for f in found
        ]
    return found


def _redrawn(norm: str, found: list[Finding], waiting_starts: set[int]) -> list[Finding]:
    """A banner drawn again over the one before it: the next banner starts where the earlier
    one's reset clause ends, on the same line ("... resets 3pm (UTC)You've hit your limit ·
    resets 4pm (UTC)"). A capture keeps both once the terminal's cursor moves are stripped;
    the screen showed only the later one, the CLI's newer word (rule 8: the last printed).
    The CLI's waiting line after a banner is no redraw: it lends the banner its words."""
    stops = sorted((f for f in found if f.role == "stop"), key=lambda f: f.start)
    if len(stops) < 2:
        return found
    starts = {f.start for f in stops}
    redrawn = set()
    for stop in stops:
        following = stop.end
        while following < len(norm) and norm[following] in " \t":
            following += 1
        if (
            following in starts
            and following not in waiting_starts
            and following > stop.start
            and stop.reset is not None
        ):
            redrawn.add(stop.start)
    if not redrawn:
        return found
    return [f for f in found if not (f.role == "stop" and f.start in redrawn)]


def _waiting_joined(found: list[Finding], waiting_starts: set[int]) -> list[Finding]:
    """The CLI's "Usage limit reached · set to continue automatically at 11:40pm" (and its
    status line) follows the banner it waits on: one limit, told twice. It names neither the
    window nor the zone, so it lends the banner before it (in the same episode: nothing shows
    the session went on between) what it adds, that the CLI continues by itself, and is read
    on its own only where no banner precedes it."""
    ordered = sorted(found, key=lambda finding: finding.start)
    joined: list[Finding] = []
    banner_at: int | None = None  # index in `joined` of the banner the episode waits on
    for finding in ordered:
        if finding.role == "went_on":
            banner_at = None
        elif finding.role == "stop" and finding.start in waiting_starts:
            if banner_at is not None:
                banner = joined[banner_at]
                if finding.native_auto_continue and not banner.native_auto_continue:
                    joined[banner_at] = banner._replace(native_auto_continue=True)
                continue
        elif finding.role == "stop":
            banner_at = len(joined)
        joined.append(finding)
    return joined
