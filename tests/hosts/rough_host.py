"""A host that answers badly on purpose, over loopback: for the webhook executor's deadline and
bounded read, and for the drills in which such a host must not hold up other resumes.

Each resume is answered by the behaviour its root_id starts with (the rest of the name is
free, so many marks can share one behaviour):

- `drip-...`: status 200 and headers at once, then one byte of body every `drip_every_s`,
  for `drip_for_s` (a worker held by a host that never stops talking);
- `slowhead-...`: the status line and headers themselves one byte every `drip_every_s`;
- `huge-...`: status 200 and a body of `huge_bytes` (Content-Length says so), written in
  1 MiB pieces until the client stops reading; `written` counts what left;
- anything else: 202 with a short JSON body, at once.

`GET /resumes/{key}` (the lookup) waits `lookup_delay_s`, then says 200 for a key it received
and 404 for one it did not; a key starting with `drip` or `slowhead` is answered as a resume
of that behaviour would be. Every resume is recorded with the instant its request arrived.
Signatures are not checked: the example host does that; this one is about the transport.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.hosts.example_host import ServedHost

MIB = 1024 * 1024


@dataclass(frozen=True)
class Arrival:
    """One resume request as it arrived."""

    arrived: float  # Unix time, read when the request line was parsed
    root_id: str
    key: str
    body: dict[str, Any]


@dataclass
class RoughState:
    drip_every_s: float = 0.5
    drip_for_s: float = 10.0
    huge_bytes: int = 200 * MIB
    lookup_delay_s: float = 0.0
    arrivals: list[Arrival] = field(default_factory=list)
    #: root_id -> bytes of body written before the client went away (or all of it).
    written: dict[str, int] = field(default_factory=dict)
    #: root_id -> seconds from the request's arrival until the host stopped answering it.
    answered_for: dict[str, float] = field(default_factory=dict)
    lookups: list[tuple[float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        state = self.server.state
        key = self.path.rsplit("/", 1)[-1]
        with state.lock:
            state.lookups.append((time.time(), key))
        time.sleep(state.lookup_delay_s)
        with state.lock:
            seen = any(arrival.key == key for arrival in state.arrivals)
        try:
            if key.startswith("drip"):
                self._drip(state)
            elif key.startswith("slowhead"):
                self._slow_head(state)
            else:
                self._plain(200 if seen else 404, {"key": key, "seen": seen})
        except OSError:
            return

    def do_POST(self) -> None:
        arrived = time.time()
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        root_id = self.path.split("/")[4] if self.path.count("/") >= 4 else ""
        with state.lock:
            state.arrivals.append(
                Arrival(arrived, root_id, self.headers.get("Idempotency-Key", ""), body)
            )
        written = 0
        try:
            if root_id.startswith("drip-"):
                written = self._drip(state)
            elif root_id.startswith("slowhead-"):
                written = self._slow_head(state)
            elif root_id.startswith("huge-"):
                written = self._huge(state)
            else:
                written = self._plain(202, {"resumed": True})
        except OSError:  # the client gave up, as it should: what left is counted below
            written = getattr(self, "_written", written)
        with state.lock:
            state.written[root_id] = written
            state.answered_for[root_id] = time.time() - arrived

    def _plain(self, status: int, payload: dict[str, Any]) -> int:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        return len(data)

    def _drip(self, state: RoughState) -> int:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        self._written = 0
        until = time.monotonic() + state.drip_for_s
        while time.monotonic() < until:
            self.wfile.write(b" ")
            self.wfile.flush()
            self._written += 1
            time.sleep(state.drip_every_s)
        return self._written

    def _slow_head(self, state: RoughState) -> int:
        head = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 40
        until = time.monotonic() + state.drip_for_s
        for byte in head:
            if time.monotonic() >= until:
                break
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(state.drip_every_s)
        return 0

    def _huge(self, state: RoughState) -> int:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(state.huge_bytes))
        self.send_header("Connection", "close")
        self.end_headers()
        piece = b'{"resumed": true, "pad": "' + b"x" * (MIB - 26)
        self._written = 0
        while self._written < state.huge_bytes:
            chunk = piece[: state.huge_bytes - self._written]
            self.wfile.write(chunk)
            self._written += len(chunk)
        return self._written


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, state: RoughState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a client that hangs up on a rough answer is the point, not an error


class RoughHost(ServedHost):
    """The rough host served on loopback in a background thread."""

    def __init__(self) -> None:
        self.state = RoughState()
        super().__init__(_Server(self.state))

    def arrivals(self) -> list[Arrival]:
        with self.state.lock:
            return list(self.state.arrivals)
