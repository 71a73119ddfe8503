"""Domain errors: each has a stable `code` that the API returns in its problem+json body."""

from __future__ import annotations

from typing import Any

#: Every code the service answers with, its HTTP status and what it means (docs/api.md).
CODES: dict[str, tuple[int, str]] = {
    "invalid_request": (422, "the body or a parameter does not match the schema"),
    "observed_at_naive": (422, "observed_at has no UTC offset"),
    "observed_in_future": (422, "observed_at is more than 5 minutes after the report arrived"),
    "unauthorized": (401, "no bearer token, or one that matches no configured secret"),
    "loopback_only": (403, "no token is configured, so only this machine may call the API"),
    "not_found": (404, "no such route"),
    "session_not_found": (404, "no session with this root_id"),
    "run_not_found": (404, "no run with this run_id in the session"),
    "failure_not_found": (404, "no failure was reported for this attempt of the session"),
    "mark_not_found": (404, "the session has no auto-resume mark"),
    "tombstone_not_found": (404, "no deleted session with this root_id within the retention"),
    "method_not_allowed": (405, "the route exists but not with this method"),
    "attempt_already_reported": (409, "this attempt was reported before with a different body"),
    "not_paused_on_provider_limit": (
        409,
        "the session's current attempt is not paused on a provider limit",
    ),
    "reset_not_stated": (409, "the limit message states no reset time"),
    "native_auto_continue": (409, "the CLI continues by itself; send despite_native to arm anyway"),
    "conversation_not_saved": (
        409,
        "the CLI saved no conversation to resume; send fresh_if_missing to arm a fresh start",
    ),
    "attempt_already_resumed": (409, "this attempt had a resume already; it is never repeated"),
    "session_cancelled": (409, "the session was cancelled; cancel is final"),
    "session_active": (409, "only a finished or cancelled session can be deleted"),
    "recovery_in_progress": (409, "a resume is being sent right now"),
    "mark_not_uncertain": (409, "only an uncertain mark can be resolved"),
    "mark_ambiguous": (409, "several marks are uncertain; name run_id and attempt"),
    "session_deleted": (410, "the session was deleted; its tombstone is kept"),
    "body_too_large": (413, "the body is over 16 MiB"),
    "not_ready": (503, "the database, the schema or the sweeper is not ready"),
    "database_unavailable": (503, "the database did not answer in time"),
    "storage_full": (503, "the database's storage is full: nothing was written"),
    "internal_error": (500, "an unexpected error, logged for the operators"),
}


class DomainError(Exception):
    """A rule refused the request; `code` is stable, `detail` says why in words."""

    def __init__(self, code: str, detail: str, **extra: Any) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.extra = extra

    @property
    def status(self) -> int:
        return CODES[self.code][0]
