"""How `rewake serve` holds its connections: every one has a deadline, and there is a ceiling.

uvicorn times out a connection only while it idles between two answers (keep-alive). One that
never completes a request stayed open for good: 400 connections dripping a header byte every
few seconds held 400 file descriptors, and 1,100 idle ones under a 1,024-file limit left no
descriptor to accept anything, /healthz included, while asyncio logged a traceback for each
failed accept. So:

- the request's headers must arrive within `header_timeout_s` of the connection opening (or of
  the previous answer), and its body within `request_timeout_s` of the headers; a connection
  that misses its deadline is answered 408 (when nothing was answered yet) and closed;
- between requests, `keep_alive_s` (uvicorn's timeout_keep_alive);
- at most `max_connections` connections and requests at once (uvicorn's limit_concurrency):
  beyond it, requests are answered 503 at once instead of queueing behind the ones held;
- headers are at most 16 KiB (h11's incomplete-event limit), and WebSocket upgrades are off.

Repeated error lines from the event loop and uvicorn are throttled by `rewake.logs`.
Behind a reverse proxy the proxy holds the slow clients and these deadlines are a backstop
(docs/deployment.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

#: The largest request head (request line and headers) accepted, in bytes.
MAX_HEADER_BYTES = 16 * 1024

_TIMEOUT_BODY = b"the request did not arrive in time\n"
#: The answer to a connection whose request head did not arrive in time (written raw: h11
#: cannot answer a request it never received).
_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's head and body."""

    header_timeout_s: float = 10.0
    request_timeout_s: float = 60.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None

    # -- uvicorn's protocol hooks --------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._expect("head", self.header_timeout_s)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            self._cancel()
        else:
            # The next request's head (keep-alive closes an idle connection sooner), or a
            # pipelined request already under way.
            self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    # -- the deadline --------------------------------------------------------------------

    def _follow(self) -> None:
        """Move the deadline along with what the client has sent so far: a head is due until
        the request line and headers are in, then the body; none once the request is in (the
        app answers; uvicorn's keep-alive takes over after the answer)."""
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._waiting_for != "head":
                self._expect("head", self.header_timeout_s)
        elif state is h11.SEND_BODY:
            if self._waiting_for != "body":
                self._expect("body", self.request_timeout_s)
        else:
            self._cancel()

    def _expect(self, what: str, within_s: float) -> None:
        self._cancel()
        self._waiting_for = what
        self._deadline = self.loop.call_later(within_s, self._missed)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._waiting_for = None, None

    def _missed(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._waiting_for == "head" and (self.cycle is None or self.cycle.response_complete):
            # No request is being answered: say why before closing.
            self.transport.write(_TIMED_OUT)
        self._waiting_for = None
        # A body that stopped coming: the app reading it sees the client disconnect.
        self.transport.close()


def protocol_with(header_timeout_s: float, request_timeout_s: float) -> type[DeadlineH11Protocol]:
    """The protocol class with these deadlines (uvicorn builds one instance per connection)."""
    return type(
        "DeadlineH11Protocol",
        (DeadlineH11Protocol,),
        {"header_timeout_s": header_timeout_s, "request_timeout_s": request_timeout_s},
    )


def server_config(app: Any, *, host: str, port: int, settings: Any) -> uvicorn.Config:
    """uvicorn's configuration for `rewake serve`: the deadlines and the ceiling above."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        http=protocol_with(settings.header_timeout_s, settings.request_timeout_s),
        ws="none",
        timeout_keep_alive=settings.keep_alive_s,
        limit_concurrency=settings.max_connections,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )
