"""The Messages API as a workflow's agents meet it: a mock on 127.0.0.1 that answers by what
each request is (the main turn, an agent of the six-agent SCRIPT, a resume that names its run)
and counts how often each agent's prompt reached it. test_realcli_workflow.py's docstring says
how it answers."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.realcli import mock_provider as mp

AGENTS = 6
SCRIPT = (
    "export const meta = { name: 'six', description: 'six sequential agents', "
    "phases: [{ title: 'Work' }] }\n"
    "const out = []\n"
    f"for (let i = 1; i <= {AGENTS}; i++) {{\n"
    "  out.push(await agent(`AGENT-${i}: reply with the word done${i}`, "
    "{ label: `a${i}`, phase: 'Work' }))\n"
    "}\n"
    "return { out }\n"
)
_AGENT = re.compile(r"AGENT-(\d+): reply")
_NAMED_RESUME = re.compile(r'scriptPath: "([^"]+)", resumeFromRunId: "(wf_[a-z0-9-]{6,})"')


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _has_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _message(request: dict[str, Any], serial: int, block: dict[str, Any]) -> bytes:
    """A streamed Messages answer holding one block (text or a tool call)."""
    if block["type"] == "tool_use":
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        stop = "tool_use"
    else:
        opened = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
        stop = "end_turn"
    model = str(request.get("model", "claude-mock"))
    return mp.anthropic_stream(f"msg_wf{serial:04d}", model, opened, delta, stop)


@dataclass
class WorkflowMock:
    """The Messages API on 127.0.0.1, answering by what each request is."""

    #: The agents (1-based) that get the usage limit; changed between attempts.
    limited: set[int] = field(default_factory=set)
    reset_epoch: int = 0
    #: When set (and reset_epoch is not), the limit resets this many seconds after the first
    #: limited agent asks: a window counted from when the test scripted it would run out while
    #: a loaded machine was still starting rewake and the CLI, and no agent would be refused.
    reset_in_s: float = 0.0
    script: str = SCRIPT
    #: Every agent prompt that reached the mock, in order, with what it got.
    agents: list[tuple[int, str]] = field(default_factory=list)
    main: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: dict[str, Any], serial: int) -> tuple[int, dict[str, str], bytes]:
        messages = request.get("messages") or []
        first = " ".join(_texts(messages[0])) if messages else ""
        found = _AGENT.search(first)
        if found:
            n = int(found.group(1))
            with self._lock:
                if self.reset_in_s and not self.reset_epoch and n in self.limited:
                    self.reset_epoch = int(time.time() + self.reset_in_s)
                # The limit holds until its reset, as the provider's does.
                limited = n in self.limited and time.time() < self.reset_epoch
                self.agents.append((n, "limit" if limited else "ok"))
            if limited:
                limit = mp.claude_limit(self.reset_epoch, "five_hour")
                return 429, limit.headers, json.dumps(limit.body).encode()
            return 200, {}, _message(request, serial, {"type": "text", "text": f"done{n}"})
        # The turn's prompt: the last user message (a `claude -p --resume` of a session begun
        # interactively sends a system message after it, on the tools -p does not offer).
        last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        said = " ".join(_texts(last))
        named = _NAMED_RESUME.search(said)
        launched = any(m.get("role") == "assistant" and "Workflow" in json.dumps(m.get("content"))
                       for m in messages)  # fmt: skip
        if named and not _has_tool_result(last) and "SYSTEM NOTIFICATION" not in said:
            call = {"scriptPath": named.group(1), "resumeFromRunId": named.group(2)}
            what, block = f"resume {named.group(2)}", _tool(serial, call)
        elif "WFTEST" in first and not launched:
            what, block = "launch", _tool(serial, {"script": self.script})
        else:
            what, block = "text", {"type": "text", "text": "Done for now."}
        with self._lock:
            self.main.append(what)
        return 200, {}, _message(request, serial, block)

    def limit(self, agents: set[int], reset_in_s: float) -> None:
        """Refuse `agents` from now on, until `reset_in_s` after the first of them asks."""
        with self._lock:
            self.reset_epoch, self.reset_in_s, self.limited = 0, reset_in_s, set(agents)

    def counts(self, since: int = 0) -> Counter[int]:
        with self._lock:
            return Counter(n for n, _ in self.agents[since:])


def _tool(serial: int, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_wf{serial:04d}", "name": "Workflow",
            "input": tool_input}  # fmt: skip


@dataclass
class Served:
    mock: WorkflowMock
    url: str


@contextmanager
def serving() -> Iterator[Served]:
    """A WorkflowMock served on 127.0.0.1 (the Messages API, token counts answered), for as
    long as the block runs."""
    mock = WorkflowMock()
    serial = iter(range(1_000_000))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, ctype: str, payload: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._send(404, "application/json", b"{}", {})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                self._send(200, "application/json", b'{"input_tokens": 10}', {})
                return
            status, headers, payload = mock.answer(json.loads(raw or b"{}"), next(serial))
            ctype = "text/event-stream" if status == 200 else "application/json"
            self._send(status, ctype, payload, headers)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(mock, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
