"""What every executor is given and what it answers: one delivery in, one outcome out.

An executor never touches the database and never reads the clock: the sweeper commits
`sending` before calling `deliver`, passes the instant it started the send, and records the
outcome afterwards. `deliver` never raises for anything the far side does; every answer maps to
an outcome state (docs/design.md#executors).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from rewake.marks.states import MarkState
from rewake.parsers.verdict import format_instant

#: Where a send ends (rewake.marks.states.OUTCOME_STATES); ARMED is no end but a deferral (the
#: command executor only: the resume program proved it sent nothing and the mark waits again,
#: docs/design.md#states).
OutcomeState = Literal[
    MarkState.DONE,
    MarkState.FAILED,
    MarkState.UNCERTAIN,
    MarkState.SUPERSEDED,
    MarkState.LOGGED,
    MarkState.ARMED,
]

#: The prompt sent to the agent unless REWAKE_RESUME_PROMPT says otherwise.
DEFAULT_PROMPT = (
    "Your previous turn stopped on a provider usage limit, which has now reset; "
    "continue the task from where it stopped."
)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One claimed mark on its way out, with the key that fences it."""

    mark_id: int
    root_id: str
    run_id: str
    attempt: int
    attempt_key: str
    reset_at: datetime
    resolution_s: int
    due_at: datetime
    armed_by: str
    armed_at: datetime
    sent_at: datetime
    account_key: str | None = None
    cli_session_id: str | None = None

    def mark_json(self) -> dict[str, Any]:
        """The `mark` object of the webhook body: what was armed, by whom, for which reset."""
        return {
            "id": self.mark_id,
            "root_id": self.root_id,
            "run_id": self.run_id,
            "attempt": self.attempt,
            "attempt_key": self.attempt_key,
            "reset_at": format_instant(self.reset_at),
            "resolution_s": self.resolution_s,
            "due_at": format_instant(self.due_at),
            "armed_by": self.armed_by,
            "armed_at": format_instant(self.armed_at),
            "sent_at": format_instant(self.sent_at),
            "account_key": self.account_key,
        }


def audit_note(delivery: Delivery) -> str:
    """Says that the resume was requested in advance, by whom and when, for which reset."""
    return (
        f"Automatic resume requested in advance by {delivery.armed_by} at "
        f"{format_instant(delivery.armed_at)}, for the provider limit that reset at "
        f"{format_instant(delivery.reset_at)} (due {format_instant(delivery.due_at)}); "
        f"sent by rewake at {format_instant(delivery.sent_at)} for attempt {delivery.attempt} "
        f"of run {delivery.run_id}."
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where the mark goes from `sending`, with a stable code and what the far side said."""

    state: OutcomeState
    code: str
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Lookup:
    """What the host's lookup route says about an attempt key: seen (and answered) or not."""

    received: bool
    detail: str | None = None


class Executor(Protocol):
    """Delivers resumes. `deliver` is called from worker threads, concurrently."""

    name: str

    def deliver(self, delivery: Delivery) -> Outcome:
        """Send the resume once; never raises for what the far side does."""
        ...

    def lookup(self, delivery: Delivery, now: datetime) -> Lookup | None:
        """Ask the far side whether it saw this attempt key; None when it cannot tell."""
        ...

    def close(self) -> None:
        """Release connections and child processes."""
        ...


def clip(text: str, limit: int = 2000) -> str:
    """Text kept in the mark's outcome detail: the start of it, marked when cut."""
    return text if len(text) <= limit else text[:limit] + " [cut]"
