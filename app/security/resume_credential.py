"""A credential for one resume: what the command executor hands the program it starts, so that
`rewake run --resume-of` records the resume in the service that armed the mark.

The program must not get the service's own token secrets (an agent could then act as any
token's name), yet it must report the resumed attempt to the service. So the sweeper derives,
per delivery, a bearer credential bound to one session, one run, one mark and its attempt key:

    rwr1.<root_id>.<run_id>.<mark_id>.<attempt_key>.<signature>

each id base64url-encoded, the signature an HMAC-SHA256 over them with a key derived from the
configured API token secrets (every process of one configuration derives the same key; changing
the tokens voids the credentials handed out). The service accepts it only on that session's
report routes (`RESUME_ROUTES`): read the session and its mark, report the run's attempts and
failures, arm the resume again. It acts as `resume-<mark_id>`.

Imports nothing of rewake but the standard library: the executor and the auth both use it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

PREFIX = "rwr1"
#: The key's derivation label: a credential of another purpose can never verify here.
_LABEL = b"rewake resume credential v1"


@dataclass(frozen=True, slots=True)
class ResumeScope:
    """What a verified credential may act on."""

    root_id: str
    run_id: str
    mark_id: int
    attempt_key: str

    @property
    def actor(self) -> str:
        return f"resume-{self.mark_id}"


def credential_key(secrets: Iterable[str]) -> bytes | None:
    """The signing key derived from the API token secrets; None when there are none (then the
    API answers loopback callers without a token, and a resume needs no credential)."""
    ordered = sorted(set(secrets))
    if not ordered:
        return None
    return hmac.new(_LABEL, "\n".join(ordered).encode(), hashlib.sha256).digest()


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(part: str) -> str:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()


def _sign(key: bytes, payload: str) -> str:
    digest = hmac.new(key, payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def mint(key: bytes, *, root_id: str, run_id: str, mark_id: int, attempt_key: str) -> str:
    """The credential for the resume of mark `mark_id` under `attempt_key`."""
    parts = [_b64(root_id), _b64(run_id), str(mark_id), _b64(attempt_key)]
    payload = ".".join([PREFIX, *parts])
    return f"{payload}.{_sign(key, payload)}"


def verify(key: bytes | None, presented: str) -> ResumeScope | None:
    """The scope of a genuine credential; None for anything else (never raises)."""
    if key is None or not presented.startswith(PREFIX + "."):
        return None
    payload, _, signature = presented.rpartition(".")
    if not hmac.compare_digest(_sign(key, payload).encode(), signature.encode()):
        return None
    fields = payload.split(".")
    if len(fields) != 5 or not fields[3].isdigit():
        return None
    try:
        root_id, run_id, attempt_key = (_unb64(fields[i]) for i in (1, 2, 4))
    except ValueError:
        return None
    return ResumeScope(root_id, run_id, int(fields[3]), attempt_key)


#: The routes a resume reports on, as (method, path pattern); `{root}` and `{run}` are the
#: credential's own ids.
RESUME_ROUTES = (
    ("GET", "/api/agent/runs/{root}"),
    ("GET", "/api/agent/runs/{root}/auto-resume"),
    ("PUT", "/api/agent/runs/{root}/auto-resume"),
    ("POST", "/api/agent/runs/{root}/runs/{run}/attempts"),
    ("POST", "/api/agent/runs/{root}/runs/{run}/failures"),
)


def allows(scope: ResumeScope, method: str, path: str) -> bool:
    """Whether the credential of `scope` may send `method` to `path`."""
    for allowed_method, pattern in RESUME_ROUTES:
        wanted = pattern.replace("{root}", scope.root_id).replace("{run}", scope.run_id)
        if method == allowed_method and path == wanted:
            return True
    return False
