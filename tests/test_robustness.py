"""Robustness: whatever the text, `parsers.parse` answers with a well-formed Verdict.

Scrollback is untrusted and can be megabytes: random text and bytes, pathological inputs for
regexes, numbers too large for a datetime, invalid zones. None of it may raise. Linear time is
checked by counting the calls parse makes (deterministic), never by timing; speed figures are
bench/parse_bench.py's job.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewake import parsers
from rewake.parsers import Verdict
from tests.support import corpus
from tests.support.render import FAMILIES, HOST_ZONES

OBSERVED = datetime(2026, 7, 25, 14, 5, 0, tzinfo=UTC)
KINDS = {"provider_quota", "login_required", "transient", "other_failure", "none"}
PROVIDERS = {None, "claude", "codex", "gemini"}
ZONE_ARGUMENTS: tuple[str | None, ...] = (
    None,
    "Europe/Berlin",
    "Etc/Unknown",
    "",
    "Not/AZone",
    "../../etc/passwd",
    "/etc/localtime",
    "asia/kolkata",
    " Europe/Berlin",
    "Europe/Berlin\x00",
    "Europe/" + "x" * 300,
)
KiB = 1024
MiB = 1024 * KiB


def assert_well_formed(verdict: Verdict, text: str) -> None:
    """The verdict keeps the contract: known values, aware times, JSON-able, true evidence."""
    assert isinstance(verdict, Verdict)
    assert verdict.kind in KINDS
    assert verdict.provider in PROVIDERS
    if verdict.reset_at is not None:
        assert verdict.reset_at.tzinfo is not None
        assert verdict.resolution_s is not None and verdict.resolution_s >= 0
    if verdict.refusal is not None:
        assert verdict.refusal.code in parsers.REFUSAL_CODES
    if verdict.retry_after_s is not None:
        assert verdict.retry_after_s >= 0
    json.dumps(verdict.to_json(), allow_nan=False)
    if verdict.evidence is not None:
        start, end = verdict.evidence.start, verdict.evidence.end
        assert 0 <= start <= end <= len(text)
        assert text[start:end] == verdict.evidence.text


def parse_checked(
    text: str, zone: str | None = "Europe/Berlin", provider: str | None = None
) -> Verdict:
    """Parse and check the verdict is well formed."""
    verdict = parsers.parse(text, observed_at=OBSERVED, zone=zone, provider=provider)
    assert_well_formed(verdict, text)
    return verdict


# --------------------------------------------------------------------------- arbitrary text

#: Pieces of the grammars the parser reads, to fuzz near-misses rather than only noise.
FRAGMENTS = (
    "You've hit your session limit",
    "You've hit your weekly limit",
    "5-hour limit reached",
    "Claude usage limit reached. Your limit will reset at ",
    "Claude AI usage limit reached|",
    " · resets ",
    " ∙ resets ",
    "resets ",
    "Jul 25, ",
    "Feb 29 at ",
    "Apr 31, ",
    "5pm",
    "12:50am",
    "13:99pm",
    "0am",
    " (Europe/Berlin)",
    " (Etc/GMT+5)",
    " (Asia/Calcutta)",
    " (Mars/Olympus)",
    "You've hit your usage limit. Try again at ",
    "or try again at ",
    "3:28 PM",
    "May 11th, 2026 1:36 PM",
    "Feb 29th, 2027 1:00 PM",
    "Try again in ",
    "4 days 20 hours 9 minutes",
    "99999999999999999999 days",
    "Usage limit reached for all Pro models.\nAccess resets at ",
    "2:55 PM PST",
    "2:30\u202fPM GMT+5:30",
    "10:57 PM GMT-99",
    "Your quota will reset after ",
    "8h44m7s",
    "99999999999999999h",
    "Please retry in ",
    "39.844676573s",
    "1" * 40 + "ms",
    "limit: 0",
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":',
    '"rateLimitType":"five_hour"}}',
    '{"error":{"type":"usage_limit_reached","resets_at":',
    '"retryDelay":"',
    "1e400",
    "-1",
    "NaN",
    "null",
    "9" * 30,
    "\x1b[31m",
    "\x1b[",
    "\x1b]0;title\x07",
    "\r",
    "\n",
    "{",
    "}",
    "\\n",
    "Not logged in · Please run /login",
    "API Error: 529 Overloaded",
    "Retrying in 4 seconds… (attempt 1/10)",
    "continuing automatically",
    "Heads up, you have less than 5% of your 5h limit left.",
    "Your limit will reset at ",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00+14:00",
    "2026-02-30T10:00:00+09:00",
    '{"error":"usage_limit_reached","resets_at":"',
    "Resets by 4:00 AM Friday ",
)

zone_arguments = st.sampled_from(ZONE_ARGUMENTS + HOST_ZONES[:4])
provider_arguments = st.sampled_from(sorted(PROVIDERS, key=str))
fragment_texts = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=30).map(
    "".join
)
FUZZ_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@FUZZ_SETTINGS
@given(text=st.text(), zone=zone_arguments, provider=provider_arguments)
def test_any_text_gives_a_verdict(text: str, zone: str | None, provider: str | None) -> None:
    """Arbitrary unicode text, with any zone argument and provider, gives a well-formed Verdict."""
    parse_checked(text, zone, provider)


@FUZZ_SETTINGS
@given(data=st.binary(max_size=4096), zone=zone_arguments, provider=provider_arguments)
def test_any_bytes_give_a_verdict(data: bytes, zone: str | None, provider: str | None) -> None:
    """Random bytes decoded with errors='replace' give a well-formed Verdict."""
    parse_checked(data.decode("utf-8", errors="replace"), zone, provider)


@FUZZ_SETTINGS
@given(text=fragment_texts, zone=zone_arguments, provider=provider_arguments)
def test_grammar_fragments_give_a_verdict(
    text: str, zone: str | None, provider: str | None
) -> None:
    """Shuffled pieces of real banners (near misses, absurd numbers) give a well-formed Verdict."""
    parse_checked(text, zone, provider)


# --------------------------------------------------------------------------- absurd values

ABSURD_BANNERS = (
    "Claude AI usage limit reached|" + "9" * 40,
    "Claude AI usage limit reached|99999999999999",
    "Claude AI usage limit reached|-1",
    "Claude AI usage limit reached|0",
    "You've hit your usage limit. Try again in 99999999999999999999 days 5 hours 3 minutes.",
    "You've hit your usage limit. Try again in 2562047 days.",
    "You have exhausted your capacity on this model. Your quota will reset after "
    "99999999999999999h0m0s.",
    "You have exhausted your capacity on this model. Your quota will reset after 1e400s.",
    "Please retry in 99999999999999999999999999.5s.",
    "Please retry in 1.2.3.4s.",
    "Please retry in .s.",
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1e400}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":-1e400}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":NaN}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":Infinity}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":"soon"}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":null}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":true}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":[1,2]}}',
    # ISO-8601 instants at datetime's ends, and a day no calendar has.
    "Claude usage limit reached. Your limit will reset at 9999-12-31T23:59:59-14:00",
    "Claude usage limit reached. Your limit will reset at 0001-01-01T00:00+14:00",
    "Claude usage limit reached. Your limit will reset at 2026-02-30T10:00:00+09:00",
    '{"error":"usage_limit_reached","resets_at":"9999-12-31T23:59:59-14:00"}',
    "You've hit your weekly limit · Resets by 4:00 AM Friday Feb 30",
    '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":'
    + "9" * 400
    + "}}",
    '{"type":"rate_limit_event","rate_limit_info":"rejected"}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":["rejected"]}}',
    '{"type":"rate_limit_event"}',
    '{"type":"result","is_error":true,"result":null}',
    '{"type":"result","is_error":"yes","result":{"nested":true}}',
    '{"error":{"type":"usage_limit_reached","resets_at":1e308,"resets_in_seconds":1e308}}',
    '{"error":{"type":"usage_limit_reached","resets_at":"tomorrow"}}',
    '{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo",'
    '"retryDelay":"99999999999999999999s"}]}}',
    '{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo",'
    '"retryDelay":-5}]}}',
    '{"error":{"code":429,"details":"not a list"}}',
    "You've hit your session limit · resets Feb 30, 5pm (Europe/Berlin)",
    "You've hit your weekly limit · resets Feb 29 at 4pm (America/Recife)",
    "You've hit your weekly limit · resets Apr 31, 9pm (America/New_York)",
    "You've hit your session limit · resets 13:99pm (Europe/Berlin)",
    "You've hit your session limit · resets 0am (Europe/Berlin)",
    "You've hit your session limit · resets 99pm (Europe/Berlin)",
    "You've hit your session limit · resets 5pm (Europe/Berlin\x00)",
    "You've hit your session limit · resets 5pm (../../../etc/passwd)",
    "You've hit your session limit · resets 5pm (Etc/GMT+99)",
    "You've hit your usage limit. Try again at Feb 29th, 2027 1:00 PM.",
    "You've hit your usage limit. Try again at Feb 31st, 9999 1:00 PM.",
    "You've hit your usage limit. Try again at Jan 1st, 0 1:00 PM.",
    "You've hit your usage limit. Try again at 13:61 PM.",
    "You've hit your usage limit. Try again at 0:00 AM.",
    "Usage limit reached for all Pro models.\nAccess resets at 25:00 PM PST.",
    "Usage limit reached for all Pro models.\nAccess resets at 2:55 PM GMT+99:99.",
    "Usage limit reached for all Pro models.\nAccess resets at 2:55 PM XYZT.",
)


def short_id(text: str) -> str:
    """A readable test id: the text's first and last characters."""
    return text if len(text) <= 60 else f"{text[:36]}...{text[-20:]}"


@pytest.mark.parametrize("text", ABSURD_BANNERS, ids=short_id)
@pytest.mark.parametrize("zone", [None, "Pacific/Kiritimati", "Etc/GMT+12"])
def test_absurd_values_give_a_verdict(text: str, zone: str | None) -> None:
    """Out-of-range epochs, durations, dates and zones give a Verdict instead of raising."""
    verdict = parse_checked(text, zone)
    if verdict.reset_at is not None:
        assert verdict.reset_at - OBSERVED <= timedelta(days=32), "a reset beyond every window"


# --------------------------------------------------------------------------- pathological inputs

N = 100_000

PATHOLOGICAL: dict[str, Callable[[], str]] = {
    "spaces": lambda: " " * N,
    "digits": lambda: "9" * N,
    "digits_and_colons": lambda: "12:" * (N // 3),
    "resets_repeated": lambda: "resets " * (N // 7),
    "resets_at_repeated": lambda: "· resets at " * (N // 12),
    "try_again_repeated": lambda: "or try again at " * (N // 16),
    "limit_reached_repeated": lambda: "limit reached " * (N // 14),
    "clock_no_zone_repeated": lambda: "resets 5:40pm (" * (N // 15),
    "zone_paren_unclosed": lambda: "resets 5pm (" + "Europe/" * (N // 7),
    "durations_run_on": lambda: "1h" * (N // 2),
    "duration_words_run_on": lambda: "try again in " + "1 days " * (N // 7),
    "gmt_repeated": lambda: "PM GMT+" * (N // 7),
    "unterminated_csi": lambda: "\x1b[" * (N // 2),
    "unterminated_csi_params": lambda: "\x1b[" + "1;" * (N // 2),
    "unterminated_osc": lambda: "\x1b]0;" + "t" * N,
    "escape_then_banner": lambda: "\x1b]8;;" * (N // 5) + "You've hit your session limit",
    "nested_braces": lambda: "{" * N,
    "nested_json": lambda: '{"a":' * (N // 5),
    "nested_arrays": lambda: "[" * N + "]" * N,
    "deep_valid_json": lambda: '{"a":' * 5_000 + "1" + "}" * 5_000,
    "json_lines_unclosed": lambda: '{"type":"rate_limit_event","x":"' * (N // 32),
    "quotes": lambda: '"' * N,
    "backslashes": lambda: "\\" * N,
    "newlines": lambda: "\n" * N,
    "carriage_returns": lambda: "\r" * N,
    "box_drawing": lambda: ("│" + " " * 78 + "│\n") * (N // 81),
    "separators": lambda: "·∙" * (N // 2),
    "pipes_epoch": lambda: "Claude AI usage limit reached|" * (N // 30),
    "long_word": lambda: "a" * N,
    "long_line_then_banner": lambda: "x" * N + "\nYou've hit your session limit · resets 5pm (UTC)",
    "surrogate_escapes": lambda: "\udcff" * 1000 + "resets 5pm",
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_inputs_give_a_verdict(name: str) -> None:
    """Inputs that trip backtracking regexes or recursive JSON readers still give a Verdict."""
    parse_checked(PATHOLOGICAL[name]())


# --------------------------------------------------------------------------- scrollback

NOISE_LINES = (
    "$ npm test",
    "  ✓ renders the banner (12 ms)",
    "2026-07-25 14:03:11,123 INFO worker: job 4411 finished in 3.2s",
    "warning: unused variable `x` at src/main.rs:41:9",
    "╭──────────────────────────────────────────────╮",
    "│ > continue                                   │",
    "╰──────────────────────────────────────────────╯",
    "\x1b[1;32m✔\x1b[0m Compiled successfully",
    "\x1b]0;claude — ~/src/app\x07",
    "✻ Brewed for 1h 14m 17s",
    "✻ Claude resuming /loop wakeup (Jul 7 4:35am)",
    "Approaching usage limit · resets at 6am",
    "Heads up, you have less than 10% of your weekly limit left. Run /status for a breakdown.",
    '{"type":"assistant","message":{"content":[{"type":"text","text":"You\'ve hit your '
    'session limit · resets 5pm (Europe/Berlin)"}]}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1785000000,'
    '"rateLimitType":"five_hour"}}',
    "API Error (529 Overloaded) · Retrying in 4 seconds… (attempt 1/10)",
    "Not logged in · Please run /login",
    "Weekly limit: [████░░░░░░] 56% left (resets 03:16 on 2 Dec)",
    "   Resets Jul 11 at 12pm (Asia/Singapore)",
)


def rendered_banners(rng: random.Random, count: int) -> list[str]:
    """Banners of every family, for resets within a day of OBSERVED, printed just before it."""
    banners = []
    for _ in range(count):
        family = rng.choice(FAMILIES)
        zone = rng.choice(HOST_ZONES)
        printed_at = OBSERVED - timedelta(seconds=rng.randrange(0, 3600))
        lead = rng.randrange(family.min_lead_s, min(family.max_lead_s, 20 * 3600))
        reset = printed_at + timedelta(seconds=lead)
        reset = reset.replace(second=0) if family.provider == "claude" else reset
        options = {name: rng.choice(values) for name, values in family.options.items()}
        banners.append(family.render(reset, zone, printed_at, **options).text)
    return banners


def scrollback(rng: random.Random, size: int, banner_share: float = 0.02) -> str:
    """Terminal-like noise with banners and random junk mixed in, cut to `size` characters."""
    parts: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if roll < banner_share:
            part = rendered_banners(rng, 1)[0]
        elif roll < 0.1:
            part = rng.randbytes(rng.randrange(1, 200)).decode("utf-8", errors="replace")
        else:
            part = rng.choice(NOISE_LINES)
        parts.append(part)
        length += len(part) + 1
    return "\n".join(parts)[:size]


def test_one_mebibyte_of_scrollback_finishes() -> None:
    """A 1 MiB scrollback of noise, junk bytes and banners is parsed to a Verdict."""
    parse_checked(scrollback(random.Random(1), MiB))


def test_one_mebibyte_of_random_bytes_finishes() -> None:
    """1 MiB of random bytes decoded with errors='replace' is parsed to a Verdict."""
    parse_checked(random.Random(2).randbytes(MiB).decode("utf-8", errors="replace"))


def test_thousands_of_banners_end_in_a_stop() -> None:
    """Thousands of mixed banners and noise, ending in a stop banner, read as provider_quota."""
    rng = random.Random(3)
    lines = rendered_banners(rng, 3000)
    lines[1::3] = [rng.choice(NOISE_LINES) for _ in lines[1::3]]
    last = "You've hit your session limit · resets 4:10pm (Europe/Berlin)"
    text = "\n".join([*lines, last])
    verdict = parse_checked(text)
    assert verdict.kind == "provider_quota"


# --------------------------------------------------------------------------- surroundings


def claude_stops_with_a_reset() -> list[corpus.Case]:
    """Corpus cases whose text is Claude's banner (not JSON) read as a stop with a reset."""
    return [
        case
        for case in corpus.cases()
        if case.expected["provider"] == "claude"
        and case.expected["kind"] == "provider_quota"
        and case.expected["reset_at"] is not None
        and "{" not in case.text
        and len(case.text) < 4 * KiB
    ]


STOPS = claude_stops_with_a_reset()

#: What a wrapper, a shell or the CLI itself prints around a banner without the session
#: going on: a shell's exit lines, a background task's notice, a local slash command's answer.
AFTER_BANNER = {
    "shell-exit": "\n$ echo $?\n1\n$ ",
    "exit-lines": (
        "\nExit code 1\n[process exited with code 1]\nError: Process completed with exit code 1."
    ),
    "background-notice": '\n\n⏺ Background command "npm run dev" completed (exit code 0)',
    "local-command": "\n\n> /export\n  ⎿  Conversation exported to: 2026-07-25-conversation.txt",
    "stop-hook": "\n  ⎿  Stop hook feedback:\n     [~/.claude/hooks/notify.sh]: exit code 1",
}
#: What stands before a banner pasted at the head of a transcript or a shell session.
BEFORE_BANNER = {
    "shell-command": "$ ./agent.sh --resume\n",
    "blank-lines": "\n\n",
}


def surroundings(text: str) -> dict[str, str]:
    """The text reshaped as terminals and pastes reshape it, the banner's words unchanged:
    each " · " clause moved onto a line of its own (one wrap at a time), noise after the
    banner, and a paste's head before it."""
    shaped = {}
    at = text.find(" · ")
    while at >= 0:
        shaped[f"clause-own-line-{at}"] = f"{text[:at]}\n  · {text[at + 3 :]}"
        at = text.find(" · ", at + 1)
    for name, after in AFTER_BANNER.items():
        shaped[f"then-{name}"] = text + after
    for name, before in BEFORE_BANNER.items():
        shaped[f"after-{name}"] = before + text
    shaped["pasted-between"] = BEFORE_BANNER["shell-command"] + text + AFTER_BANNER["shell-exit"]
    return shaped


def reading(verdict: Verdict) -> dict[str, Any]:
    """What a verdict says, without where its evidence stands in the text."""
    fields = verdict.to_json()
    fields.pop("evidence")
    if fields["refusal"] is not None:
        fields["refusal"] = fields["refusal"]["code"]
    return fields


@pytest.mark.parametrize("stop", corpus.params(STOPS))
def test_surroundings_never_change_a_stop(stop: corpus.Case) -> None:
    """A Claude banner read as a stop reads the same with a clause wrapped onto its own line,
    at the head of a pasted transcript, and followed by a shell's or a tool's exit lines."""
    text = stop.text

    def read(shaped: str) -> dict[str, Any]:
        verdict = parsers.parse(
            shaped, observed_at=stop.observed_at, zone=stop.zone, provider=stop.provider
        )
        assert_well_formed(verdict, shaped)
        return reading(verdict)

    as_captured = read(text)
    changed = {
        name: read(shaped)
        for name, shaped in surroundings(text).items()
        if read(shaped) != as_captured
    }
    assert changed == {}, as_captured


def test_surroundings_reshape_only_the_lines() -> None:
    """The reshapings keep the banner's words and add only lines around them or a break
    before a clause."""
    text = "You've hit your org's monthly spend limit · ask your admin · your weekly limit resets"
    shaped = surroundings(text)
    assert sum(name.startswith("clause-own-line") for name in shaped) == 2
    for name, variant in shaped.items():
        if name.startswith("clause-own-line"):
            assert variant.replace("\n  · ", " · ") == text
        else:
            assert text in variant
    assert len(STOPS) > 50  # the corpus holds many banners to reshape


# --------------------------------------------------------------------------- contract edges


@pytest.mark.parametrize("text", ["", "You've hit your session limit · resets 5pm (UTC)"])
def test_naive_observed_at_is_a_value_error(text: str) -> None:
    """A naive observed_at is a ValueError, even for text with nothing to resolve."""
    with pytest.raises(ValueError):
        parsers.parse(text, observed_at=datetime(2026, 7, 25, 14, 5), zone="UTC")


# --------------------------------------------------------------------------- linear time


def count_calls(function: Callable[[], Any]) -> int:
    """How many Python and C function calls running the function makes."""
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return calls


#: Texts that grow with a repeat count: scrollback at three banner densities, and dense runs
#: of the lines a long stuck session prints over and over.
GROWING: dict[str, Callable[[int], str]] = {
    "noise": lambda n: scrollback(random.Random(4), n * 4 * KiB, 0.0),
    "banners_2pct": lambda n: scrollback(random.Random(4), n * 4 * KiB, 0.02),
    "banners_30pct": lambda n: scrollback(random.Random(4), n * 4 * KiB, 0.3),
    "countdowns_and_limits": lambda n: (
        (
            "API Error (429 rate_limit_error) · Retrying in 4 seconds… (attempt 1/10)\n"
            "You've hit your session limit · resets 5pm (UTC)\n"
        )
        * (n * 10)
    ),
    "epochs_and_stops": lambda n: (
        "Claude AI usage limit reached|1785000000\nYou've hit your limit\n" * (n * 10)
    ),
    "gemini_dialogs": lambda n: (
        "Usage limit reached for gemini-2.5-pro.\nAccess resets at 2:55 PM PST.\n" * (n * 10)
    ),
    "network_and_credit_walls": lambda n: (
        (
            "API Error: Connection error. (getaddrinfo ENOTFOUND api.anthropic.com)\n"
            "TypeError: terminated [cause]: BodyTimeoutError: Body Timeout Error\n"
            "API Error: Usage credits required for 1M context · run /usage-credits\n"
        )
        * (n * 10)
    ),
    "unknown_json_with_content": lambda n: (
        '{"runner":"ci","data":{"transcript":[{"role":"assistant","content":'
        '"You\'ve hit your limit \\u00b7 resets 3pm (UTC)"}]}}\n' * (n * 10)
    ),
    "nested_wrappers": lambda n: (
        '{"job":"x","run":{"events":[{"kind":"e","payload":{"error":'
        '"You\'ve hit your limit \\u00b7 resets 3pm (UTC)"}}]}}\n' * (n * 10)
    ),
    "spend_limits_wrapped": lambda n: (
        (
            "You've hit your monthly spend limit · ask your admin " + "x" * 150 + "\n"
            "  · your weekly limit resets Jul 29, 8:33pm (UTC)\n"
        )
        * (n * 10)
    ),
}


@pytest.mark.parametrize("name", sorted(GROWING))
def test_work_grows_linearly_with_length(name: str) -> None:
    """Eight times the text costs at most about eight times the calls (no quadratic loop)."""
    small, large = GROWING[name](8), GROWING[name](64)
    parse_checked(small)  # compile patterns and fill caches before counting
    small_calls = count_calls(lambda: parse_checked(small))
    large_calls = count_calls(lambda: parse_checked(large))
    ratio = len(large) / len(small)
    assert large_calls <= ratio * 1.5 * small_calls + 1000, (small_calls, large_calls)
