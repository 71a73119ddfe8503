"""`rewake serve`'s HTTP protocol (rewake.api.server) over real loopback sockets, in front of a
small ASGI app that can answer slowly or early: what the client owes is due at a deadline,
never while the server is behind, and a request head cannot grow past its ceiling."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import uvicorn

from rewake.api.server import MAX_HEADER_BYTES, MAX_PIPELINED, server_config
from tests.support.raw_http import read_answer
from tests.support.slowdown import Wait

#: The size of `/big`'s answer: far more than the socket buffers of both ends hold.
BIG = 8 * 1024 * 1024
#: Deadlines short enough for a test: one second for a head, two for a body.
SETTINGS = SimpleNamespace(header_timeout_s=1.0, request_timeout_s=2.0, keep_alive_s=5.0,
                           max_connections=64)  # fmt: skip


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """`/slow` answers after 1.5 s, `/early` at once without reading its body, `/headers` with
    the request's header names, `/big` with 8 MiB; anything else at once with its path."""
    path = scope["path"]
    body = path.encode()
    if path == "/big":
        body = b"b" * BIG
    elif path == "/slow":
        await asyncio.sleep(1.5)
    elif path == "/headers":
        while (await receive()).get("more_body"):
            pass
        body = b",".join(name for name, _value in scope["headers"])
    await send({"type": "http.response.start", "status": 404 if path == "/early" else 200,
                "headers": [(b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def port() -> Iterator[int]:
    yield from _serving(SETTINGS)


@pytest.fixture
def port_of_two() -> Iterator[int]:
    """A server whose ceilings are two: requests in flight, connections owing a head."""
    yield from _serving(SimpleNamespace(**vars(SETTINGS) | {"max_connections": 2}))


def _serving(settings: SimpleNamespace) -> Iterator[int]:
    config = server_config(app, host="127.0.0.1", port=0, settings=settings)
    config.lifespan = "off"
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait = Wait(10)
    while not server.started:
        assert not wait.over() and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(timeout=10)


def _answers(sock: socket.socket, within_s: float) -> tuple[list[bytes], bool]:
    """The status codes the server wrote until it closed the connection (True) or `within_s`
    passed (False)."""
    sock.settimeout(0.1)
    received = b""
    deadline = time.monotonic() + within_s
    closed = False
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        received += chunk
    # The app's bodies end without a line break, so a status line may follow one directly.
    return re.findall(rb"HTTP/1\.1 (\d{3}) ", received), closed


def test_only_requests_in_flight_count_against_the_ceiling(port_of_two: int) -> None:
    """Ceilings of two: with two requests in flight, a third is answered 503 at once; two
    connections that sent nothing are closed, the longest idle first, when more open, and
    a whole request on a new connection is answered 200."""
    slow = [socket.create_connection(("127.0.0.1", port_of_two)) for _ in range(2)]
    for sock in slow:
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.3)
    with socket.create_connection(("127.0.0.1", port_of_two)) as third:
        third.sendall(b"GET /third HTTP/1.1\r\nHost: x\r\n\r\n")
        statuses, _closed = _answers(third, 0.5)
    assert statuses == [b"503"], statuses
    for sock in slow:
        assert _answers(sock, 2)[0][:1] == [b"200"]
        sock.close()
    idle = [socket.create_connection(("127.0.0.1", port_of_two)) for _ in range(2)]
    time.sleep(0.1)
    with socket.create_connection(("127.0.0.1", port_of_two)) as fresh:
        fresh.sendall(b"GET /fresh HTTP/1.1\r\nHost: x\r\n\r\n")
        statuses, _closed = _answers(fresh, 0.5)
    assert statuses == [b"200"], statuses
    first_statuses, first_closed = _answers(idle[0], 0.3)
    assert first_closed and not first_statuses  # the longest idle made room, without a word
    for sock in idle:
        sock.close()


def test_a_pipelined_head_is_not_due_while_an_earlier_request_is_answered(port: int) -> None:
    """A slow request, a whole one and the start of a third written at once, the third's rest
    0.2 s later: all three are answered although the first takes longer than the head
    deadline (uvicorn reads nothing more until the answers before it are sent)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /c HTTP/1.1\r\nHo")  # fmt: skip
        time.sleep(0.2)
        sock.sendall(b"st: x\r\n\r\n")
        statuses, _closed = _answers(sock, 3)
    assert statuses[:3] == [b"200", b"200", b"200"], statuses


def test_a_request_answered_before_its_body_still_owes_the_next_head(port: int) -> None:
    """A request answered before its body came (a 404 that reads nothing), whose body then
    comes: the connection is closed with a 408 at the head deadline, not held for good."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n")
        time.sleep(0.3)
        sock.sendall(b"x")
        statuses, closed = _answers(sock, 4)
    assert closed, statuses
    assert statuses == [b"404", b"408"], statuses


def test_an_unfinished_header_line_cannot_grow_past_the_ceiling(port: int) -> None:
    """One header line sent a kilobyte at a time and never finished is refused with a 400
    once the head passes MAX_HEADER_BYTES, long before the head deadline: the parser holds
    an unfinished line whole, so it must not be let to grow."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ")
        refused_after = None
        for sent in range(1, 4 * MAX_HEADER_BYTES // 1024):
            try:
                sock.sendall(b"a" * 1024)
            except (BrokenPipeError, ConnectionResetError):
                refused_after = sent
                break
            time.sleep(0.005)
        statuses, closed = _answers(sock, 1)
    assert closed and statuses == [b"400"], (statuses, refused_after)


def test_a_trailer_is_not_taken_for_a_request_header(port: int) -> None:
    """A chunked body's trailer (here `x-trailer`) does not join the request's headers, which
    the app and its middleware read as the client's."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /headers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n")  # fmt: skip
        sock.settimeout(3)
        with sock.makefile("rb") as reader:
            status, _length, names = read_answer(reader)  # the body may come in a later segment
    assert status.startswith(b"HTTP/1.1 200 "), status
    assert b"host" in names and b"x-trailer" not in names, names


def test_an_endless_trailer_cannot_grow_past_the_ceiling(port: int) -> None:
    """A chunked body whose trailer line never ends is refused with a 400 once the trailer
    passes MAX_HEADER_BYTES, long before the body deadline: the parser holds an unfinished
    trailer whole, as it does a header line."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /headers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"3\r\nabc\r\n0\r\nX-T: ")  # fmt: skip
        for _ in range(4 * MAX_HEADER_BYTES // 1024):
            try:
                sock.sendall(b"a" * 1024)
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.005)
        statuses, closed = _answers(sock, 1)
    assert closed and statuses == [b"400"], statuses


@pytest.mark.parametrize(
    ("requests", "refused"), [(MAX_PIPELINED, False), (MAX_PIPELINED + 8, True)]
)
def test_a_client_cannot_queue_pipelined_requests_without_end(
    port: int, requests: int, refused: bool
) -> None:
    """MAX_PIPELINED requests written at once are all answered; a few more, and the
    connection is answered 400 and closed, so that a client that sends without reading its
    answers cannot make the server queue requests without end."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n" * requests)
        statuses, closed = _answers(sock, 2)
    if refused:
        assert closed and b"400" in statuses, statuses
    else:  # each answered, then (idle past the head deadline) a 408
        assert statuses[:requests] == [b"200"] * requests and b"400" not in statuses, statuses


def test_a_client_that_does_not_read_its_answer_is_cut_off(port: int) -> None:
    """A client that asks for a large answer and reads none of it is cut off once the answer
    has waited the body deadline to be sent, instead of holding the connection and the
    answer's memory for good."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(SETTINGS.request_timeout_s + 1.5)
        received = 0
        sock.settimeout(2)
        try:
            while chunk := sock.recv(65536):
                received += len(chunk)
        except (ConnectionResetError, TimeoutError):
            pass
    assert received < BIG, "the connection was kept, with the whole answer to read"
