"""`rewake serve` holding connections it did not ask for: real sockets on loopback against a
real process. A request that trickles in is cut off at its deadline; idle connections that
exhaust the process's file descriptors are closed in time for /healthz to answer again, and
what the event loop says meanwhile is a few lines, not a flood."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.raw_http import read_answer
from tests.support.sweeper import REPO, free_port, stop_all, wait_until

#: Deadlines short enough for a test: the defaults are 10 s for a head and 60 s for a body.
FAST = {"REWAKE_HEADER_TIMEOUT_S": "1", "REWAKE_REQUEST_TIMEOUT_S": "2"}


def _serve(tmp_path: Path, env: dict[str, str], nofile: int | None = None) -> tuple[str, Any]:
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REWAKE_")}
    clean |= {"PYTHONPATH": str(REPO), "REWAKE_DATABASE_URL": f"sqlite:///{tmp_path / 'r.db'}",
              "REWAKE_SERVE_SWEEPER": "false", **env}  # fmt: skip

    def limit_files() -> None:
        if nofile is not None:
            _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "rewake", "serve", "--port", str(port)], env=clean,
        cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT, preexec_fn=limit_files,
    )  # fmt: skip
    log.close()
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    assert wait_until(healthy, 30), (tmp_path / "serve.log").read_text()
    return url, process


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    started: list[subprocess.Popen[bytes]] = []

    def start(env: dict[str, str], nofile: int | None = None) -> str:
        url, process = _serve(tmp_path, env, nofile)
        started.append(process)
        return url

    yield start
    stop_all(started)


def _closed_within(sock: socket.socket, seconds: float, drip: bytes) -> tuple[bool, bytes]:
    """Send `drip` every 0.25 s until the server closes the connection (True) or `seconds`
    pass (False); what the server wrote meanwhile."""
    sock.settimeout(0.25)
    said = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            sock.sendall(drip)
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True, said
        if not chunk:
            return True, said
        said += chunk
    return False, said


@pytest.mark.parametrize("part", ["head", "body"])
def test_a_trickling_request_is_cut_off_at_its_deadline(serve: Any, part: str) -> None:
    """A client that sends its request head (or its body) a few bytes at a time, forever, is
    disconnected at the deadline (with a 408 when no request was read yet): it cannot hold a
    connection open by dripping."""
    url = serve(FAST)
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        if part == "head":
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            drip = b"X-Drip: 1\r\n"
        else:
            head = (
                b"POST /api/parse HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
            )
            sock.sendall(head)
            drip = b" "
        started = time.monotonic()
        closed, said = _closed_within(sock, 8, drip)
        took = time.monotonic() - started
    assert closed, f"still open after {took:.1f} s"
    assert took < 5, took
    if part == "head":
        assert said.startswith(b"HTTP/1.1 408 "), said


def test_idle_connections_cannot_shut_out_health_checks(serve: Any, tmp_path: Path) -> None:
    """With 160 idle connections against a process allowed 128 files, /healthz answers 200
    within a few seconds (the idle ones are closed at the head deadline; uvicorn alone held
    them forever and accepted nothing more), and the event loop's complaints about accepting
    are throttled to a few lines."""
    url = serve(FAST | {"REWAKE_MAX_CONNECTIONS": "64"}, nofile=128)
    port = int(url.rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(160)]
    try:
        started = time.monotonic()

        def answers() -> bool:
            try:
                return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        answered = wait_until(answers, 12, poll_s=0.2)
        took = time.monotonic() - started
    finally:
        for sock in idle:
            sock.close()
    log = (tmp_path / "serve.log").read_text()
    assert answered, f"/healthz did not answer in {took:.1f} s\n{log[-3000:]}"
    assert log.count("Traceback") <= 3, log[-3000:]
    assert len(log.splitlines()) < 200, len(log.splitlines())


def test_a_busy_keep_alive_connection_is_not_cut_off(serve: Any) -> None:
    """The deadline is per request: one connection carrying a request every 0.5 s for 3 s,
    three times the head deadline, is served to the end."""
    url = serve(FAST)
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        reader = sock.makefile("rb")
        for _ in range(6):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = read_answer(reader)
            assert answer.status.startswith(b"HTTP/1.1 200 ")
            assert len(answer.body) == answer.length
            time.sleep(0.5)


@pytest.mark.parametrize(("size", "answered"), [(15 * 1024, b"200"), (17 * 1024, b"400")])
def test_a_request_head_over_16_kib_is_refused(serve: Any, size: int, answered: bytes) -> None:
    """A request head of 15 KiB is served; one of 17 KiB is answered 400 and its connection
    closed, so that nobody makes the server hold a head of any size."""
    url = serve(FAST)
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, \
            sock.makefile("rb") as reader:  # fmt: skip
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
                     + b"p" * size + b"\r\n\r\n")  # fmt: skip
        status = read_answer(reader).status
        assert status.split()[1] == answered, status
        if answered == b"400":
            assert reader.read() == b""  # closed


def test_pipelined_requests_are_all_answered_in_order(serve: Any) -> None:
    """Three requests written at once on one connection get three answers in order, and the
    connection then serves a fourth: pipelining leaves the head deadline as it should be."""
    url = serve(FAST)
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock, \
            sock.makefile("rb") as reader:  # fmt: skip
        paths = [b"/healthz", b"/no-such-route", b"/healthz"]
        sock.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path
                              for path in paths))  # fmt: skip
        statuses = [read_answer(reader).status.split()[1] for _ in paths]
        assert statuses == [b"200", b"404", b"200"]
        time.sleep(0.5)  # within the 1 s head deadline, which runs from the last answer
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_answer(reader).status.split()[1] == b"200"


def test_idle_connections_never_starve_a_complete_request(serve: Any) -> None:
    """With 300 connections open that sent nothing (more than REWAKE_MAX_CONNECTIONS, 256),
    /healthz and an authenticated API call that arrive complete are answered 200 within a
    second or two: the oldest idle connections make room, and the ceiling counts only
    requests in flight (before, every request was 503 until the idle ones timed out)."""
    secret = "edge-secret-0123456789-abcdef"
    # A head deadline far beyond the test: the idle connections must not simply time out.
    url = serve({"REWAKE_HEADER_TIMEOUT_S": "60", "REWAKE_API_TOKENS": f"alice:{secret}"},
                nofile=2048)  # fmt: skip
    port = int(url.rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(300)]
    try:
        time.sleep(0.5)  # the server has accepted them all
        started = time.monotonic()
        with httpx.Client(timeout=5) as client:
            health = client.get(f"{url}/healthz")
            listed = client.get(f"{url}/api/agent/runs",
                                headers={"Authorization": f"Bearer {secret}"})  # fmt: skip
        took = time.monotonic() - started
    finally:
        for sock in idle:
            sock.close()
    assert (health.status_code, listed.status_code) == (200, 200), (health.text, listed.text)
    assert took < 2, took
