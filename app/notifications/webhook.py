"""The optional notify webhook (REWAKE_NOTIFY_URL): tells an operator when a mark fails, turns
uncertain or expires. Best effort, off the sweep's path: a notification that cannot be sent is
logged and dropped; it never changes a mark.

Each notification has a `webhook-id` of its own, `notify-` and 32 random hex digits (never an
attempt key, so a host that dedupes both by id cannot confuse them), and its `webhook-timestamp`;
with REWAKE_WEBHOOK_SECRET set it is signed like a resume (`rewake.executors.signing`)."""

from __future__ import annotations

import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx

from rewake.db.models import MarkRow
from rewake.executors.signing import ID_HEADER, TIMESTAMP_HEADER, Signer
from rewake.logs import log_event, redact_url, redact_urls_in
from rewake.marks.service import mark_json

logger = logging.getLogger("rewake.sweeper.notify")

#: The mark states worth a person's attention.
NOTIFY_STATES = frozenset({"failed", "uncertain", "expired"})


class Notifier:
    """POSTs `{"event": "mark_<state>", "mark": {...}}`, signed like a resume when a secret is
    configured. Raises SecretError (a ValueError) for a secret that cannot be a key."""

    def __init__(self, url: str, secret: str | None, *, timeout_s: float = 10.0) -> None:
        self.url = url
        self._signer = Signer(secret) if secret else None
        self._client = httpx.Client(timeout=timeout_s)
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rewake-notify")

    def mark_changed(self, row: MarkRow, now: datetime) -> None:
        if row.state in NOTIFY_STATES:
            body = json.dumps({"event": f"mark_{row.state}", "mark": mark_json(row)}).encode()
            self._pool.submit(self._post, body, int(now.timestamp()))

    def _post(self, body: bytes, timestamp: int) -> None:
        message_id = f"notify-{uuid.uuid4().hex}"
        headers = {"Content-Type": "application/json"}
        if self._signer is not None:
            headers.update(self._signer.headers(message_id, timestamp, body))
        else:
            headers.update({ID_HEADER: message_id, TIMESTAMP_HEADER: str(timestamp)})
        # The URL may carry credentials (user info, a token in the query): logged redacted.
        where = redact_url(self.url)
        try:
            response = self._client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as error:
            reason = redact_urls_in(f"{type(error).__name__}: {error}", self.url)
            log_event(logger, "notify_failed", logging.WARNING, url=where, error=reason)
            return
        if not response.is_success:
            log_event(
                logger, "notify_failed", logging.WARNING, url=where, status=response.status_code
            )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()
