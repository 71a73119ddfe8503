"""The CLIs' structured events as readable terminal text: what the agent says, one line per tool
use, errors, and the limit line. The raw events stay in the attempt's log; this is for people.

Gemini streams assistant text in `delta` pieces, so a line may be left open between events;
`Narrator.feed` returns text that already carries its newlines (a delta piece as it came).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from rewake.instants import local_clock

Event = dict[str, Any]

#: How much of a tool's input one line shows.
TOOL_LINE_CHARS = 100


def one_line(text: str, limit: int = TOOL_LINE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tool_summary(params: Any) -> str:
    """The most telling field of a tool's input (a command, a path, a pattern), on one line."""
    if not isinstance(params, dict):
        return ""
    for key in ("command", "file_path", "path", "pattern", "url", "query", "description",
                "absolute_path", "dir_path"):  # fmt: skip
        value = params.get(key)
        if isinstance(value, str) and value:
            return one_line(value)
    return one_line(json.dumps(params, ensure_ascii=False)) if params else ""


def local_time(epoch: Any) -> str | None:
    """An epoch in seconds as local wall time, or None when it is not one."""
    if not isinstance(epoch, int | float) or isinstance(epoch, bool):
        return None
    try:
        return local_clock(datetime.fromtimestamp(epoch, UTC))
    except (OverflowError, OSError, ValueError):
        return None


def api_error_text(message: str) -> str:
    """An API error body passed through as text (Codex's usage_limit_reached) as its type and
    message; any other text as is."""
    try:
        body = json.loads(message)
    except ValueError:
        return message
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return f"{error.get('type') or 'error'}: {error['message']}"
    return message


class Narrator:
    """Turns one provider's events into terminal text."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._open_line = False

    def feed(self, event: Event) -> str:
        lines = getattr(self, f"_{self.provider}")(event)
        if isinstance(lines, str):  # a delta piece: continues the open line
            self._open_line = not lines.endswith("\n")
            return lines
        text = "".join(f"{line}\n" for line in lines)
        if text and self._open_line:
            self._open_line = False
            return "\n" + text
        return text

    def plain(self, line: str) -> str:
        """A line the CLI printed that is not an event."""
        prefix = "\n" if self._open_line else ""
        self._open_line = False
        return f"{prefix}{line}\n"

    # -- Claude: stream-json -------------------------------------------------------------

    def _claude(self, event: Event) -> list[str]:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            return [f"· claude session {event.get('session_id')} ({event.get('model', '?')})"]
        if kind == "assistant":
            return self._claude_content(event.get("message"))
        if kind == "user":
            return self._claude_tool_errors(event.get("message"))
        if kind == "rate_limit_event":
            return self._claude_rate_limit(event.get("rate_limit_info"))
        if kind == "result":
            if event.get("is_error"):
                return [f"✗ {one_line(str(event.get('result', 'error')), 300)}"]
            turns = event.get("num_turns")
            return [f"✓ done ({turns} turns)" if turns is not None else "✓ done"]
        return []

    def _claude_content(self, message: Any) -> list[str]:
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return []
        lines: list[str] = []
        for item in message["content"]:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                lines.append(item["text"].rstrip("\n"))
            elif item.get("type") == "tool_use":
                lines.append(f"→ {item.get('name')} {tool_summary(item.get('input'))}".rstrip())
        return lines

    def _claude_tool_errors(self, message: Any) -> list[str]:
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return []
        return [
            f"  ✗ {one_line(str(item.get('content', '')))}"
            for item in message["content"]
            if isinstance(item, dict) and item.get("type") == "tool_result" and item.get("is_error")
        ]

    def _claude_rate_limit(self, info: Any) -> list[str]:
        if not isinstance(info, dict):
            return []
        status = info.get("status")
        scope = info.get("rateLimitType") or "usage"
        when = local_time(info.get("resetsAt"))
        resets = f", resets {when}" if when else ""
        if status == "rejected":
            return [f"■ {scope} limit reached{resets}"]
        if status == "allowed_warning":
            return [f"· approaching the {scope} limit{resets} (the run goes on)"]
        return []  # allowed: Claude reports the limit state on every turn

    # -- Codex: exec --json --------------------------------------------------------------

    def _codex(self, event: Event) -> list[str]:
        kind = event.get("type")
        if kind == "thread.started":
            return [f"· codex thread {event.get('thread_id')}"]
        if kind == "item.completed" and isinstance(event.get("item"), dict):
            return self._codex_item(event["item"])
        if kind == "error":
            return [f"✗ {one_line(api_error_text(str(event.get('message', ''))), 300)}"]
        if kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            return [f"✗ turn failed: {one_line(str(message), 300)}"]
        if kind == "turn.completed":
            return ["✓ turn done"]
        return []

    def _codex_item(self, item: Event) -> list[str]:
        kind = item.get("type") or item.get("item_type")
        if kind in ("agent_message", "assistant_message"):
            return [str(item.get("text", "")).rstrip("\n")]
        if kind == "command_execution":
            code = item.get("exit_code")
            status = f" (exit {code})" if code is not None else ""
            return [f"→ $ {one_line(str(item.get('command', '')))}{status}"]
        if kind == "file_change":
            changes = item.get("changes")
            paths = [c.get("path") for c in changes if isinstance(c, dict)] if isinstance(
                changes, list) else []  # fmt: skip
            return [f"→ edit {one_line(', '.join(str(p) for p in paths))}"]
        if kind == "mcp_tool_call":
            return [f"→ {item.get('server')}.{item.get('tool')}"]
        if kind == "web_search":
            return [f"→ search {one_line(str(item.get('query', '')))}"]
        if kind == "error":
            return [f"! {one_line(str(item.get('message', '')), 300)}"]
        return []

    # -- Gemini: stream-json -------------------------------------------------------------

    def _gemini(self, event: Event) -> list[str] | str:
        kind = event.get("type")
        if kind == "init":
            return [f"· gemini session {event.get('session_id')} ({event.get('model', '?')})"]
        if kind == "message" and event.get("role") == "assistant":
            content = str(event.get("content", ""))
            if event.get("delta"):
                return content
            return [content.rstrip("\n")]
        if kind == "tool_use":
            name = event.get("tool_name")
            return [f"→ {name} {tool_summary(event.get('parameters'))}".rstrip()]
        if kind == "tool_result" and event.get("status") == "error":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            return [f"  ✗ {one_line(str(message))}"]
        if kind == "error":
            mark = "!" if event.get("severity") == "warning" else "✗"
            return [f"{mark} {one_line(str(event.get('message', '')), 300)}"]
        if kind == "result":
            if event.get("status") == "error":
                error = event.get("error")
                message = error.get("message") if isinstance(error, dict) else error
                return [f"✗ {one_line(str(message), 300)}"]
            return ["✓ done"]
        return []
