"""The host contract (docs/host-contract.md), checked over loopback against the example host
the tests use and against the minimal host printed in the docs: signatures, freshness,
idempotency, stale attempts, the lookup, and never `force`."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hosts.example_host import ExampleHost

DOC = Path(__file__).resolve().parents[2] / "docs" / "host-contract.md"


@dataclass
class Host:
    """A running host: where to send, its secret, and how to mark a run paused at an attempt."""

    url: str
    secret: bytes
    paused: dict[tuple[str, str], int]
    resumed: Callable[[], int]


def _doc_host_source() -> str:
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    source = next(block for block in blocks if "class Host(BaseHTTPRequestHandler)" in block)
    lines = source.rstrip().splitlines()
    assert lines[-1].startswith("ThreadingHTTPServer(")
    return "\n".join(lines[:-1])


@pytest.fixture(params=["example_host", "docs_minimal_host"])
def host(request: pytest.FixtureRequest) -> Iterator[Host]:
    if request.param == "example_host":
        with ExampleHost("example-secret-0123456789") as example:
            yield Host(
                example.url, b"example-secret-0123456789", example.state.paused,
                lambda: len(example.state.resumed),
            )  # fmt: skip
        return
    namespace: dict[str, Any] = {"__name__": "docs_minimal_host"}
    resumed: list[tuple[str, str]] = []
    namespace["resume_the_agent"] = lambda root, run, **_kw: resumed.append((root, run))
    exec(compile(_doc_host_source(), str(DOC), "exec"), namespace)  # the docs' own code
    server = ThreadingHTTPServer(("127.0.0.1", 0), namespace["Host"])
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield Host(
            f"http://127.0.0.1:{port}", namespace["SECRET"], namespace["paused"],
            lambda: len(resumed),
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()


def send(
    host: Host, key: str, body: dict[str, Any], *, timestamp: int | None = None,
    secret: bytes | None = None, tamper: bool = False,
) -> httpx.Response:  # fmt: skip
    raw = json.dumps(body).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = (
        "sha256="
        + hmac.new(secret or host.secret, stamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    )
    return httpx.post(
        f"{host.url}/api/agent/runs/root-1/runs/run-1/resume",
        content=raw + (b" " if tamper else b""),
        headers={
            "Content-Type": "application/json", "Idempotency-Key": key,
            "X-Rewake-Timestamp": stamp, "X-Rewake-Signature": signature,
        },
    )  # fmt: skip


def lookup(host: Host, key: str) -> httpx.Response:
    stamp = str(int(time.time()))
    signature = (
        "sha256="
        + hmac.new(host.secret, stamp.encode() + b"." + key.encode(), hashlib.sha256).hexdigest()
    )
    return httpx.get(
        f"{host.url}/resumes/{key}",
        headers={"X-Rewake-Timestamp": stamp, "X-Rewake-Signature": signature},
    )


BODY = {"message": "continue", "note": "requested in advance", "expected_attempt": 1, "mark": {}}


def test_signed_resume_is_accepted_once(host: Host) -> None:
    """A signed, fresh resume for the paused attempt is accepted; the same key again gets the
    same answer and does not resume twice."""
    host.paused[("root-1", "run-1")] = 1
    first = send(host, "key-1", BODY)
    again = send(host, "key-1", BODY)
    assert 200 <= first.status_code < 300
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert host.resumed() == 1


@pytest.mark.parametrize(
    "problem", ["tampered body", "wrong secret", "timestamp 10 min old", "timestamp 10 min ahead"]
)
def test_bad_signature_or_stale_timestamp_is_refused(host: Host, problem: str) -> None:
    """A body changed in transit, a wrong secret, or a timestamp outside five minutes: 401."""
    host.paused[("root-1", "run-1")] = 1
    now = int(time.time())
    answer = {
        "tampered body": lambda: send(host, "k-t", BODY, tamper=True),
        "wrong secret": lambda: send(host, "k-s", BODY, secret=b"another-secret"),
        "timestamp 10 min old": lambda: send(host, "k-o", BODY, timestamp=now - 600),
        "timestamp 10 min ahead": lambda: send(host, "k-a", BODY, timestamp=now + 600),
    }[problem]()
    assert answer.status_code == 401


def test_stale_expected_attempt_is_refused(host: Host) -> None:
    """When the run moved past the expected attempt, the host answers 409 attempt_moved_on."""
    host.paused[("root-1", "run-1")] = 2
    answer = send(host, "key-stale", BODY)
    assert (answer.status_code, answer.json()["code"]) == (409, "attempt_moved_on")
    assert host.resumed() == 0


def test_lookup_says_seen_or_never_and_retires_the_unseen(host: Host) -> None:
    """The lookup answers 200 for a key it answered and 404 for one it never saw; that key is
    refused afterwards, so the lookup's answer stays true."""
    host.paused[("root-1", "run-1")] = 1
    send(host, "key-seen", BODY)
    assert lookup(host, "key-seen").status_code == 200
    assert lookup(host, "key-never").status_code == 404
    late = send(host, "key-never", BODY)
    assert (late.status_code, late.json()["code"]) == (409, "key_retired")


def test_rewake_never_sends_force() -> None:
    """The contract's body fields are exactly what the webhook executor sends."""
    text = DOC.read_text()
    assert "never** contains `force`" in text
    for field in ("message", "note", "expected_attempt", "mark"):
        assert f"`{field}`" in text
