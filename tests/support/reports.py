"""Failure reports as a host in Europe/Berlin sends them: real CLI messages, the body, the URL."""

from __future__ import annotations

from typing import Any

# Real CLI messages, observed at OBSERVED (13:05Z) on a host in Europe/Berlin (CET, +01:00).
OBSERVED = "2026-11-30T14:05:00+01:00"
QUOTA = "You've hit your session limit · resets 5:40pm (Europe/Berlin)"  # 16:40Z, +60 s
QUOTA_LATER = "You've hit your session limit · resets 6:40pm (Europe/Berlin)"  # 17:40Z
PASSED = "You've hit your session limit · resets 2:00pm (Europe/Berlin)"  # 13:00Z, 5 min ago
STALE = "You've hit your session limit · resets 1:00pm (Europe/Berlin)"  # 65 min ago: stale
NOT_STATED = "5 hour limit reached"
#: Gemini CLI's capacity message (a relative reset: 16:39Z from 13:05Z).
GEMINI_QUOTA = "You have exhausted your capacity on this model. Your quota will reset after 3h34m."
NO_RESET = "Credit balance too low · Add funds: https://console.anthropic.com/settings/billing"
LOGIN = "Not logged in · Run /login"
NATIVE = (  # 6pm CET is 17:00Z; the CLI says it continues by itself
    "5-hour limit reached ∙ resets 6pm\n"
    "  ⎿  Claude will continue automatically when the limit resets."
)


def failure(attempt: int = 1, message: str = QUOTA, **extra: Any) -> dict[str, Any]:
    """A failure report body from a Berlin host."""
    body: dict[str, Any] = {
        "attempt": attempt,
        "message": message,
        "observed_at": OBSERVED,
        "zone": "Europe/Berlin",
    }
    body.update(extra)
    return body


def runs_url(root_id: str, run_id: str = "r1", what: str = "failures") -> str:
    return f"/api/agent/runs/{root_id}/runs/{run_id}/{what}"
