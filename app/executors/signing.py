"""The webhook signature, per the Standard Webhooks specification (www.standardwebhooks.com).

Every request rewake sends to a host is signed with three headers:

- `webhook-id`: the message's id. For a resume and for its lookup it is the attempt key, the
  value of the `Idempotency-Key` header; for a notification it is `notify-` and 32 random hex
  digits, new for each notification.
- `webhook-timestamp`: when it was signed, in Unix seconds.
- `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, the body
  as sent (empty for a lookup, which has none).

The id is signed, so a captured request cannot be replayed under another key; the timestamp is
signed, so a host that refuses a timestamp more than five minutes from its own clock refuses a
late replay. A host verifies with the `standardwebhooks` library of its own language;
docs/host-contract.md shows how.

The key comes from REWAKE_WEBHOOK_SECRET: a secret written `whsec_<base64>` (the form the
libraries generate) is used as they read it, the key being the decoded bytes; any other string is
itself the key, as UTF-8 bytes (the key rewake has always used), and the host hands its library
`whsec_` + base64(secret), or the raw bytes where the library takes them.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from standardwebhooks import Webhook

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: How far a request's timestamp may be from the host's clock, in seconds (the libraries' own).
TOLERANCE_S = 300
#: The prefix of a secret in the Standard Webhooks form: `whsec_` and the key in base64.
SECRET_PREFIX = "whsec_"  # noqa: S105 - a prefix, not a secret


class SecretError(ValueError):
    """REWAKE_WEBHOOK_SECRET cannot be a signing key; the message never contains it."""


def secret_key(secret: str) -> bytes:
    """The HMAC key of a REWAKE_WEBHOOK_SECRET: the base64 after `whsec_`, else the string's
    UTF-8 bytes. A `whsec_` secret whose rest is not standard base64 is refused rather than
    read as the libraries would (they skip the characters they do not know, silently)."""
    if secret.startswith(SECRET_PREFIX):
        encoded = secret[len(SECRET_PREFIX) :]
        try:
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError) as error:
            raise SecretError(
                "REWAKE_WEBHOOK_SECRET starts with whsec_ but the rest is not base64"
            ) from error
    else:
        key = secret.encode()
    if not key:
        raise SecretError("REWAKE_WEBHOOK_SECRET is empty")
    return key


class Signer:
    """Signs requests with one secret, as the `standardwebhooks` library does."""

    def __init__(self, secret: str) -> None:
        self._webhook = Webhook(secret_key(secret))

    def headers(self, message_id: str, timestamp: int, body: bytes = b"") -> dict[str, str]:
        """The three signature headers for `body` (UTF-8) sent as `message_id` at `timestamp`
        (Unix seconds)."""
        signed_at = datetime.fromtimestamp(timestamp, UTC)
        return {
            ID_HEADER: message_id,
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: self._webhook.sign(message_id, signed_at, body.decode()),
        }
