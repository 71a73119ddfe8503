"""What the one-writer cases with interactive Claude Code share: the prompt they continue, when
their limits reset, and the count of continuations the mock provider saw."""

from __future__ import annotations

import json

from tests.realcli import mock_provider as mp

#: How far into its minute the limit resets: Claude prints the reset floored to the minute,
#: and a printed minute that has already begun reads as the next day's.
RESET_INTO_NEXT_MINUTE_S = 20
#: The least time from scripting the limit to that minute's start: the limit is typed, served,
#: printed and reported by the hook in between (seconds; over 15 on a loaded machine).
REPORT_MARGIN_S = 40
#: Claude Code fires its own continuation at the reset plus 30 to 90 s (its package's default
#: jitter); rewake's mark falls due at the printed minute's end. Both are over by then.
SETTLED_AFTER_RESET_S = 130
PROMPT = "say hello"


def reset_after(now: float) -> int:
    """A reset for a limit scripted at `now` (epoch seconds): RESET_INTO_NEXT_MINUTE_S into the
    first minute that starts at least REPORT_MARGIN_S later, so the report never lands in the
    printed minute (which would read as tomorrow's, and the test would wait a day)."""
    return (int(now + REPORT_MARGIN_S) // 60 + 1) * 60 + RESET_INTO_NEXT_MINUTE_S


def continuations(mock: mp.MockProvider) -> list[mp.Seen]:
    """The requests after the limit that carry the conversation (its first prompt) on: a
    continuation, Claude's own or a resume, as opposed to a side request of the CLI."""
    seen = mock.requests(mp.ANTHROPIC)
    limit = next(i for i, s in enumerate(seen) if s.kind == "limit")
    return [s for s in seen[limit + 1 :] if PROMPT in json.dumps(s.body.get("messages"))]
