"""Reading the session JSON the API answers (`GET /api/agent/runs/{root_id}`), for the two
views built on it: `rewake show` in the terminal and the session page.

Standard library only: `rewake show` and `rewake hook` import the terminal views, which must
start without loading the web stack.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


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
