"""After every exit of the CLI (exit status 0 included): read what it said, decide whether the
attempt failed, and build the failure report the service stores.

Structured events come first, the text tail second, through `rewake.parsers.parse` (as the service
reads a report). An attempt failed when the CLI exited non-zero, was stopped, ended on an error
event (Claude's `result` with is_error, Codex's `turn.failed`, Gemini's error `result`), or
its output is a stop (provider_quota, login_required, other_failure). A transient throttle the
CLI rode out, or an `allowed`/`allowed_warning` rate-limit event, is not a failure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewake.parsers import parse
from rewake.parsers.verdict import Verdict, format_instant
from rewake.reports.rules import CLI_TEXT_LIMIT_CHARS, keep_last_part
from rewake.runner.clis.providers import Event, Provider, provider_named
from rewake.runner.process.supervise import Finished

#: Verdict kinds that stop a run whatever the exit status.
STOP_KINDS = ("provider_quota", "login_required", "other_failure")
#: Event types that carry no conversation content: every one of them goes in the report.
_CONTENT_TYPES = frozenset({
    "assistant", "user", "stream_event", "message", "tool_use", "tool_result", "item.started",
    "item.updated", "item.completed",
})  # fmt: skip
#: The last events always go in the report too (what led to the exit), and no more than this
#: many in all: a long session's events would make the report huge.
LAST_EVENTS = 20
MAX_EVENTS = 400


@dataclass(frozen=True)
class Classified:
    """What an exit means."""

    failed: bool
    verdict: Verdict
    missing_conversation: bool
    #: The kind rewake states in the report; None lets the service derive it from the verdict.
    failure_kind: str | None


def report_events(events: Sequence[Event]) -> list[Event]:
    """The events the report carries: every control event (init, rate limits, results, errors)
    and the last few, in their order."""
    keep = {n for n, event in enumerate(events) if event.get("type") not in _CONTENT_TYPES}
    keep |= set(range(max(0, len(events) - LAST_EVENTS), len(events)))
    chosen = [events[n] for n in sorted(keep)]
    return chosen[-MAX_EVENTS:]


def parse_input(events: Sequence[Event], tail: str) -> str:
    """Events as JSON lines, then the text: what the service's parser reads from a report."""

    return "\n".join([*(json.dumps(event) for event in events), tail])


def classify(provider: Provider, finished: Finished, zone: str | None) -> Classified:
    events = report_events(finished.events)
    verdict = parse(
        parse_input(events, finished.tail),
        observed_at=finished.ended_at,
        zone=zone,
        provider=provider.name,
    )
    missing = provider.missing_conversation(finished.events, finished.tail)
    failed = (
        finished.halted
        or finished.exit_code != 0
        or missing
        or provider.ended_in_error(finished.events)
        or verdict.kind in STOP_KINDS
    )
    kind: str | None = None
    if finished.halted:
        # Stopped before the CLI showed any work: nothing of the task was done yet.
        kind = "execution_failure" if finished.started else "interrupted_start"
    elif missing:
        kind = "conversation_missing"
    return Classified(failed, verdict, missing, kind)


def failure_body(
    finished: Finished, classified: Classified, *, attempt: int, provider: str, zone: str | None
) -> dict[str, Any]:
    """The failure report (the failure body, docs/design.md#bodies) for an attempt that failed.

    `message` is the text the CLI printed outside its events; `cli_text` is what its error
    events showed the user, which a headless run never prints as text. The service parses the
    message and the events, never `cli_text`: it is for people to read."""
    body: dict[str, Any] = {
        "attempt": attempt,
        "message": finished.tail,
        "observed_at": format_instant(finished.ended_at),
        "zone": zone,
        "provider": provider,
        "session_id": finished.session_id,
        "events": report_events(finished.events),
        "capture": "live",
        "halted": finished.halted,
    }
    if classified.failure_kind is not None:
        body["failure_kind"] = classified.failure_kind
    cli_text = provider_named(provider).cli_text(finished.events)
    if cli_text:
        body["cli_text"] = keep_last_part(cli_text, CLI_TEXT_LIMIT_CHARS)[0]
    return body
