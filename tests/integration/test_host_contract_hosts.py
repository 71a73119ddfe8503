"""The host contract (docs/host-contract.md), checked over loopback against the example host
the tests use and against the minimal host printed in the docs: Standard Webhooks signatures
checked with the library, freshness, replays under another key or URL, idempotency, stale
attempts, the lookup, and never `force`."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from rewake.executors.base import Delivery
from rewake.executors.webhook import WebhookExecutor
from tests.hosts.example_host import ExampleHost

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
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("REWAKE_WEBHOOK_SECRET", "docs-secret-0123456789")
    monkeypatch.setenv("REWAKE_TOKEN", "docs-token-0123456789")
    exec(compile(_doc_host_source(), str(DOC), "exec"), namespace)  # the docs' own code
    # Resuming records instead of starting an agent and reporting it (the e2e test does that).
    namespace["resume_the_agent"] = lambda root, run, *_a, **_kw: resumed.append((root, run))
    server = ThreadingHTTPServer(("127.0.0.1", 0), namespace["Host"])
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield Host(
            f"http://127.0.0.1:{port}", namespace["SECRET"].encode(), namespace["paused"],
            lambda: len(resumed),
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Request:
    """A request as rewake would send it, which a test may resend changed (a replay)."""

    url: str
    raw: bytes
    headers: dict[str, str]

    def post(self, *, raw: bytes | None = None, **headers: str) -> httpx.Response:
        changed = {name.replace("_", "-"): value for name, value in headers.items()}
        return httpx.post(
            self.url, content=self.raw if raw is None else raw, headers={**self.headers, **changed}
        )


def body(key: str, root: str = "root-1", run: str = "run-1", attempt: int = 1) -> dict[str, Any]:
    """The webhook body for `key`: its mark names the key, the run and the attempt."""
    mark = {"attempt_key": key, "root_id": root, "run_id": run, "attempt": attempt}
    return {"message": "continue", "note": "requested in advance", "expected_attempt": attempt,
            "mark": mark}  # fmt: skip


def signed(
    secret: bytes, key: str, raw: bytes = b"", timestamp: int | None = None
) -> dict[str, str]:
    """The Standard Webhooks headers over `raw`, signed by the library itself."""
    stamp = int(time.time()) if timestamp is None else timestamp
    signature = Webhook(secret).sign(key, datetime.fromtimestamp(stamp, UTC), raw.decode())
    return {"webhook-id": key, "webhook-timestamp": str(stamp), "webhook-signature": signature}


def resume(
    host: Host, key: str, payload: dict[str, Any] | None = None, *, root: str = "root-1",
    timestamp: int | None = None, secret: bytes | None = None,
) -> Request:  # fmt: skip
    raw = json.dumps(body(key) if payload is None else payload).encode()
    headers = {"Content-Type": "application/json", "Idempotency-Key": key,
               **signed(secret or host.secret, key, raw, timestamp)}  # fmt: skip
    return Request(f"{host.url}/api/agent/runs/{root}/runs/run-1/resume", raw, headers)


def lookup(host: Host, key: str, *, signed_for: str | None = None, timestamp: int | None = None
           ) -> httpx.Response:  # fmt: skip
    """GET the lookup for `key`, signed (over an empty body) for `signed_for` (default `key`)."""
    signer = signed_for or key
    headers = {"Idempotency-Key": signer, **signed(host.secret, signer, timestamp=timestamp)}
    return httpx.get(f"{host.url}/resumes/{key}", headers=headers)


def test_signed_resume_is_accepted_once(host: Host) -> None:
    """A signed, fresh resume for the paused attempt is accepted; the same key again gets the
    same answer and does not resume twice."""
    host.paused[("root-1", "run-1")] = 1
    request = resume(host, "key-1")
    first = request.post()
    again = request.post()
    assert 200 <= first.status_code < 300
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert host.resumed() == 1


@pytest.mark.parametrize(
    "problem",
    ["tampered body", "wrong secret", "timestamp 10 min old", "timestamp 10 min ahead",
     "timestamp just past the window", "malformed signature", "no signature"],
)  # fmt: skip
def test_bad_signature_or_stale_timestamp_is_refused(host: Host, problem: str) -> None:
    """A body changed in transit, a wrong secret, a timestamp outside five minutes, or a
    missing or malformed signature: 401, and nothing is resumed."""
    host.paused[("root-1", "run-1")] = 1
    now = int(time.time())
    request = resume(host, "k-1")
    answer = {
        "tampered body": lambda: request.post(raw=request.raw + b" "),
        "wrong secret": lambda: resume(host, "k-1", secret=b"another-secret").post(),
        "timestamp 10 min old": lambda: resume(host, "k-1", timestamp=now - 600).post(),
        "timestamp 10 min ahead": lambda: resume(host, "k-1", timestamp=now + 600).post(),
        "timestamp just past the window": lambda: resume(host, "k-1", timestamp=now - 310).post(),
        "malformed signature": lambda: request.post(webhook_signature="sha256=00ff"),
        "no signature": lambda: request.post(webhook_signature=""),
    }[problem]()
    assert answer.status_code == 401
    assert host.resumed() == 0


@pytest.mark.parametrize(
    "replay",
    ["webhook-id and Idempotency-Key", "webhook-id only", "Idempotency-Key only",
     "another run's URL"],
)  # fmt: skip
def test_request_replayed_under_another_key_or_path_is_refused(host: Host, replay: str) -> None:
    """A captured resume sent again under another key (the signature covers webhook-id) or to
    another run's URL (the body's mark names its run) is refused; the genuine request still
    resumes once afterwards."""
    host.paused[("root-1", "run-1")] = 1
    host.paused[("root-2", "run-1")] = 1
    captured = resume(host, "key-1")
    answer = {
        "webhook-id and Idempotency-Key": lambda: captured.post(
            webhook_id="key-2", Idempotency_Key="key-2"
        ),
        "webhook-id only": lambda: captured.post(webhook_id="key-2"),
        "Idempotency-Key only": lambda: captured.post(Idempotency_Key="key-2"),
        "another run's URL": lambda: httpx.post(
            captured.url.replace("/root-1/", "/root-2/"),
            content=captured.raw,
            headers=captured.headers,
        ),
    }[replay]()
    assert answer.status_code in (400, 401)
    assert host.resumed() == 0
    assert 200 <= captured.post().status_code < 300
    assert host.resumed() == 1


@pytest.mark.parametrize(
    "payload",
    [body("key-other"), body("key-1", root="root-2"), {**body("key-1"), "expected_attempt": 2}],
    ids=["mark of another key", "mark of another run", "expected attempt not the mark's"],
)
def test_signed_body_for_another_attempt_is_refused(host: Host, payload: dict[str, Any]) -> None:
    """A correctly signed request whose body is not the attempt its key names is refused with
    400 key_mismatch, and nothing is resumed."""
    host.paused[("root-1", "run-1")] = 1
    answer = resume(host, "key-1", payload).post()
    assert (answer.status_code, answer.json()["code"]) == (400, "key_mismatch")
    assert host.resumed() == 0


def test_stale_expected_attempt_is_refused(host: Host) -> None:
    """When the run moved past the expected attempt, the host answers 409 attempt_moved_on."""
    host.paused[("root-1", "run-1")] = 2
    answer = resume(host, "key-stale").post()
    assert (answer.status_code, answer.json()["code"]) == (409, "attempt_moved_on")
    assert host.resumed() == 0


def test_lookup_says_seen_or_never_and_retires_the_unseen(host: Host) -> None:
    """The lookup answers 200 for a key it answered and 404 for one it never saw; that key is
    refused afterwards, so the lookup's answer stays true."""
    host.paused[("root-1", "run-1")] = 1
    resume(host, "key-seen").post()
    assert lookup(host, "key-seen").status_code == 200
    assert lookup(host, "key-never").status_code == 404
    late = resume(host, "key-never").post()
    assert (late.status_code, late.json()["code"]) == (409, "key_retired")


def test_lookup_replayed_for_another_key_or_stale_is_refused(host: Host) -> None:
    """A lookup signed for one key and sent to another key's URL, or signed outside five
    minutes, is refused, and the key it named is not retired (its resume still lands)."""
    host.paused[("root-1", "run-1")] = 1
    assert lookup(host, "key-victim", signed_for="key-mine").status_code in (400, 401)
    assert lookup(host, "key-victim", timestamp=int(time.time()) - 600).status_code == 401
    assert 200 <= resume(host, "key-victim").post().status_code < 300
    assert host.resumed() == 1


def test_docs_verification_accepts_what_rewake_signs_and_nothing_else() -> None:
    """The verification snippet of docs/host-contract.md accepts a resume as rewake's executor
    signs it, and refuses it under another id, with a changed body or signed 10 minutes ago."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    namespace: dict[str, Any] = {}
    exec(next(b for b in blocks if "def verify(" in b), namespace)  # the docs' own code
    verify = namespace["verify"]
    executor = WebhookExecutor("http://127.0.0.1:9/{root_id}/{run_id}", "the REWAKE_WEBHOOK_SECRET")
    now = datetime.now(UTC)
    fresh = delivery_at(now)
    _url, raw, headers = executor.request_parts(fresh)
    _url, old_raw, old_headers = executor.request_parts(delivery_at(now - timedelta(minutes=10)))
    executor.close()
    assert verify(headers, raw)
    assert not verify({**headers, "webhook-id": "another-key"}, raw)
    assert not verify(headers, raw.replace(b'"expected_attempt":1', b'"expected_attempt":2'))
    assert not verify(old_headers, old_raw)


def delivery_at(sent_at: datetime) -> Delivery:
    return Delivery(
        mark_id=1, root_id="root-1", run_id="run-1", attempt=1, attempt_key="k-1",
        reset_at=sent_at, resolution_s=0, due_at=sent_at, armed_by="alice", armed_at=sent_at,
        sent_at=sent_at,
    )  # fmt: skip


def test_rewake_never_sends_force() -> None:
    """The contract's body fields are exactly what the webhook executor sends."""
    text = DOC.read_text()
    assert "never** contains `force`" in text
    for field in ("message", "note", "expected_attempt", "mark"):
        assert f"`{field}`" in text
