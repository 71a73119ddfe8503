"""A minimal host that honours docs/host-contract.md, used by the sweeper's tests and benches.

It verifies every signature with the `standardwebhooks` library (Standard Webhooks: the
`webhook-id`, `webhook-timestamp` and `webhook-signature` headers, five minutes of tolerance),
binds the key to the attempt (`webhook-id`, `Idempotency-Key` and the body's `mark.attempt_key`
are one key; the path's run and `expected_attempt` are the body's mark), dedupes by that key (the
same key gets the stored answer; a key still being handled gets 409 `key_in_progress`), refuses
an `expected_attempt` that is no longer the run's paused attempt (409 `attempt_moved_on`), offers
the lookup route (`GET /resumes/{key}`, signed over an empty body with the key as `webhook-id`;
404 for a key never seen, which also retires it), takes notifications at `POST /notify`, and
records every call with the instant it arrived.

Run it alone: `python -m tests.hosts.example_host --secret S --port 8700` (`--record FILE`
appends one JSON line per request; `--refuse ROOT=STATUS:CODE` answers that session so).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import unquote

from standardwebhooks import Webhook, WebhookVerificationError

RESUME_PATH = re.compile(r"^/api/agent/runs/([^/]+)/runs/([^/]+)/resume$")
LOOKUP_PATH = re.compile(r"^/resumes/([^/]+)$")
NOTIFY_PATH = "/notify"
TOLERANCE_S = 300


@dataclass(frozen=True)
class Call:
    """One resume request as it arrived."""

    arrived: float  # Unix time, read when the request line was parsed
    root_id: str
    run_id: str
    key: str
    expected_attempt: int | None
    body: dict[str, Any]
    signature_problem: str | None
    status: int

    @property
    def mark_id(self) -> int | None:
        mark = self.body.get("mark") or {}
        value = mark.get("id")
        return value if isinstance(value, int) else None

    @property
    def account_key(self) -> str | None:
        return (self.body.get("mark") or {}).get("account_key")


@dataclass
class HostState:
    """Everything the host remembers; guarded by `lock`."""

    secret: str
    #: (root_id, run_id) -> the attempt paused there; runs not listed accept any attempt.
    paused: dict[tuple[str, str], int] = field(default_factory=dict)
    answers: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    in_progress: set[str] = field(default_factory=set)
    retired: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)
    #: Keys whose resume was performed (a repeated key is answered, not resumed again).
    resumed: list[str] = field(default_factory=list)
    #: root_id -> (status, problem code) to answer instead of resuming.
    refuse: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: Seconds to hold every resume before answering (a slow host).
    delay_s: float = 0.0
    #: Seconds to hold every lookup before answering (a slow lookup route).
    lookup_delay_s: float = 0.0
    #: (Unix time it arrived, key) of every signed lookup.
    lookups: list[tuple[float, str]] = field(default_factory=list)
    in_flight: Counter[str] = field(default_factory=Counter)
    max_in_flight: Counter[str] = field(default_factory=Counter)
    #: Every request in arrival order: kind (resume, lookup, notify), id, status, problem.
    journal: list[dict[str, Any]] = field(default_factory=list)
    #: Where to append the journal as JSON lines (a host in a process of its own).
    record: Path | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, **entry: Any) -> None:
        with self.lock:
            self.journal.append(entry)
            if self.record is not None:
                with self.record.open("a") as out:
                    out.write(json.dumps(entry) + "\n")


def webhook_for(secret: str) -> Webhook:
    """The library's verifier for REWAKE_WEBHOOK_SECRET: a `whsec_` secret as it is, any other
    string as the raw key bytes."""
    return Webhook(secret if secret.startswith("whsec_") else secret.encode())


def verify_signature(webhook: Webhook, headers: Any, body: bytes) -> str | None:
    """The host's check, written from the contract alone: None when authentic and fresh."""
    stamp = headers.get("webhook-timestamp", "")
    if not stamp.isdigit():
        return "timestamp_malformed"
    if abs(time.time() - int(stamp)) > TOLERANCE_S:  # the library checks the same window too
        return "timestamp_out_of_window"
    try:
        webhook.verify(body, dict(headers.items()), json_parse=False)
    except (WebhookVerificationError, ValueError):  # ValueError: a malformed signature header
        return "signature_mismatch"
    return None


def mark_matches(body: dict[str, Any], key: str, root_id: str, run_id: str) -> bool:
    """The key is bound to one attempt: the signed body's mark names this key, this run and
    the attempt it expects."""
    mark = body.get("mark")
    if not isinstance(mark, dict):
        return False
    return (
        mark.get("attempt_key") == key
        and (mark.get("root_id"), mark.get("run_id")) == (root_id, run_id)
        and mark.get("attempt") == body.get("expected_attempt")
    )


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def _problem(self, status: int, code: str) -> tuple[int, bytes]:
        return status, json.dumps({"status": status, "code": code}).encode()

    def do_GET(self) -> None:
        match = LOOKUP_PATH.match(self.path)
        if match is None:
            self._send(*self._problem(404, "not_found"))
            return
        key = unquote(match.group(1))
        state = self.server.state
        # No body: signed over an empty one, with the key asked about as webhook-id.
        problem = verify_signature(webhook_for(state.secret), self.headers, b"")
        ids = {key, self.headers.get("webhook-id"), self.headers.get("Idempotency-Key")}
        if problem is None and len(ids) != 1:
            problem = "key_mismatch"  # a signed lookup replayed for another key
        status, answer = self._look_up(key, problem)
        state.note(kind="lookup", id=key, status=status, problem=problem)
        self._send(status, answer)

    def _look_up(self, key: str, problem: str | None) -> tuple[int, bytes]:
        state = self.server.state
        if problem is not None:
            return self._problem(400 if problem == "key_mismatch" else 401, problem)
        with state.lock:
            state.lookups.append((time.time(), key))
        if state.lookup_delay_s:
            time.sleep(state.lookup_delay_s)
        with state.lock:
            if key in state.answers:
                status, _ = state.answers[key]
                return 200, json.dumps({"key": key, "status": status}).encode()
            if key in state.in_progress:
                return self._problem(409, "key_in_progress")
            # Never seen: say so, and refuse the key from now on, so the answer stays true.
            state.retired.add(key)
        return self._problem(404, "key_unknown")

    def do_POST(self) -> None:
        arrived = time.time()
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == NOTIFY_PATH:
            self._notice(raw)
            return
        match = RESUME_PATH.match(self.path)
        if match is None:
            self._send(*self._problem(404, "not_found"))
            return
        root_id, run_id = (unquote(segment) for segment in match.groups())
        key = self.headers.get("Idempotency-Key", "")
        problem = verify_signature(webhook_for(state.secret), self.headers, raw)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        if problem is None and (
            key != self.headers.get("webhook-id") or not mark_matches(body, key, root_id, run_id)
        ):
            problem = "key_mismatch"  # signed, but for another key, run or attempt
        expected = body.get("expected_attempt")
        status, answer = self._handle(root_id, run_id, key, body, problem)
        with state.lock:
            state.calls.append(
                Call(
                    arrived=arrived, root_id=root_id, run_id=run_id, key=key,
                    expected_attempt=expected if isinstance(expected, int) else None,
                    body=body, signature_problem=problem, status=status,
                )
            )  # fmt: skip
        state.note(kind="resume", id=key, status=status, problem=problem)
        self._send(status, answer)

    def _notice(self, raw: bytes) -> None:
        """A notification: verified like a resume, recorded, answered 204."""
        state = self.server.state
        problem = verify_signature(webhook_for(state.secret), self.headers, raw)
        try:
            event = json.loads(raw).get("event")
        except (ValueError, AttributeError):
            event = None
        status = 401 if problem else 204
        state.note(
            kind="notify", id=self.headers.get("webhook-id"), status=status, problem=problem,
            event=event,
        )  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def _handle(
        self, root_id: str, run_id: str, key: str, body: dict[str, Any], problem: str | None
    ) -> tuple[int, bytes]:
        state = self.server.state
        if problem == "key_mismatch":
            return self._problem(400, problem)
        if problem is not None:
            return self._problem(401, problem)
        if not key or "force" in body:
            return self._problem(400, "bad_request")
        account = str((body.get("mark") or {}).get("account_key"))
        with state.lock:
            if key in state.answers:
                return state.answers[key]
            if key in state.in_progress or key in state.retired:
                return self._problem(
                    409, "key_in_progress" if key in state.in_progress else "key_retired"
                )
            if root_id in state.refuse:
                status, code = state.refuse[root_id]
                answer = self._problem(status, code)
                state.answers[key] = answer
                return answer
            paused = state.paused.get((root_id, run_id))
            if paused is not None and paused != body.get("expected_attempt"):
                answer = self._problem(409, "attempt_moved_on")
                state.answers[key] = answer
                return answer
            state.in_progress.add(key)
            state.in_flight[account] += 1
            state.max_in_flight[account] = max(
                state.max_in_flight[account], state.in_flight[account]
            )
        if state.delay_s:
            time.sleep(state.delay_s)
        with state.lock:
            state.in_flight[account] -= 1
            state.in_progress.discard(key)
            state.resumed.append(key)
            if paused is not None:
                state.paused[(root_id, run_id)] = paused + 1  # the resumed attempt runs now
            answer = (
                202,
                json.dumps({"resumed": True, "attempt": body.get("expected_attempt")}).encode(),
            )
            state.answers[key] = answer
        return answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-request (the kill drill does this on purpose) is not an error.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    def __init__(self, state: HostState, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.state = state


class ServedHost:
    """A host served on loopback in a background thread: its address, and the URL templates
    rewake is configured with to reach it."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def resume_template(self) -> str:
        return self.url + "/api/agent/runs/{root_id}/runs/{run_id}/resume"

    @property
    def lookup_template(self) -> str:
        return self.url + "/resumes/{attempt_key}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class ExampleHost(ServedHost):
    """The host served on loopback in a background thread."""

    def __init__(self, secret: str, port: int = 0) -> None:
        self.state = HostState(secret=secret)
        super().__init__(_Server(self.state, port))

    @property
    def notify_url(self) -> str:
        return self.url + NOTIFY_PATH

    def calls(self) -> list[Call]:
        with self.state.lock:
            return list(self.state.calls)

    def journal(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Every request (or those of one kind) as recorded: kind, id, status, problem."""
        with self.state.lock:
            return [e for e in self.state.journal if kind is None or e["kind"] == kind]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--port", type=int, default=8700)
    parser.add_argument("--record", type=Path, help="append one JSON line per request here")
    parser.add_argument(
        "--refuse", action="append", default=[], metavar="ROOT=STATUS:CODE",
        help="answer every resume of session ROOT with STATUS and problem CODE",
    )  # fmt: skip
    args = parser.parse_args()
    with ExampleHost(args.secret, args.port) as host:
        host.state.record = args.record
        for rule in args.refuse:
            root_id, _, answer = rule.partition("=")
            status, _, code = answer.partition(":")
            host.state.refuse[root_id] = (int(status), code)
        print(f"example host on {host.url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
