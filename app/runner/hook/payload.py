"""What Claude Code hands a hook (one JSON object on stdin), what the hook answers, and how a
Claude session maps to a rewake session and its attempts."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from rewake.runner.store.base import JSON

#: The hook payload is a few hundred bytes; anything past this is not a payload.
MAX_STDIN_BYTES = 4 << 20


#: The run id every interactive session's failures are reported under.
RUN_ID = "interactive"


PROVIDER = "claude"
#: The `agent_type` of a StopFailure that a workflow's agent hit, not the session's own turn
#: (docs/workflows.md).
WORKFLOW_AGENT = "workflow-subagent"


#: What a session id may look like (Claude's are UUIDs). It ends up in the resume's argv as
#: `--resume <id>`: a value starting with `-` would be read as a flag (an injected
#: `--dangerously-skip-permissions`), so anything else is refused, not cleaned up.
SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")


#: The hook events that mean the user continues the session by hand.
CONTINUE_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
#: The hook event by which Claude Code reports its own auto-continue (rewake.runner.hook.native).
NOTIFICATION = "Notification"


class HookInputError(ValueError):
    """The payload on stdin is not a hook payload the hook can use."""


@dataclass(frozen=True, slots=True)
class HookInput:
    """The fields of Claude Code's hook payload rewake uses; only session_id is required."""

    session_id: str
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    error: str | None = None
    error_details: str | None = None
    last_assistant_message: str | None = None
    permission_mode: str | None = None
    #: SessionStart's `source`: startup, resume, clear or compact.
    source: str | None = None
    #: UserPromptSubmit's `prompt`: what was typed.
    prompt: str | None = None
    #: Notification's `notification_type` (e.g. quota_auto_resume_stale) and `message`.
    notification_type: str | None = None
    message: str | None = None


def read_hook_input(raw: str) -> HookInput:
    """The payload read tolerantly: fields of the wrong type are dropped, unknown ones ignored;
    a session_id that is not an id is refused."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise HookInputError(f"stdin is not JSON ({error})") from error
    if not isinstance(data, dict):
        raise HookInputError(f"stdin is JSON but not an object ({type(data).__name__})")

    def text(name: str) -> str | None:
        value = data.get(name)
        return value if isinstance(value, str) and value.strip() else None

    session_id = text("session_id")
    if session_id is None:
        raise HookInputError("the payload has no session_id")
    if not SESSION_ID.fullmatch(session_id):
        raise HookInputError(
            f"session_id {session_id[:80]!r} is not a session id (1 to 128 of A-Z a-z 0-9 _ -, "
            "starting with a letter or digit); nothing recorded"
        )
    return HookInput(
        session_id=session_id,
        transcript_path=text("transcript_path"),
        cwd=text("cwd"),
        hook_event_name=text("hook_event_name"),
        error=text("error"),
        error_details=_details(data.get("error_details")),
        last_assistant_message=text("last_assistant_message"),
        permission_mode=text("permission_mode"),
        source=text("source"),
        prompt=text("prompt"),
        notification_type=text("notification_type"),
        message=text("message"),
    )


def _details(value: Any) -> str | None:
    # Documented as a string; an object is kept as JSON rather than lost.
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return None


def root_id_for(session_id: str) -> str:
    """The Claude session's root id: `claude-<session id>` (a valid id: SESSION_ID is a subset
    of the API's id alphabet)."""
    return f"claude-{session_id}"


def next_attempt(session: JSON | None, run_id: str = RUN_ID) -> int:
    """One more than the highest attempt of `run_id` the store knows; 1 for a new session."""
    highest = 0
    for run in (session or {}).get("runs") or []:
        if not isinstance(run, dict) or run.get("run_id") != run_id:
            continue
        numbers = [run.get("current_attempt")]
        numbers += [a.get("attempt") for a in run.get("attempts") or [] if isinstance(a, dict)]
        highest = max([highest, *(n for n in numbers if isinstance(n, int))])
    return highest + 1


@dataclass
class HookResult:
    """What the hook did, for its stderr lines and the tests."""

    lines: list[str] = field(default_factory=list)
    root_id: str | None = None
    attempt: int | None = None
    armed: bool = False
    #: The prompt must not go on: rewake resumes this conversation headless right now
    #: (rewake.runner.hook.continuing); the command exits 2, the one non-zero status it has.
    blocked: bool = False

    def say(self, line: str) -> None:
        self.lines.append(line)


def current_attempt(session: JSON | None) -> tuple[int, str] | None:
    """(number, status) of the interactive run's current attempt, as the store has it."""
    for run in (session or {}).get("runs") or []:
        if not isinstance(run, dict) or run.get("run_id") != RUN_ID:
            continue
        for attempt in run.get("attempts") or []:
            if isinstance(attempt, dict) and attempt.get("attempt") == run.get("current_attempt"):
                return int(attempt["attempt"]), str(attempt.get("status"))
    return None


#: The record's note of the attempt a continuation by hand was last settled for: while it equals
#: the record's attempt, a prompt has nothing to record and the store is not even opened.
CONTINUED = "continued_attempt"
