"""The webhook signature: HMAC-SHA256 over `timestamp.body`, with the timestamp in a header.

A host recomputes the HMAC over the timestamp header, a dot and the raw body bytes, compares in
constant time, and refuses a timestamp more than five minutes from its own clock (a replayed
request is refused even with a valid signature). docs/host-contract.md shows the host's side.
"""

from __future__ import annotations

import hashlib
import hmac

TIMESTAMP_HEADER = "X-Rewake-Timestamp"
SIGNATURE_HEADER = "X-Rewake-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: How far a request's timestamp may be from the host's clock, in seconds.
TOLERANCE_S = 300

_PREFIX = "sha256="


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp` (Unix seconds)."""
    message = str(timestamp).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return _PREFIX + digest


def verify(
    secret: str, timestamp_header: str, signature_header: str, body: bytes, now_unix: float
) -> str | None:
    """None when the request is authentic and fresh; else the code of what is wrong."""
    if not timestamp_header.isdigit():
        return "timestamp_malformed"
    timestamp = int(timestamp_header)
    if abs(now_unix - timestamp) > TOLERANCE_S:
        return "timestamp_out_of_window"
    expected = sign(secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature_header.strip().encode()):
        return "signature_mismatch"
    return None
