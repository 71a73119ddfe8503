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
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from rewake.executors.base import DEFAULT_PROMPT, Delivery, Lookup, Outcome, audit_note, clip
from rewake.executors.signing import IDEMPOTENCY_HEADER, SecretError, Signer
from rewake.executors.templates import TemplateError, check_template, fill

#: 409 codes with a meaning of their own (docs/host-contract.md); any other 409 is `failed`.
IN_PROGRESS_CODE = "key_in_progress"
SUPERSEDED_CODES = frozenset({"attempt_moved_on"})
#: Gateway answers: the request may have reached the host.
UNCERTAIN_STATUSES = frozenset({502, 504})
CONNECT_TIMEOUT_S = 5.0


class WebhookConfigError(ValueError):
    """The webhook executor cannot start with this configuration."""


def _quote_segment(value: str) -> str:
    return quote(value, safe="")


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
        timeout = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))
        # A fresh connection per resume: a pooled connection the host closed could fail after
        # the request left, which would turn a clean "refused" into "uncertain".
        self._client = httpx.Client(
            timeout=timeout,
            limits=httpx.Limits(max_keepalive_connections=0),
            transport=transport,
            follow_redirects=False,
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
            return Outcome("failed", "bad_placeholder", str(error))
        try:
            response = self._client.post(url, content=body, headers=headers)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            return Outcome("failed", "connection_refused", f"nothing was sent: {error}")
        except httpx.TimeoutException as error:
            return Outcome("uncertain", "timeout", f"sent, no answer in time: {error}")
        except httpx.HTTPError as error:
            return Outcome("uncertain", "transport_error", f"{type(error).__name__}: {error}")
        except httpx.InvalidURL as error:
            return Outcome("failed", "bad_url", f"nothing was sent: {error}")
        return outcome_of(response.status_code, response.text)

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
            response = self._client.get(url, headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL):
            return None
        if response.status_code == 404:
            return Lookup(received=False, detail=clip(response.text))
        if 200 <= response.status_code < 300:
            return Lookup(received=True, detail=clip(response.text))
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


def outcome_of(status: int, text: str) -> Outcome:
    """The outcome of an answer the host gave (the table in this module's docstring)."""
    detail = clip(text)
    if 200 <= status < 300:
        return Outcome("done", "done", detail)
    if status == 409:
        code = problem_code(text)
        if code == IN_PROGRESS_CODE:
            return Outcome("uncertain", IN_PROGRESS_CODE, detail)
        if code in SUPERSEDED_CODES:
            return Outcome("superseded", code, detail)
        return Outcome("failed", code or "http_409", detail)
    if status in UNCERTAIN_STATUSES:
        return Outcome("uncertain", f"http_{status}", detail)
    return Outcome("failed", f"http_{status}", detail)
