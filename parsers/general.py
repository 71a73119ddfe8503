"""Failures every CLI shows in words that are not its own: the network's errors as Node prints
them, and a model that needs usage credits. Read for whichever CLI the text is from (the
finding names no provider; the caller's or the detected one is the verdict's).

    API Error: Connection error. (getaddrinfo ENOTFOUND api.anthropic.com)      (transient)
    Error: connect ECONNREFUSED 127.0.0.1:443                                   (transient)
    Unable to connect to API (ConnectionRefused)                                (transient)
    TypeError: terminated ... [cause]: BodyTimeoutError: Body Timeout Error     (transient)
    We're currently experiencing high traffic. Please try again later.          (transient)
    API Error: Usage credits required for 1M context · run /usage-credits to turn them on,
      or /model to switch to standard context                                   (no_reset)
    Claude Opus 4.7 requires usage credits. ... switch to another model ... to continue
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import cache

from rewake.parsers import findings
from rewake.parsers.findings import Finding, Observation
from rewake.parsers.grammar import Gated, GateIndex, module_gates
from rewake.parsers.text import Text

# Every alternative starts with a literal character, so the regex engine skips, in C, the
# positions where none can start. Node's error codes are the words the network's failures
# share whatever wraps them (an API envelope, a stack trace, a CLI's own sentence).
_NETWORK = Gated(
    r"ENOTFOUND\b|EAI_AGAIN\b|EAI_FAIL\b|ECONNREFUSED\b|ECONNRESET\b|ETIMEDOUT\b"
    r"|EHOSTUNREACH\b|ENETUNREACH\b|ENETDOWN\b"
    # Bun's names for the same ("Unable to connect to API (ConnectionRefused)").
    r"|ConnectionRefused\b|ConnectionReset\b|ConnectionClosed\b"
    r"|getaddrinfo\b|socket hang up"
    # undici, Node's fetch: "TypeError: terminated" with its cause, the body or headers
    # timeout, as Gemini CLI prints them ("[API Error: terminated]").
    r"|UND_ERR_[A-Z_]{3,30}|BodyTimeoutError|HeadersTimeoutError|ConnectTimeoutError"
    r"|Body Timeout Error|Headers Timeout Error|Connect Timeout Error"
    r"|TypeError: terminated\b|Error: terminated\b|Error:\s?\[?terminated\]"
    r"|fetch failed|other side closed|SocketError\b|ECONNABORTED\b|EPIPE\b"
    r"|ERR_STREAM_PREMATURE_CLOSE|Premature close"
    # Rust's (Codex's) words for the same: reqwest and the OS.
    r"|Connection refused|connection refused|Connection reset by peer|connection reset by peer"
    r"|failed to lookup address|dns error|tcp connect error"
    # An overloaded or unreachable server: the status line a proxy or the API answers with.
    r"|Service Unavailable|Bad Gateway|Gateway Time-?out|overloaded_error"
    # "We're currently experiencing high traffic", "due to high traffic".
    r"|experiencing (?:unusually )?(?:high|heavy) traffic"
    r"|due to (?:unusually )?(?:high|heavy) traffic",
    # One word of every alternative: a text holding none of them holds no network failure,
    # and a long one is read only around them (Gated.finditer).
    (
        "ENOTFOUND",
        "EAI_",
        "ECONN",
        "ETIMEDOUT",
        "UNREACH",
        "ENETDOWN",
        "Connection",
        "getaddrinfo",
        "socket",
        "UND_ERR_",
        "Timeout",
        "terminated",
        "Unavailable",
        "Gateway",
        "traffic",
        "fetch failed",
        "other side closed",
        "SocketError",
        "EPIPE",
        "PREMATURE",
        "Premature",
        "onnection re",
        "lookup address",
        "dns error",
        "tcp connect",
        "overloaded_error",
    ),
)

#: A model (or a context size) that runs only on usage credits, with the way out the message
#: offers: switch to another model, or turn the credits on. No window lifts it: no_reset.
_CREDIT_WALL = Gated(
    r"(?:requires?|needs?)\s+(?:usage\s+credits?|extra\s+usage|credits)\b"
    r"|(?:Usage|usage)\s+credits?\s+(?:are\s+|is\s+)?required"
    r"|only\s+available\s+with\s+(?:usage\s+credits?|extra\s+usage)",
    ("credit", "extra"),
)
#: The message's way out, on the wall's line or the next: without it the words are a model
#: picker's label ("Requires usage credits") or prose about credits, not a stop.
_WAY_OUT = re.compile(r"switch\b|/model\b|--model\b|to\s+continue\b")
_WAY_OUT_REACH = 300

#: Every gated pattern this scanner runs; parse files them in its GateIndex with the CLIs'.
GATES = module_gates(globals())


# Built when first needed: parse passes the gates it opened for all scanners at once, so only
# a caller that scans without them (a test) needs this scanner's own index.
@cache
def _index() -> GateIndex:
    """Which of GATES a text opens."""
    return GateIndex(GATES)


def scan(text: Text, ctx: Observation, opened: AbstractSet[Gated] | None = None) -> list[Finding]:
    """Network failures and credit walls, for whichever CLI printed them."""
    del ctx  # none of these states a time
    norm = text.norm
    if opened is None:
        opened = _index().open(norm)
    found: list[Finding] = []
    if _NETWORK in opened:
        for match in _NETWORK.finditer(norm):
            found.append(findings.failure("transient", None, match.start(), match.end()))
    if _CREDIT_WALL in opened:
        for match in _CREDIT_WALL.finditer(norm):
            line_end = text.line_end_within(match.end(), _WAY_OUT_REACH)
            reach = text.line_end_within(min(line_end + 1, len(norm)), _WAY_OUT_REACH)
            if _WAY_OUT.search(norm, match.end(), max(reach, line_end)) is None:
                continue
            # "requires extra usage" names Claude's pay-as-you-go past the plan.
            scope = "extra_usage" if "extra" in match.group() else "credits"
            found.append(
                findings.no_reset(
                    None, match.start(), match.end(), scope, "the model needs usage credits"
                )
            )
    return found
