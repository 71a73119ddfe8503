"""JSON lines from the CLIs' machine-readable modes (rule 9: structured sources beat text).

    {"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1755615600,
     "rateLimitType":"five_hour"}}                                 Claude stream-json
    {"type":"result","is_error":true,"result":"Claude AI usage limit reached|1755615600"}
    {"type":"error","message":"You've hit your usage limit. ..."}  codex exec --json
    {"type":"turn.failed","error":{"message":"..."}}
    {"id":"0","msg":{"type":"error","message":"..."}}              older codex exec --json
    {"type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":
     {"used_percent":100.0,"window_minutes":300,"resets_at":1777936568}, ...}}}   Codex rollout
    {"error":{"code":429,"message":"...","details":[{"@type":"...RetryInfo","retryDelay":"34s"}]}}

Assistant and tool content is never read: an agent talking about limits is not a limit.
A line that is JSON is read here and hidden from the text scanners, so nothing counts twice.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rewake.parsers.findings import (
    Finding,
    Observation,
    as_structured,
    failure,
    marker,
    not_stated,
    stop,
)
from rewake.parsers.timeres import at_epoch, window
from rewake.parsers.verdict import Provider, Refusal

#: Lines longer than this are not decoded as JSON (they are still scanned as text).
MAX_JSON_LINE = 1 << 20

# Machine-readable output starts at the line's first column; an indented JSON line is a tool's
# output shown in a transcript (rule 8), read as text if at all.
_JSON_LINE = re.compile(r"^\{.*\}[ \t]*$", re.MULTILINE)

#: How many layers of a logger's or a harness's own JSON may wrap a CLI's event or error.
_MAX_WRAPPING = 4
#: A wrapper's keys whose string is the CLI's own words: its error, or its printed result.
_OUTPUT_KEYS = frozenset(("error", "result"))
#: How many items of a wrapper's list are looked into.
_MAX_LISTED = 64
#: A wrapper's keys that hold a turn's content, a tool's result or a command's output: what
#: an agent or a tool said, never the CLI's own banner (rule 8).
_CONTENT_KEYS = frozenset(
    (
        "content",
        "messages",
        "text",
        "prompt",
        "input",
        "output",
        "stdout",
        "tool_result",
        "tool_results",
        "toolUseResult",
        "tool_use_result",
        "tool_output",
    )
)

_CLAUDE_SCOPES = {
    "five_hour": "five_hour",
    "seven_day": "weekly",
    # A model's own weekly limit: the CLI's text names the model ("your Opus limit", "your
    # Fable limit ... Switch to another model"), and both sources say the same scope.
    "seven_day_opus": "model",
    "seven_day_sonnet": "model",
    "seven_day_overage_included": "model",
    "overage": "extra_usage",
}
#: Claude transcript rows that hold no turn and no API answer: the user's typed prompt
#: ("last-prompt"), a title, file snapshots, the prompt queue.
_TRANSCRIPT_BOOKKEEPING = frozenset(
    ("last-prompt", "summary", "custom-title", "file-history-snapshot", "queue-operation")
)
#: Keys only Claude's transcript rows carry.
_TRANSCRIPT_KEYS = frozenset(("parentUuid", "isSidechain", "sessionId", "leafUuid"))
_CODEX_WINDOWS = {300: "five_hour", 10080: "weekly", 1440: "daily"}
#: A window of 28 to 31 days ("window_minutes": 43200) is a month's, as rule 7 sizes it.
_MONTH_MINUTES = range(28 * 1440, 31 * 1440 + 1)


def _codex_window(minutes: float) -> str | None:
    """The scope of a Codex rate-limit window, by its length in minutes."""
    whole = int(minutes)
    if whole in _MONTH_MINUTES:
        return "monthly"
    return _CODEX_WINDOWS.get(whole)


@dataclass(frozen=True, slots=True)
class Message:
    """Error text found inside a JSON line, to be read by the text scanners."""

    text: str
    provider: Provider | None
    line_start: int
    line_end: int
    #: From a `result` that failed: when its text names no failure, it is other_failure.
    failed_result: bool = False


@dataclass(slots=True)
class Structured:
    findings: list[Finding]
    messages: list[Message]
    #: norm spans of the lines decoded as JSON, hidden from the text scan.
    spans: list[tuple[int, int]]
    #: Where the last Claude API error row ended, if one was read.
    error_row_end: int | None = None


def may_hold_json(norm: str) -> bool:
    """Whether some line starts with "{", as every line _JSON_LINE matches does."""
    return norm.startswith("{") or "\n{" in norm


def json_lines(norm: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    if not may_hold_json(norm):
        return
    for match in _JSON_LINE.finditer(norm):
        if match.end() - match.start() > MAX_JSON_LINE:
            continue
        try:
            value = json.loads(match.group(0))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield match.start(), match.end(), value


def read(norm: str, ctx: Observation) -> Structured:
    out = Structured(findings=[], messages=[], spans=[])
    for start, end, event in json_lines(norm):
        if _event(event, start, end, ctx, out):
            out.spans.append((start, end))
        elif (held := _without_content(event, 0)) != event:
            # A line of a shape no CLI prints is read as text, but not what an agent or a
            # tool said in it (rule 8): the line is hidden, and the rest of it, decoded,
            # is read in its place.
            out.spans.append((start, end))
            out.messages.append(Message(json.dumps(held, ensure_ascii=False), None, start, end))
        # Otherwise the line stays visible to the text scanners as it is.
    return out


def _without_content(value: Any, depth: int) -> Any:
    """The JSON value with every content, prompt, input, output and tool-result key left
    out, as deep as a wrapper's nesting is read; a system row's content is the CLI's and
    stays."""
    if depth > _MAX_WRAPPING:
        return value
    if isinstance(value, dict) and "system" in (value.get("type"), value.get("role")):
        return value  # the CLI's own notice, its words under `content` too
    if isinstance(value, dict):
        return {
            key: _without_content(item, depth + 1)
            for key, item in value.items()
            if key not in _CONTENT_KEYS
        }
    if isinstance(value, list):
        return [_without_content(item, depth + 1) for item in value[:_MAX_LISTED]]
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _event(
    event: dict[str, Any], start: int, end: int, ctx: Observation, out: Structured, depth: int = 0
) -> bool:
    """Read one event; False when it is of no shape a CLI prints."""
    kind = event.get("type")
    if kind == "rate_limit_event":
        _claude_rate_limit(event, start, end, ctx, out)
    elif kind == "result":
        failed = (
            event.get("is_error") is True
            or str(event.get("subtype", "")).startswith("error")
            or event.get("status") == "error"
        )
        if not failed:
            out.findings.append(marker("went_on", None, start, end))
            return True
        # Rule 9: a failed result is a failure even when the CLI exits 0 ("No conversation
        # found with session ID", max turns): its text decides what kind, else other_failure.
        # Claude's result of a failed API call names the API's error in its own fields
        # ("api_error": "usage_limit_reached" is Claude's word too, not a sign of Codex).
        owner: Provider | None = (
            "claude" if "is_error" in event and "api_error_status" in event else None
        )
        if message := _text(event.get("result")):
            out.messages.append(Message(message, owner, start, end, failed_result=True))
        elif isinstance(event.get("error"), dict):
            _error_body(event["error"], start, end, out)
        elif message := _text(event.get("error")):
            # A wrapper's result that carries the CLI's error text as a string: the words
            # decide whose it is and what kind (another CLI's banner is read as that CLI's).
            out.messages.append(Message(message, owner, start, end, failed_result=True))
        else:
            out.findings.append(failure("other_failure", None, start, end))
    elif kind == "assistant":
        if _api_error_row(event):
            # Claude prints its own limit banner as a synthetic assistant message; a
            # transcript keeps the API error as an assistant row flagged as one. Neither is
            # the model answering: the session did not go on. But a later error row is the
            # answer to a later request: the session went on after the row before it, whose
            # banner that answer supersedes (rule 8: the server's newer word decides).
            if out.error_row_end is not None:
                out.findings.append(marker("went_on", "claude", out.error_row_end, start))
            out.error_row_end = end
            for text in _content_texts(_nested(event, "message", "content")):
                out.messages.append(Message(text, "claude", start, end))
            # The rejection the banner was printed from: the stream's rate_limit_event is
            # not emitted when the reset has already passed, but this copy of it is.
            params = event.get("api_error_params")
            if isinstance(params, dict) and isinstance(params.get("rate_limit_info"), dict):
                _claude_rate_limit(params, start, end, ctx, out)
            if event.get("error") == "rate_limit":
                # The row says the API refused on a limit even where its words are new to
                # us: a limit with no time stated, which any banner that states one outranks.
                out.findings.append(
                    not_stated("claude", start, end, None, "Claude's rate_limit error row")
                )
        else:
            out.findings.append(marker("went_on", "claude", start, end))
    elif kind == "user" or (kind == "message" and event.get("role") in ("user", "assistant")):
        pass  # a turn's content: never read as a limit (rule 8)
    elif kind in _TRANSCRIPT_BOOKKEEPING or "lastPrompt" in event:
        pass  # what the user typed, titles, snapshots: never the CLI's own banner (rule 8)
    elif kind is None and _TRANSCRIPT_KEYS & event.keys() and "error" not in event:
        pass  # a transcript row of no type we read, holding no error: content, not a stop
    elif kind == "system" and event.get("subtype") == "init":
        out.findings.append(marker("went_on", "claude", start, end))
    elif kind in ("error", "turn.failed"):
        message = _text(event.get("message")) or _text(_nested(event, "error", "message"))
        if message:
            out.messages.append(Message(message, None, start, end))
    elif kind in ("turn.started", "turn.completed", "thread.started", "init"):
        out.findings.append(marker("went_on", None, start, end))
    elif kind == "event_msg":
        payload = event.get("payload")
        if isinstance(payload, dict):
            _codex_payload(payload, start, end, ctx, out)
    elif isinstance(event.get("msg"), dict):
        msg = event["msg"]
        if msg.get("type") in ("error", "stream_error"):
            message = _text(msg.get("message"))
            if message:
                out.messages.append(Message(message, "codex", start, end))
        else:
            _codex_payload(msg, start, end, ctx, out)
    elif isinstance(event.get("error"), dict):
        _error_body(event["error"], start, end, out)
    elif depth < _MAX_WRAPPING:
        # A log line that wraps the CLI's event: {"captured_at": ..., "event": {...}}, or a
        # harness's result holding the CLI's error a few levels down.
        return _wrapped(event, start, end, ctx, out, depth)
    else:
        return False
    return True


def _wrapped(
    event: dict[str, Any], start: int, end: int, ctx: Observation, out: Structured, depth: int
) -> bool:
    """A wrapper's own object: the CLI events it nests are read as events, and an error field
    at any depth as the CLI's live words (an error's message is never the model talking);
    turn content, tool results and their output are not descended into (rule 8). False when
    the wrapper holds nothing read, so its line stays visible to the text scanners."""
    read = False
    for key, value in event.items():
        if key in _CONTENT_KEYS:
            continue
        if key in _OUTPUT_KEYS and (message := _text(value)) and " " in message.strip():
            # A word alone ("usage_limit_reached") is a code the text scanners read in the
            # line itself, beside the fields that go with it. A wrapper's `result` string is
            # the CLI's printed output (`claude -p` prints its banner there): read as the
            # line's text was before the wrapper was decoded, so hiding the line loses none.
            out.messages.append(Message(message, None, start, end))
            read = True
            continue
        items = value[:_MAX_LISTED] if isinstance(value, list) else [value]
        for item in items:
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("type"), str):
                read = _event(item, start, end, ctx, out, depth + 1) or read
            elif key == "error" and _text(item.get("message")):
                _error_body(item, start, end, out)
                read = True
            elif depth + 1 < _MAX_WRAPPING:
                read = _wrapped(item, start, end, ctx, out, depth + 1) or read
    return read


def _api_error_row(event: dict[str, Any]) -> bool:
    """Whether an assistant row is Claude's report of an API error, not the model's answer."""
    if _nested(event, "message", "model") == "<synthetic>":
        return True
    if event.get("isApiErrorMessage") is True or event.get("is_api_error_message") is True:
        return True
    return isinstance(event.get("error"), str | dict) and bool(event.get("error"))


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and isinstance(block.get("text"), str)
    ]


def _number(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (bools, huge or odd values)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _nested(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _claude_rate_limit(
    event: dict[str, Any], start: int, end: int, ctx: Observation, out: Structured
) -> None:
    info = event.get("rate_limit_info")
    if not isinstance(info, dict) or info.get("status") != "rejected":
        return
    scope = _CLAUDE_SCOPES.get(str(info.get("rateLimitType")))
    resets_at = info.get("resetsAt")
    epoch = _number(resets_at)
    if epoch is not None:
        resolved = at_epoch(
            epoch, ctx.observed_at, limit=window("claude", scope), form="structured"
        )
    elif resets_at is None:
        resolved = Refusal("not_stated", "the rejected rate_limit_event carries no resetsAt")
    else:
        resolved = Refusal("unparseable", f"resetsAt {str(resets_at)[:40]!r} is not an epoch")
    out.findings.append(as_structured(stop("claude", start, end, resolved, scope)))


def _codex_payload(
    payload: dict[str, Any], start: int, end: int, ctx: Observation, out: Structured
) -> None:
    """Rollout rate-limit windows: the latest reset among windows at 100 %; none at 100 %
    means the run is not stopped by them."""
    limits = payload.get("rate_limits")
    if payload.get("type") == "error":
        message = _text(payload.get("message"))
        if message:
            out.messages.append(Message(message, "codex", start, end))
        return
    if not isinstance(limits, dict):
        return
    best = None
    for window_info in limits.values():
        if not isinstance(window_info, dict):
            continue
        used = _number(window_info.get("used_percent"))
        resets_at = _number(window_info.get("resets_at"))
        if used is None or used < 100 or resets_at is None:
            continue
        minutes = _number(window_info.get("window_minutes"))
        scope = _codex_window(minutes) if minutes is not None else None
        if best is None or resets_at > best[0]:
            best = (resets_at, scope)
    if best is None:
        return
    resolved = at_epoch(
        float(best[0]), ctx.observed_at, limit=window("codex", best[1]), form="structured"
    )
    out.findings.append(as_structured(stop("codex", start, end, resolved, best[1])))


def _error_body(error: dict[str, Any], start: int, end: int, out: Structured) -> None:
    """An API error body on one line: its message is read as text, and the rest of the body
    too (unescaped), where the text scanners find resets_at and retryDelay in any layout."""
    message = _text(error.get("message")) or ""
    rest = {key: value for key, value in error.items() if key != "message"}
    body = json.dumps(rest, ensure_ascii=False)
    out.messages.append(Message(f"{message}\n{body}", None, start, end))
