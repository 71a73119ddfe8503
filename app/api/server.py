"""How `rewake serve` holds its connections: every one has a deadline, and there is a ceiling.

uvicorn times out a connection only while it idles between two answers (keep-alive). One that
never completes a request stayed open for good: 400 connections dripping a header byte every
few seconds held 400 file descriptors, and 1,100 idle ones under a 1,024-file limit left no
descriptor to accept anything, /healthz included, while asyncio logged a traceback for each
failed accept. So:

- the request's headers must arrive within `header_timeout_s` of the connection opening (or of
  the previous answer), and its body within `request_timeout_s` of the headers; a connection
  that misses its deadline is answered 408 (when nothing was answered yet) and closed; nothing
  is due from a client while an earlier request of its connection is being answered;
- between requests, `keep_alive_s` (uvicorn's timeout_keep_alive);
- at most `max_connections` requests in flight (read in full, not yet answered): beyond it,
  requests are answered 503 at once instead of queueing behind the ones held. Only requests
  count: uvicorn's own limit_concurrency also counted connections that had sent nothing, so
  255 idle connections made every request 503, /healthz included;
- at most `max_connections` connections open that owe a request head (idle, or a head not
  complete): when one more opens, the one that has owed its head longest is closed. Idle
  connections thus hold a bounded number of descriptors and never shut out a request that
  arrives complete on a new connection;
- a client that reads none of an answer the server is sending is cut off after
  `request_timeout_s`;
- a request head (request line and headers) is at most 16 KiB, and so are a chunked body's
  trailers; at most 32 requests of one connection are read and not yet answered (pipelined);
  beyond either, the request is answered 400 and the connection closed. WebSocket upgrades
  are off.

The protocol is uvicorn's httptools one (llhttp, Node.js's HTTP parser, in C): every request
costs the server less than with the pure-Python h11 (docs/performance.md).

uvicorn's documented settings give none of the deadlines and bounds above but keep-alive, so
they rest on its protocol's internals, pinned below uvicorn 1 and each held by a test in
tests/integration/test_serve_protocol.py: the parser callbacks (`on_message_begin`, `on_url`,
`on_header`, `on_headers_complete`, `on_body`, `on_message_complete`), `on_response_complete`,
`send_400_response` and `cycle.response_complete`. `connection_made`, `data_received`,
`pause_writing`, `resume_writing` and `connection_lost` are asyncio's public protocol
methods; the ceiling of requests in flight is a plain ASGI app (`InFlightCeiling`).

Repeated error lines from the event loop and uvicorn are throttled by `rewake.logs`.
Behind a reverse proxy the proxy holds the slow clients and these deadlines are a backstop
(docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: The largest request head (request line and headers) accepted, in bytes; a chunked body's
#: trailers have as much again.
MAX_HEADER_BYTES = 16 * 1024
#: The most requests one connection may have read and not yet answered (pipelined): beyond,
#: it is answered 400 and closed, so that a client that sends without reading cannot queue
#: requests without end.
MAX_PIPELINED = 32

_TIMEOUT_BODY = b"the request did not arrive in time\n"
#: The answer to a connection whose request head did not arrive in time (written raw: no
#: request was read to answer).
_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY)
)


#: The answer to a request beyond the ceiling of requests in flight.
_BUSY_BODY = b"too many requests in flight, retry shortly\n"
_BUSY_HEADERS = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"content-length", str(len(_BUSY_BODY)).encode()),
    (b"retry-after", b"1"),
    (b"connection", b"close"),
]
#: Its warning goes through uvicorn's logger, whose repeats rewake.logs throttles.
_busy_logger = logging.getLogger("uvicorn.error")


class InFlightCeiling:
    """An ASGI app in front of rewake's: at most `limit` HTTP requests in flight at once,
    those beyond answered 503 at once. A connection that sent nothing, or is between
    requests, holds no place (rewake.api.server's module docstring says why)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            _busy_logger.warning("Exceeded the ceiling of requests in flight.")
            await send({"type": "http.response.start", "status": 503, "headers": _BUSY_HEADERS})
            await send({"type": "http.response.body", "body": _BUSY_BODY})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


class Refused(Exception):
    """A request head or trailer over MAX_HEADER_BYTES, or one pipelined request too many.
    Raised in a parser callback, it makes the parser fail, and uvicorn answers 400 and closes
    the connection."""


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline for what the client owes, and a ceiling on
    a request head's size.

    The client owes a head from the connection's opening or from the last answer, and a
    request's body from the end of its head. While an earlier request is still being answered
    it owes nothing: uvicorn stops reading behind a pipelined request, so the rest of the next
    one cannot come until the answers before it are sent. While an answer cannot be sent
    because the client reads nothing, the client owes its reading: the connection is cut
    after `request_timeout_s`."""

    header_timeout_s: float = 10.0
    request_timeout_s: float = 60.0
    #: The most connections that may owe a head at once (one more closes the longest owing).
    max_owing: int = 256
    #: This server's connections that owe a head, the one owing longest first (a dict keeps
    #: insertion order). Set per server by `protocol_with`; the event loop is one thread.
    owing: ClassVar[dict[DeadlineProtocol, None]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None
        #: What of the request being read is still to come: "head", "body", or None between
        #: requests.
        self._reading: str | None = None
        #: Requests read up to the end of their head and not answered yet.
        self._unanswered = 0
        #: The head's bytes so far (after it, the trailers'): its URL and finished lines, and
        #: what the parser holds of an unfinished one (`_unfinished`, counted in
        #: `data_received`: the parser keeps a line whole, however long, until it ends).
        self._head_bytes = 0
        self._unfinished = 0
        #: Parser callbacks so far, so that `data_received` knows when a chunk went whole
        #: into what the parser holds.
        self._callbacks = 0
        #: Cuts the connection while the client does not read its answers.
        self._stalled: asyncio.TimerHandle | None = None

    # -- uvicorn's protocol hooks and the parser's callbacks -----------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._rearm()
        if len(self.owing) > self.max_owing:
            longest = next(iter(self.owing))
            if longest is not self:
                # It sent no complete request in all this time: the newcomer may have one.
                longest._cancel()
                longest.transport.close()

    def data_received(self, data: bytes) -> None:
        callbacks = self._callbacks
        super().data_received(data)
        if self._reading is not None and self._callbacks == callbacks:
            # All of it went into what the parser holds without a word: an unfinished header
            # line, or after a chunked body an unfinished trailer or chunk line.
            self._unfinished += len(data)
            over = self._head_bytes + self._unfinished > MAX_HEADER_BYTES
            if over and not self.transport.is_closing():  # not refused by the parser already
                message = "Invalid HTTP request received."
                self.logger.warning(message)
                self.send_400_response(message)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading, self._head_bytes, self._unfinished = "head", 0, 0
        self._callbacks += 1
        self._rearm()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)  # ": " and CRLF
        if self._reading == "body":
            return  # a trailer after a chunked body: not one of the request's headers
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._unanswered >= MAX_PIPELINED:
            raise Refused(f"more than {MAX_PIPELINED} requests read and not answered")
        super().on_headers_complete()
        self._reading, self._head_bytes, self._unfinished = "body", 0, 0
        self._callbacks += 1
        self._unanswered += 1
        self._rearm()

    def on_body(self, body: bytes) -> None:
        self._callbacks += 1
        self._unfinished = 0
        super().on_body(body)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = None
        self._callbacks += 1
        self._rearm()

    def on_response_complete(self) -> None:
        self._unanswered -= 1
        super().on_response_complete()
        self._rearm()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self.loop.call_later(self.request_timeout_s, self.transport.abort)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        if self._stalled is not None:
            self._stalled.cancel()
        super().connection_lost(exc)

    # -- the head's size and the deadline ------------------------------------------------

    def _count(self, size: int) -> None:
        self._callbacks += 1
        self._head_bytes, self._unfinished = self._head_bytes + size, 0
        if self._head_bytes > MAX_HEADER_BYTES:
            raise Refused(f"request head or trailers over {MAX_HEADER_BYTES} bytes")

    def _rearm(self) -> None:
        """The deadline for what the client owes now (a deadline already running for it runs
        on); none while an earlier request is being answered."""
        if self.transport.is_closing():
            self._cancel()
            return
        # The request whose body is being read counts itself among the unanswered, unless
        # it was answered before its body came in full.
        reading_unanswered = self._reading == "body" and not self.cycle.response_complete
        if self._unanswered > (1 if reading_unanswered else 0):
            self._cancel()
        else:
            self._expect(self._reading or "head")

    def _expect(self, what: str) -> None:
        if self._waiting_for == what:
            return
        self._cancel()
        self._waiting_for = what
        if what == "head":
            self.owing[self] = None
        within_s = self.header_timeout_s if what == "head" else self.request_timeout_s
        self._deadline = self.loop.call_later(within_s, self._missed)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._waiting_for = None, None
        self.owing.pop(self, None)

    def _missed(self) -> None:
        self._deadline = None
        self.owing.pop(self, None)
        if self.transport.is_closing():
            return
        if self._waiting_for == "head" and (self.cycle is None or self.cycle.response_complete):
            # No request is being answered: say why before closing.
            self.transport.write(_TIMED_OUT)
        self._waiting_for = None
        # A body that stopped coming: the app reading it sees the client disconnect.
        self.transport.close()


def protocol_with(
    header_timeout_s: float, request_timeout_s: float, max_owing: int
) -> type[DeadlineProtocol]:
    """The protocol class with these deadlines and this ceiling, and a registry of its own
    connections that owe a head (uvicorn builds one instance per connection)."""
    return type(
        "DeadlineProtocol",
        (DeadlineProtocol,),
        {
            "header_timeout_s": header_timeout_s,
            "request_timeout_s": request_timeout_s,
            "max_owing": max_owing,
            "owing": {},
        },
    )


def server_config(app: Any, *, host: str, port: int, settings: Any) -> uvicorn.Config:
    """uvicorn's configuration for `rewake serve`: the deadlines and the ceilings above
    (uvicorn's limit_concurrency stays off: it counts idle connections too)."""
    limit = settings.max_connections
    return uvicorn.Config(
        InFlightCeiling(app, limit),
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        http=protocol_with(settings.header_timeout_s, settings.request_timeout_s, limit),
        ws="none",
        timeout_keep_alive=settings.keep_alive_s,
    )
