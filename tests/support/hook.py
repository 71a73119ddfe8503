"""What Claude Code hands its StopFailure hook on a rejected usage limit: the payload and the
transcript it points at, under the test's CLAUDE_CONFIG_DIR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def claude_dir(tmp_path: Path) -> Path:
    """The test's CLAUDE_CONFIG_DIR: the hook reads transcripts only under its projects/."""
    return tmp_path / "claude"


def stop_failure(tmp_path: Path, session_id: str, resets_at: int) -> str:
    """A StopFailure payload whose transcript ends the way a rejected stream-json turn does."""
    rows: list[dict[str, Any]] = [
        {"type": "user", "message": {"role": "user", "content": "fix the tests"}, "uuid": "u-1"},
        {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
         "resetsAt": resets_at, "rateLimitType": "seven_day_opus"}, "session_id": session_id},
        {"type": "assistant", "message": {"model": "<synthetic>", "role": "assistant", "content": [
            {"type": "text", "text": "API Error: Request rejected (429) · The usage limit has "
             "been reached"}]}, "isApiErrorMessage": True, "uuid": "a-2"},
    ]  # fmt: skip
    transcript = claude_dir(tmp_path) / "projects" / "p" / f"{session_id}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return json.dumps({
        "session_id": session_id, "transcript_path": str(transcript), "cwd": str(tmp_path),
        "hook_event_name": "StopFailure", "error": "rate_limit",
        "error_details": "429 Too Many Requests",
        "last_assistant_message": "API Error: Request rejected (429) · The usage limit has been "
        "reached", "permission_mode": "acceptEdits",
    })  # fmt: skip
