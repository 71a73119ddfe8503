"""Reading the session JSON the API answers (`GET /api/agent/runs/{root_id}`), for the two
views built on it: `rewake show` in the terminal and the session page.

Standard library only: `rewake show` and `rewake hook` import the terminal views, which must
start without loading the web stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]

#: Lines a CLI writes on every headless run whatever happens: a message made only of these
#: says nothing of how the attempt ended. Codex writes the first whenever its stdin is not a
#: terminal (every `rewake run` of it).
CHATTER_LINES = frozenset({"Reading additional input from stdin..."})


@dataclass(frozen=True, slots=True)
class ShownText:
    """The CLI text a view shows for a failure, and the heading that says which text it is."""

    heading: str
    text: str
    #: The text is the report's `cli_text` (the CLI's error events), not its printed output.
    from_events: bool


def shown_text(failure: JSON) -> ShownText:
    """What the CLI printed, unless that says nothing (empty, or only chatter) and the report
    has what the CLI showed through its events (`cli_text`): then that, headed as such."""
    message = str(failure.get("message") or "")
    cli_text = failure.get("cli_text")
    if isinstance(cli_text, str) and cli_text.strip() and _says_nothing(message):
        return ShownText("What the CLI reported", cli_text, from_events=True)
    return ShownText("What the CLI printed", message, from_events=False)


def _says_nothing(message: str) -> bool:
    return all(not line.strip() or line.strip() in CHATTER_LINES for line in message.splitlines())


def current_failure(session: JSON) -> JSON | None:
    """The failure of the session's current attempt (the one `current` names), if that
    attempt failed; None for a session whose current attempt is running or completed."""
    current = session.get("current") or {}
    for run in session.get("runs") or []:
        if run.get("run_id") != current.get("run_id"):
            continue
        for attempt in run.get("attempts") or []:
            if attempt.get("attempt") == current.get("attempt"):
                failure = attempt.get("failure")
                return failure if isinstance(failure, dict) else None
    return None
