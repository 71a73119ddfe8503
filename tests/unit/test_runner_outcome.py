"""How `rewake run` reads an exit: failure or not, the kind it states, the report's events, the
host zone, and the terminal rendering of events."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewake.runner.clis.providers import provider_named
from rewake.runner.process.narrate import Narrator
from rewake.runner.process.outcome import classify, failure_body, report_events
from rewake.runner.process.supervise import Finished

NOW = datetime(2026, 6, 10, 14, 5, tzinfo=UTC)
claude = provider_named("claude")
INIT = {"type": "system", "subtype": "init", "session_id": "S"}
REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"


def finished(events: list[dict[str, Any]], code: int = 0, **kw: Any) -> Finished:
    values: dict[str, Any] = {
        "exit_code": code,
        "events": events,
        "tail": "",
        "session_id": "S",
        "started": True,
        "halted": False,
        "ended_at": NOW,
        "log": Path("/dev/null"),
    }
    values.update(kw)
    return Finished(**values)


def limit_event(status: str) -> dict[str, Any]:
    info = {"status": status, "resetsAt": 1781114400, "rateLimitType": "five_hour"}
    return {"type": "rate_limit_event", "rate_limit_info": info}


OK = {"type": "result", "is_error": False, "result": "done"}


def test_allowed_and_allowed_warning_events_are_not_stops() -> None:
    """A run that ends well after allowed or allowed_warning events did not fail."""
    for status in ("allowed", "allowed_warning"):
        verdict = classify(claude, finished([INIT, limit_event(status), OK]), "UTC")
        assert not verdict.failed and verdict.verdict.kind == "none"


def test_rejected_event_is_a_provider_limit_with_its_reset() -> None:
    """A rejected rate_limit_event is a stop with the event's resetsAt, even on exit 0."""
    error = {"type": "result", "is_error": True, "result": "API Error: Request rejected (429)"}
    verdict = classify(claude, finished([INIT, limit_event("rejected"), error]), "UTC")
    assert verdict.failed and verdict.verdict.kind == "provider_quota"
    assert verdict.verdict.reset_at == datetime(2026, 6, 10, 18, 0, tzinfo=UTC)
    assert verdict.failure_kind is None  # derived by the service from the verdict


def test_result_is_error_on_exit_zero_is_a_failure() -> None:
    """Claude's result with is_error fails the attempt whatever the exit status."""
    error = {"type": "result", "is_error": True, "result": "something broke"}
    assert classify(claude, finished([INIT, error]), None).failed


def test_halted_and_missing_conversation_kinds() -> None:
    """Ctrl-C before any work is interrupted_start, after it execution_failure; a missing
    conversation is stated as conversation_missing."""
    assert classify(
        claude, finished([INIT], 130, halted=True, started=False), None
    ).failure_kind == ("interrupted_start")
    assert classify(claude, finished([INIT], 130, halted=True), None).failure_kind == (
        "execution_failure"
    )
    gone = finished([], 1, tail="No conversation found with session ID: S", started=False)
    classified = classify(claude, gone, None)
    assert classified.missing_conversation and classified.failure_kind == "conversation_missing"
    body = failure_body(gone, classified, attempt=2, provider="claude", zone=None)
    assert body["failure_kind"] == "conversation_missing" and body["attempt"] == 2
    assert body["observed_at"] == "2026-06-10T14:05:00Z"


def test_report_keeps_control_events_and_the_last_few() -> None:
    """Assistant content is left out of the report except near the end; control events stay."""
    said = {"type": "assistant", "message": {"content": []}}
    events = [INIT, *[said] * 50, limit_event("rejected"), *[said] * 30]
    kept = report_events(events)
    assert kept[0] == INIT and limit_event("rejected") in kept
    assert len(kept) == 2 + 20


def test_rendering_shows_text_tools_and_limits() -> None:
    """Assistant text as is, tool use on one line, a rejected limit as a banner line, allowed
    events not at all, Gemini's delta pieces joined on one line."""
    r = Narrator("claude")
    tool = {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": "Hi"},
                {"type": "tool_use", "name": "Bash", "input": {"command": "pytest -q"}},
            ]
        },
    }
    assert r.feed(tool) == "Hi\n→ Bash pytest -q\n"
    assert r.feed(limit_event("allowed")) == ""
    assert r.feed(limit_event("rejected")).startswith("■ five_hour limit reached, resets ")
    g = Narrator("gemini")
    pieces = [
        g.feed({"type": "message", "role": "assistant", "content": c, "delta": True})
        for c in ("Fix", "ing")
    ]
    assert "".join(pieces) == "Fixing"
    assert g.feed({"type": "result", "status": "success"}) == "\n✓ done\n"


def test_failure_body_carries_what_the_cli_reported_apart_from_the_message() -> None:
    """Codex's error events (a real capture) give the body's cli_text; the message stays the
    text the CLI printed outside its events; a run with no error event sends none."""
    lines = (REAL / "cx-realcli-team-2h-new-york.txt").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    codex = provider_named("codex")
    done = finished(events, 1, tail="Reading additional input from stdin...")
    body = failure_body(done, classify(codex, done, None), attempt=1, provider="codex", zone=None)
    assert body["message"] == "Reading additional input from stdin..."
    assert body["cli_text"].startswith("You’ve hit your usage limit. To get more access now")
    quiet = finished([INIT], 1)
    body = failure_body(quiet, classify(claude, quiet, None), attempt=1, provider="claude",
                        zone=None)  # fmt: skip
    assert "cli_text" not in body
