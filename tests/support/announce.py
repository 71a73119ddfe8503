"""A tiny threaded HTTP server on 127.0.0.1 that keeps what apprise's `json://` sends to it, so
the REWAKE_NOTIFY tests never reach another host."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.slowdown import Wait


class Listener:
    """The notifications received (apprise's JSON: title, message, type), and the status
    answered (500 makes every send fail)."""

    def __init__(self, server: ThreadingHTTPServer, status: int) -> None:
        self.server = server
        self.status = status
        self.received: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.server.server_address[1]}/notify"

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The notifications once `count` have come (or the timeout passed)."""
        wait = Wait(timeout_s)
        while len(self.received) < count and not wait.over():
            time.sleep(0.02)
        return list(self.received)


@contextmanager
def listening(status: int = 200) -> Iterator[Listener]:
    """A Listener on a free port of 127.0.0.1, for the `with` block."""
    listener: Listener

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            listener.received.append(json.loads(self.rfile.read(length) or b"{}"))
            self.send_response(listener.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    listener = Listener(server, status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        server.shutdown()
        server.server_close()
