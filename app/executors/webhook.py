"""The webhook executor: POST the resume to the host's resume route, signed, once.

Body `{"message", "note", "expected_attempt", "mark"}` (never `force`), the attempt key as
`Idempotency-Key` and as `webhook-id`, signed per Standard Webhooks (`rewake.executors.signing`).
The answer decides the mark's state:

| answer                                   | state      | code                    |
|------------------------------------------|------------|-------------------------|
| 2xx                                      | done       | done (the answer kept)  |
| 409 `key_in_progress`                    | uncertain  | key_in_progress         |
| 409 `attempt_moved_on`                   | superseded | attempt_moved_on        |
| 409 with another code                    | failed     | the host's code         |
| 502, 504, a timeout or a broken exchange | uncertain  | http_502, timeout, ...  |
| connection refused (nothing sent)        | failed     | connection_refused      |
| any other answer                         | failed     | http_<status>           |

The timeout is one deadline for the whole exchange (connecting, sending, waiting for the
status, reading the body), not for each read: a host that trickles its answer cannot hold a
worker past it. An answer whose status arrived in time is judged by its status even when its
body was cut off by the deadline. Only the first ANSWER_READ_LIMIT bytes of a body are read
(the mark keeps the start of it); the connection is closed on the rest.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from rewake.executors.base import DEFAULT_PROMPT, Delivery, Lookup, Outcome, audit_note, clip
from rewake.executors.signing import IDEMPOTENCY_HEADER, SecretError, Signer
from rewake.executors.templates import TemplateError, check_template, fill
from rewake.marks.states import MarkState

#: 409 codes with a meaning of their own (docs/host-contract.md); any other 409 is `failed`.
IN_PROGRESS_CODE = "key_in_progress"
SUPERSEDED_CODES = frozenset({"attempt_moved_on"})
#: Gateway answers: the request may have reached the host.
UNCERTAIN_STATUSES = frozenset({502, 504})
CONNECT_TIMEOUT_S = 5.0
#: The most of an answer's body that is read: far more than the part kept in the mark, and
#: enough for any problem+json's code.
ANSWER_READ_LIMIT = 64 * 1024
#: httpx trace events that hand over a connection's socket (plain, then after TLS).
_CONNECTED = frozenset({"connection.connect_tcp.complete", "connection.start_tls.complete"})


class WebhookConfigError(ValueError):
    """The webhook executor cannot start with this configuration."""


def _quote_segment(value: str) -> str:
    return quote(value, safe="")


class DeadlinePassed(Exception):
    """The exchange's deadline passed before the host's status arrived."""


class _Deadline:
    """Ends one exchange when its time is up, whatever it is waiting for: the connection's
    socket is shut down, which wakes a blocked read or write at once (httpx's own timeouts
    count per read, so a host sending a byte now and then would never trip them). The socket
    is learnt through httpx's `trace` request extension as soon as it is connected."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._finished = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event not in _CONNECTED:
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._finished:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        with self._lock:
            self._finished = True
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: the exchange ended on its own
        sock.shutdown(socket.SHUT_RDWR)


@dataclass(frozen=True, slots=True)
class Answer:
    """The host's answer as far as it was read: its status, the start of its body as text,
    and whether that is the whole body."""

    status: int
    text: str
    complete: bool


def _read_start(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, as sent (nothing is decompressed), and whether that
    was all of it. A body cut off by the host or by the deadline is what had arrived."""
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_raw():
            parts.append(chunk)
            size += len(chunk)
            if size >= limit:
                return b"".join(parts)[:limit], False
    except httpx.HTTPError:
        return b"".join(parts), False
    return b"".join(parts), True


def _text_of(response: httpx.Response, body: bytes) -> str:
    try:
        return body.decode(response.charset_encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


class WebhookExecutor:
    """Sends resumes to `url_template`; asks `lookup_template` about uncertain ones."""

    name = "webhook"

    def __init__(
        self,
        url_template: str | None,
        secret: str | None,
        *,
        lookup_template: str | None = None,
        timeout_s: float = 30.0,
        prompt: str = DEFAULT_PROMPT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url_template:
            raise WebhookConfigError("REWAKE_WEBHOOK_URL is required by the webhook executor")
        if not secret:
            raise WebhookConfigError("REWAKE_WEBHOOK_SECRET is required by the webhook executor")
        try:
            self._signer = Signer(secret)
        except SecretError as error:
            raise WebhookConfigError(str(error)) from error
        for template in filter(None, (url_template, lookup_template)):
            try:
                check_template(template)
            except TemplateError as error:
                raise WebhookConfigError(str(error)) from error
            if urlsplit(template).scheme not in ("http", "https"):
                raise WebhookConfigError(f"{template!r} is not an http(s) URL")
        self.url_template = url_template
        self.lookup_template = lookup_template
        self.prompt = prompt
        self.timeout_s = timeout_s
        # Each read and write gives up after the whole deadline at most; the deadline itself
        # (`_Deadline`) bounds the exchange as a whole.
        timeout = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))
        # A fresh connection per resume: a pooled connection the host closed could fail after
        # the request left, which would turn a clean "refused" into "uncertain". Answers are
        # asked for uncompressed, so the bytes read are the bytes kept.
        self._client = httpx.Client(
            timeout=timeout,
            limits=httpx.Limits(max_keepalive_connections=0),
            transport=transport,
            follow_redirects=False,
            headers={"Accept-Encoding": "identity"},
        )

    def body(self, delivery: Delivery) -> dict[str, Any]:
        """What the host receives; `force` is never part of it."""
        return {
            "message": self.prompt,
            "note": audit_note(delivery),
            "expected_attempt": delivery.attempt,
            "mark": delivery.mark_json(),
        }

    def request_parts(self, delivery: Delivery) -> tuple[str, bytes, dict[str, str]]:
        """URL, body bytes and headers, signed at the delivery's `sent_at`."""
        url = fill(self.url_template, delivery, _quote_segment)
        body = json.dumps(self.body(delivery), separators=(",", ":"), sort_keys=True).encode()
        timestamp = int(delivery.sent_at.timestamp())
        headers = {
            "Content-Type": "application/json",
            IDEMPOTENCY_HEADER: delivery.attempt_key,
            **self._signer.headers(delivery.attempt_key, timestamp, body),
        }
        return url, body, headers

    def deliver(self, delivery: Delivery) -> Outcome:
        try:
            url, body, headers = self.request_parts(delivery)
        except TemplateError as error:
            return Outcome(MarkState.FAILED, "bad_placeholder", str(error))
        try:
            answer = self._exchange("POST", url, headers, body)
        except DeadlinePassed:
            said = f"sent, no answer within {self.timeout_s:g} s"
            return Outcome(MarkState.UNCERTAIN, "timeout", said)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            return Outcome(MarkState.FAILED, "connection_refused", f"nothing was sent: {error}")
        except httpx.TimeoutException as error:
            return Outcome(MarkState.UNCERTAIN, "timeout", f"sent, no answer in time: {error}")
        except httpx.HTTPError as error:
            said = f"{type(error).__name__}: {error}"
            return Outcome(MarkState.UNCERTAIN, "transport_error", said)
        except httpx.InvalidURL as error:
            return Outcome(MarkState.FAILED, "bad_url", f"nothing was sent: {error}")
        return outcome_of(answer.status, answer.text, complete=answer.complete)

    def _exchange(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None = None
    ) -> Answer:
        """One request and its answer within `timeout_s` in all, reading at most
        ANSWER_READ_LIMIT bytes of the body. DeadlinePassed when the time ran out before the
        status arrived; httpx's errors for the rest."""
        with _Deadline(self.timeout_s) as deadline:
            try:
                with self._client.stream(
                    method, url, content=content, headers=headers,
                    extensions={"trace": deadline.trace},
                ) as response:  # fmt: skip
                    body, complete = _read_start(response, ANSWER_READ_LIMIT)
                    # A body that ends with the connection ends the same way when the deadline
                    # shuts the socket: then it is not the whole answer.
                    complete = complete and not deadline.expired
                    return Answer(response.status_code, _text_of(response, body), complete)
            except httpx.HTTPError as error:
                if deadline.expired:
                    raise DeadlinePassed(f"no answer within {self.timeout_s:g} s") from error
                raise

    def lookup(self, delivery: Delivery, now: datetime) -> Lookup | None:
        if self.lookup_template is None:
            return None
        try:
            url = fill(self.lookup_template, delivery, _quote_segment)
        except TemplateError:
            return None
        # A lookup has no body: it is signed over an empty one, its webhook-id the key asked
        # about (the host checks that the id is the key in its path).
        headers = {
            IDEMPOTENCY_HEADER: delivery.attempt_key,
            **self._signer.headers(delivery.attempt_key, int(now.timestamp())),
        }
        try:
            answer = self._exchange("GET", url, headers)
        except (httpx.HTTPError, httpx.InvalidURL, DeadlinePassed):
            return None
        if answer.status == 404:
            return Lookup(received=False, detail=clip(answer.text))
        if 200 <= answer.status < 300:
            return Lookup(received=True, detail=clip(answer.text))
        return None

    def close(self) -> None:
        self._client.close()


def problem_code(text: str) -> str | None:
    """The `code` of a problem+json answer, if it has one."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if isinstance(parsed, Mapping):
        code = parsed.get("code")
        if isinstance(code, str) and code:
            return code[:60]
    return None


def outcome_of(status: int, text: str, *, complete: bool = True) -> Outcome:
    """The outcome of an answer the host gave (the table in this module's docstring); the
    detail keeps the start of `text`, marked when it is not the whole answer."""
    detail = clip(text)
    if not complete and not detail.endswith(" [cut]"):
        detail += " [cut]"
    if 200 <= status < 300:
        return Outcome(MarkState.DONE, "done", detail)
    if status == 409:
        code = problem_code(text)
        if code == IN_PROGRESS_CODE:
            return Outcome(MarkState.UNCERTAIN, IN_PROGRESS_CODE, detail)
        if code in SUPERSEDED_CODES:
            return Outcome(MarkState.SUPERSEDED, code, detail)
        return Outcome(MarkState.FAILED, code or "http_409", detail)
    if status in UNCERTAIN_STATUSES:
        return Outcome(MarkState.UNCERTAIN, f"http_{status}", detail)
    return Outcome(MarkState.FAILED, f"http_{status}", detail)
