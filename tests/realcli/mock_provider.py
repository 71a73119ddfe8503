"""A provider API on 127.0.0.1 that the real CLIs talk to: Anthropic Messages, OpenAI
Responses and Gemini generateContent / streamGenerateContent, each answering from a script.

A test queues what each API answers, in order (the last entry repeats): a limit (429 with the
headers and body the real services send), an answer, or a tool call. Every request is
recorded with the instant the mock answered it, so a test knows when the CLI learned of the
limit. The server runs in a daemon thread of the test process, on a free port.

A CLI that runs under a faked wall clock (libfaketime, `realcli_clock.py`) must hear from a
provider whose clock agrees: `MockProvider(skew_s=...)` reads `time.time() + skew_s` for its
`Date` header and the instants it records, and `now()` gives that clock to the code that
computes a reset to serve.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC = "anthropic"
OPENAI = "openai"
GEMINI = "gemini"


@dataclass(frozen=True)
class Reply:
    """What one request gets. `kind` is "limit" (status, headers, JSON body as given), "text"
    (an answer saying `text`) or "tool" (a call of a tool the request offered)."""

    kind: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    text: str = "Hello from the mock."


@dataclass
class Seen:
    """One request as the mock saw it, and what it answered."""

    api: str
    method: str
    path: str
    body: dict[str, Any]
    status: int
    kind: str
    answered_at: float


def claude_limit(reset_epoch: int | None, claim: str | None, **extra: str) -> Reply:
    """Anthropic's 429 for a subscriber: the unified rate-limit headers Claude Code reads."""
    headers = {"anthropic-ratelimit-unified-status": "rejected", "request-id": "req_mock429"}
    if reset_epoch is not None:
        headers["anthropic-ratelimit-unified-reset"] = str(reset_epoch)
    if claim is not None:
        headers["anthropic-ratelimit-unified-representative-claim"] = claim
    headers.update({f"anthropic-ratelimit-unified-{k.replace('_', '-')}": v
                    for k, v in extra.items()})  # fmt: skip
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "This request would exceed your account's rate limit. "
            "Please try again later.",
        },
    }
    return Reply("limit", 429, headers, body)


def codex_limit(
    reset_epoch: int | None,
    *,
    now: float,
    plan: str | None = "plus",
    error_type: str = "usage_limit_reached",
    window_minutes: int = 300,
    with_resets_at: bool = True,
    headers: dict[str, str] | None = None,
) -> Reply:
    """OpenAI's 429 for a ChatGPT plan: the usage_limit_reached body and x-codex-* windows."""
    error: dict[str, Any] = {"type": error_type, "message": "The usage limit has been reached"}
    if plan is not None:
        error["plan_type"] = plan
    served = {
        "x-codex-primary-used-percent": "100",
        "x-codex-primary-window-minutes": str(window_minutes),
        "x-codex-secondary-used-percent": "40",
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": str(int(now) + 6 * 86400),
    }
    if reset_epoch is not None:
        if with_resets_at:
            error["resets_at"] = reset_epoch
        error["resets_in_seconds"] = max(0, int(reset_epoch - now))
        served["x-codex-primary-reset-at"] = str(reset_epoch)
    served.update(headers or {})
    return Reply("limit", 429, served, {"error": error})


_FREE_TIER_REQUESTS = "generativelanguage.googleapis.com/generate_content_free_tier_requests"


def gemini_limit(
    *,
    retry_delay: str | None = None,
    per_day: bool = False,
    message: str = "Resource has been exhausted (e.g. check quota).",
) -> Reply:
    """Gemini's 429 RESOURCE_EXHAUSTED, with RetryInfo and/or a per-day QuotaFailure."""
    details: list[dict[str, Any]] = []
    if per_day:
        details.append({
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{
                "quotaMetric": _FREE_TIER_REQUESTS,
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "quotaDimensions": {"location": "global", "model": "gemini-2.5-pro"},
                "quotaValue": "50",
            }],
        })  # fmt: skip
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        )
    body = {
        "error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED",
                  "details": details}
    }  # fmt: skip
    return Reply("limit", 429, {}, body)


def answer(text: str = "Hello from the mock.") -> Reply:
    return Reply("text", text=text)


def tool_call() -> Reply:
    return Reply("tool")


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    chunks = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(chunks).encode()


def _anthropic_tool(request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call of a tool the request offered: Bash where it exists (a harmless `true`)."""
    names = [str(tool.get("name")) for tool in request.get("tools") or [] if "name" in tool]
    if "Bash" in names or not names:
        return "Bash", {"command": "true", "description": "Check the shell"}
    return names[0], {}


def anthropic_body(reply: Reply, request: dict[str, Any], serial: int) -> tuple[str, bytes]:
    """An answer or tool call as the Messages API sends it (SSE when the request streamed)."""
    model = str(request.get("model", "claude-mock"))
    message_id = f"msg_mock{serial:04d}"
    if reply.kind == "tool":
        name, tool_input = _anthropic_tool(request)
        block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_mock{serial:04d}",
                                 "name": name, "input": {}}  # fmt: skip
        delta = {"type": "input_json_delta", "partial_json": json.dumps(tool_input)}
        stop = "tool_use"
        full_block = {**block, "input": tool_input}
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply.text}
        stop = "end_turn"
        full_block = {"type": "text", "text": reply.text}
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}  # fmt: skip
    if not request.get("stream"):
        message = {"id": message_id, "type": "message", "role": "assistant", "model": model,
                   "content": [full_block], "stop_reason": stop, "stop_sequence": None,
                   "usage": usage}  # fmt: skip
        return "application/json", json.dumps(message).encode()
    return "text/event-stream", anthropic_stream(message_id, model, block, delta, stop)


def anthropic_stream(
    message_id: str, model: str, block: dict[str, Any], delta: dict[str, Any], stop: str
) -> bytes:
    """A streamed Messages answer of one content block: `block` as it opens, then `delta`,
    ending with `stop` as its stop reason."""
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}  # fmt: skip
    start = {"id": message_id, "type": "message", "role": "assistant", "model": model,
             "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
    return _sse([
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])  # fmt: skip


def openai_body(reply: Reply, serial: int) -> tuple[str, bytes]:
    """An answer (or a shell call) as the Responses API streams it."""
    response_id = f"resp_mock{serial:04d}"
    if reply.kind == "tool":
        item: dict[str, Any] = {
            "type": "function_call", "id": f"fc_mock{serial:04d}", "call_id": f"call_{serial}",
            "name": "shell", "arguments": json.dumps({"command": ["true"]}),
        }  # fmt: skip
    else:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_mock{serial:04d}",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}  # fmt: skip
    return "text/event-stream", _sse([
        ("response.created", {"type": "response.created",
                              "response": {"id": response_id, "status": "in_progress"}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                       "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {"id": response_id, "status": "completed",
                                             "usage": usage}}),
    ])  # fmt: skip


def gemini_body(reply: Reply, stream: bool) -> tuple[str, bytes]:
    """An answer (or a directory listing call) as generateContent answers it."""
    if reply.kind == "tool":
        part: dict[str, Any] = {"functionCall": {"name": "list_directory",
                                                 "args": {"dir_path": "."}}}  # fmt: skip
    else:
        part = {"text": reply.text}
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP",
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                          "totalTokenCount": 15},
        "modelVersion": "gemini-mock",
    }  # fmt: skip
    if stream:
        return "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()
    return "application/json", json.dumps(chunk).encode()


#: The model router's classifier request (Gemini's "auto" model) gets a low score.
_CLASSIFIER = {
    "candidates": [{
        "content": {"role": "model", "parts": [{"text": json.dumps(
            {"complexity_reasoning": "Simple greeting.", "complexity_score": 5})}]},
        "finishReason": "STOP", "index": 0,
    }],
    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
}  # fmt: skip


class MockProvider:
    """The three APIs on one loopback port; `script(api, ...)` says what each answers."""

    def __init__(self, skew_s: float = 0.0) -> None:
        self.skew_s = skew_s
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Reply]] = {ANTHROPIC: [answer()], OPENAI: [answer()],
                                                 GEMINI: [answer()]}  # fmt: skip
        self._served: dict[str, int] = {ANTHROPIC: 0, OPENAI: 0, GEMINI: 0}
        self.seen: list[Seen] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def now(self) -> float:
        """The mock's clock: the real one, moved by `skew_s` to agree with a faked CLI."""
        return time.time() + self.skew_s

    def start(self) -> MockProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, api: str, *replies: Reply) -> None:
        """What `api` answers from now on, in order; the last reply repeats."""
        with self._lock:
            self._scripts[api] = list(replies)
            self._served[api] = 0

    def requests(self, api: str | None = None) -> list[Seen]:
        with self._lock:
            return [seen for seen in self.seen if api is None or seen.api == api]

    def limit_answered_at(self) -> float | None:
        """When the mock last answered with a limit (the CLI prints after that)."""
        limits = [seen.answered_at for seen in self.requests() if seen.kind == "limit"]
        return limits[-1] if limits else None

    def _next(self, api: str) -> tuple[Reply, int]:
        with self._lock:
            script = self._scripts[api]
            index = self._served[api]
            self._served[api] = index + 1
            return script[min(index, len(script) - 1)], index

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return  # the tests read `seen`, not a log

            def date_time_string(self, timestamp: float | None = None) -> str:
                # The Date header: on the mock's clock, which a faked CLI shares.
                return super().date_time_string(mock.now() if timestamp is None else timestamp)

            def _send(self, status: int, ctype: str, payload: bytes,
                      headers: dict[str, str] | None = None) -> None:  # fmt: skip
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            def do_HEAD(self) -> None:
                self._send(404, "text/plain", b"")

            def do_GET(self) -> None:
                self._send(404, "application/json", b'{"error":"not found"}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    request = json.loads(raw or b"{}")
                except ValueError:
                    request = {}
                path = self.path
                if path.startswith("/v1/messages/count_tokens"):
                    self._send(200, "application/json", b'{"input_tokens": 10}')
                    return
                if path.startswith("/v1/messages"):
                    api = ANTHROPIC
                elif path.startswith("/v1/responses"):
                    api = OPENAI
                elif ":generateContent" in path and b"complexity_score" in raw:
                    self._send(200, "application/json", json.dumps(_CLASSIFIER).encode())
                    mock._record(Seen(GEMINI, "POST", path, {}, 200, "classifier", mock.now()))
                    return
                elif "Content" in path and path.startswith("/v1beta/models/"):
                    api = GEMINI
                else:
                    self._send(404, "application/json", b'{"error":"not found"}')
                    return
                reply, serial = mock._next(api)
                if reply.kind == "limit":
                    payload = json.dumps(reply.body or {}).encode()
                    self._send(reply.status, "application/json", payload, reply.headers)
                else:
                    if api == ANTHROPIC:
                        ctype, payload = anthropic_body(reply, request, serial)
                    elif api == OPENAI:
                        ctype, payload = openai_body(reply, serial)
                    else:
                        ctype, payload = gemini_body(reply, "streamGenerate" in path)
                    self._send(200, ctype, payload, reply.headers)
                mock._record(Seen(api, "POST", path, request, reply.status, reply.kind,
                                  mock.now()))  # fmt: skip

        return Handler


@contextmanager
def running(skew_s: float = 0.0) -> Iterator[MockProvider]:
    """A started mock (its clock `skew_s` ahead of the real one), stopped afterwards."""
    mock = MockProvider(skew_s).start()
    try:
        yield mock
    finally:
        mock.stop()
