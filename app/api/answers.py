"""The JSON answers of the API, as pydantic models: what the OpenAPI document says each route
returns, and what it does return. The domain builds each answer as JSON
(`rewake.session_service.reads`, `rewake.marks.service`, `rewake.reports.failures`,
`rewake.parsers`); the routes
(rewake.api.routes, and /api/parse and /readyz in rewake.api.ops) validate it into its model
and FastAPI writes the model, so an answer that does not fit (a field missing, of the wrong
type, or not declared here) fails as a 500 instead of reaching a host. A field added there
must be added here.

Every field is listed and required, nullable where the answer may hold null. The document
still lets answers gain fields (hosts ignore what they do not know): it forbids none, though
the models refuse any the running version does not declare.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rewake.marks.states import MarkState
from rewake.parsers.verdict import Form, Kind, Provider
from rewake.reports.rules import FailureKind

SessionState = Literal["running", "paused", "finished", "cancelled"]
RunStatus = Literal["running", "paused", "completed"]


def _open_to_new_fields(schema: dict[str, Any]) -> None:
    """The document promises no more than the fields listed: a later version may add some."""
    schema.pop("additionalProperties", None)


class Answer(BaseModel):
    """An answer the API writes (never read from a request)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_open_to_new_fields)


# The Verdict: rewake.parsers.verdict.Verdict.to_json


class Refusal(Answer):
    """Why a provider_quota verdict carries no reset_at (docs/design.md#refusal-codes)."""

    code: str
    detail: str


class Evidence(Answer):
    """The substring of the parsed text the verdict rests on: text[start:end]."""

    text: str
    start: int
    end: int


class Verdict(Answer):
    """What the CLI output says: why the run stopped and when it may resume."""

    provider: Provider | None
    kind: Kind
    reset_at: datetime | None
    resolution_s: int | None
    form: Form | None
    refusal: Refusal | None
    scope: str | None
    retry_after_s: float | None
    native_auto_continue: bool
    login_command: str | None
    evidence: Evidence | None


# A failure: rewake.reports.failures, rewake.session_service.reads


class Banner(Answer):
    """What a dashboard shows for a failed attempt: labels in words, times in the display zone."""

    kind: str = Field(description="the failure kind")
    business: str
    detail: str
    technical: str


class Offer(Answer):
    """Whether auto-resume can be armed now; when not, the 409 code a PUT would get and why."""

    available: bool
    code: str | None
    detail: str | None


class FieldWarning(Answer):
    """An optional field of the report that was normalised or dropped (docs/api.md)."""

    field: str
    code: str = Field(
        description="normalized, not_allowed, too_long, wrong_type, unstorable_text, too_deep "
        "or non_finite"
    )
    detail: str


class FailureAnswer(Answer):
    """The answer to a failure report (201 when new, 200 with the stored answer when the same
    report comes again)."""

    root_id: str
    run_id: str
    attempt: int
    failure_kind: FailureKind
    halted: bool
    truncated: bool
    message_chars: int
    received_at: datetime
    current: bool = Field(description="whether this is now the session's current failure")
    verdict: Verdict
    banner: Banner
    auto_resume: Offer
    resumed_into_live_limit: bool
    held_marks: list[int] = Field(description="ids of the account's marks held to the new reset")
    warnings: list[FieldWarning]


class Failure(Answer):
    """A stored failure, as a session shows it."""

    run_id: str
    attempt: int
    failure_kind: FailureKind
    failure_kind_stated: bool
    halted: bool
    observed_at: datetime
    received_at: datetime
    zone: str | None
    provider: Provider | None
    session_id: str | None
    account_key: str | None
    capture: Literal["live", "scrollback"] | None
    truncated: bool = Field(description="the report's message was cut to its last 1 MiB")
    message_chars: int = Field(description="characters of the message as reported")
    message: str = Field(
        description=(
            "a part of the stored message, at most 8,192 characters: its end, or the part "
            "around the verdict's evidence when that lies before the end; the whole is at "
            "message_url"
        )
    )
    message_from: int = Field(description="where `message` starts in the stored message")
    message_stored_chars: int = Field(description="characters of the stored message")
    message_url: str = Field(description="the whole stored message, as text/plain")
    cli_text: str | None = Field(
        description=(
            "what the CLI showed about how the attempt ended (its error events' texts), as "
            "reported: its last 8,192 characters (the whole at cli_text_url); shown where the "
            "message says nothing, never parsed"
        )
    )
    cli_text_from: int | None = Field(description="where `cli_text` starts in the stored one")
    cli_text_stored_chars: int | None = Field(description="characters of the stored cli_text")
    cli_text_url: str | None = Field(description="the whole stored cli_text, as text/plain")
    conversation_saved: bool | None = Field(
        description="false when the report said the CLI saved no conversation to resume; null "
        "when it did not say"
    )
    verdict: Verdict
    banner: Banner
    warnings: list[FieldWarning]
    reported_by: str


# Marks: rewake.marks.service.mark_json and _view


class Mark(Answer):
    """A session's auto-resume mark: the live one, else the latest; every field null (and
    `enabled` false) when the session never had one."""

    id: int | None
    enabled: bool
    state: MarkState | None
    run_id: str | None
    attempt: int | None
    reset_at: datetime | None
    resolution_s: int | None
    due_at: datetime | None
    armed_by: str | None
    armed_at: datetime | None
    claimed_by: str | None
    attempt_key: str | None
    lease_until: datetime | None
    sent_at: datetime | None
    outcome: str | None
    outcome_detail: str | None
    clear_reason: str | None
    account_key: str | None
    despite_native: bool | None
    updated_at: datetime | None
    root_id: str
    offer: Offer
    warnings: list[str] = Field(description="what may keep a live mark from doing its work")


# Sessions: rewake.session_service.reads


class Point(Answer):
    """A run and attempt: the session's current failure point."""

    run_id: str
    attempt: int


class Run(Answer):
    """One run of a session."""

    run_id: str
    status: RunStatus
    current_attempt: int
    created_at: datetime
    updated_at: datetime


class Attempt(Answer):
    """One attempt of a run, with its failure when it reported one."""

    attempt: int
    status: Literal["started", "completed", "failed"]
    started_at: datetime | None
    completed_at: datetime | None
    failed_at: datetime | None
    failure: Failure | None


class RunWithAttempts(Run):
    attempts: list[Attempt]


class TimelineEntry(Answer):
    """One change of the session, appended in the transaction that made it."""

    id: int
    at: datetime
    event: str
    actor: str | None
    run_id: str | None
    attempt: int | None
    mark_id: int | None
    detail: dict[str, Any] | None


class SessionFields(Answer):
    root_id: str
    state: SessionState
    created_at: datetime
    updated_at: datetime
    cancelled_at: datetime | None
    cancelled_by: str | None
    current: Point | None


class Session(SessionFields):
    """A session: a page of its attempts (newest first: `attempts_limit` from
    `attempts_offset`) under their runs, with their failures, the mark, and the timeline."""

    runs: list[RunWithAttempts] = Field(
        description="the runs of the attempts in this page, oldest first, each with those"
    )
    attempts_next_offset: int | None = Field(
        description="the attempts_offset of the next (older) page; null on the last"
    )
    mark: Mark
    timeline: list[TimelineEntry]


class CurrentFailure(Answer):
    """The session's current failure, in short."""

    failure_kind: FailureKind
    provider: Provider | None
    reset_at: datetime | None
    account_key: str | None = None
    banner: Banner


class SessionSummary(SessionFields):
    """A session in the list."""

    failure: CurrentFailure | None


class SessionList(Answer):
    """A page of sessions, most recently changed first."""

    sessions: list[SessionSummary]
    next_offset: int | None = Field(description="the offset of the next page; null on the last")


class AttemptAnswer(Answer):
    """The run after an attempt started or completed."""

    root_id: str
    run: Run
    session_state: SessionState


class ResumeAnswer(Answer):
    """The run after a manual resume, and the session's mark."""

    root_id: str
    run: Run
    mark: Mark


class Tombstone(Answer):
    """What a deleted session was: its state, times, counts, each failure's kind, its marks."""

    root_id: str
    deleted_at: datetime
    deleted_by: str
    summary: dict[str, Any]


# Operations


class Health(Answer):
    status: Literal["ok"]


class Ready(Answer):
    """Every check passed: the database answers, the schema is current, a sweeper was seen."""

    status: Literal["ready"]
    checks: dict[str, dict[str, Any]] = Field(
        description=(
            "database, schema (current and head revisions), storage (writes fit: not "
            "storage_full), sweeper (seen_at)"
        )
    )
