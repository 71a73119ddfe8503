"""The tables. Alembic (alembic/versions) is the only way they are created or changed.

Every instant goes through `UTCDateTime`; keys are the host's ids (root_id, run_id, attempt).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlmodel import Field, SQLModel

from rewake.db.columns import UTCDateTime

#: Mark states in which a resume may still happen; at most one such mark per session. The
#: tables sit below the mark lifecycle (rewake.marks.states), so the names are written here;
#: tests/unit/test_mark_states.py holds them equal to `rewake.marks.states.LIVE_STATES`.
LIVE_STATES = ("armed", "claimed", "sending")
_LIVE_SQL = text(f"state IN ({', '.join(repr(state) for state in LIVE_STATES)})")

ID_LENGTH = 200


def _id(primary_key: bool = False) -> Any:
    return Field(sa_type=String(ID_LENGTH), primary_key=primary_key)


def _instant(nullable: bool = False) -> Any:
    if nullable:
        return Field(default=None, sa_type=UTCDateTime, nullable=True)
    return Field(sa_type=UTCDateTime, nullable=False)


def _short(nullable: bool = True, length: int = 200) -> Any:
    if nullable:
        return Field(default=None, sa_type=String(length), nullable=True)
    return Field(sa_type=String(length), nullable=False)


class SessionRow(SQLModel, table=True):
    """A tree of runs under one root id: what the API calls a session."""

    __tablename__ = "sessions"
    __table_args__ = (Index("ix_sessions_updated_at", "updated_at"),)

    root_id: str = _id(primary_key=True)
    state: str = _short(nullable=False, length=16)
    current_run_id: str | None = _short()
    current_attempt: int | None = Field(default=None, sa_type=Integer, nullable=True)
    created_at: datetime = _instant()
    updated_at: datetime = _instant()
    cancelled_at: datetime | None = _instant(nullable=True)
    cancelled_by: str | None = _short()
    #: When the session's host last sent anything for it (a failure, an attempt, a manual
    #: resume); None before revision 0003. REWAKE_MARK_HOST_UNSEEN_S reads it.
    host_seen_at: datetime | None = _instant(nullable=True)


class RunRow(SQLModel, table=True):
    """One run of a session's tree: its attempts follow one another."""

    __tablename__ = "runs"
    __table_args__ = (ForeignKeyConstraint(["root_id"], ["sessions.root_id"]),)

    root_id: str = _id(primary_key=True)
    run_id: str = _id(primary_key=True)
    status: str = _short(nullable=False, length=16)
    current_attempt: int = Field(sa_type=Integer, nullable=False)
    created_at: datetime = _instant()
    updated_at: datetime = _instant()


class AttemptRow(SQLModel, table=True):
    """One attempt of a run: started, completed, or failed (with a failure row)."""

    __tablename__ = "attempts"
    __table_args__ = (ForeignKeyConstraint(["root_id", "run_id"], ["runs.root_id", "runs.run_id"]),)

    root_id: str = _id(primary_key=True)
    run_id: str = _id(primary_key=True)
    attempt: int = Field(
        sa_type=Integer, primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    status: str = _short(nullable=False, length=16)
    started_at: datetime | None = _instant(nullable=True)
    completed_at: datetime | None = _instant(nullable=True)
    failed_at: datetime | None = _instant(nullable=True)


class FailureRow(SQLModel, table=True):
    """A failed attempt as the host reported it, with the verdict and the answer given."""

    __tablename__ = "failures"
    __table_args__ = (
        ForeignKeyConstraint(
            ["root_id", "run_id", "attempt"],
            ["attempts.root_id", "attempts.run_id", "attempts.attempt"],
        ),
    )

    root_id: str = _id(primary_key=True)
    run_id: str = _id(primary_key=True)
    attempt: int = Field(
        sa_type=Integer, primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    message: str = Field(sa_type=Text, nullable=False)
    message_chars: int = Field(sa_type=Integer, nullable=False)
    truncated: bool = Field(sa_type=Boolean, nullable=False)
    verdict: dict[str, Any] = Field(sa_type=JSON, nullable=False)
    verdict_kind: str = _short(nullable=False, length=32)
    provider: str | None = _short(length=32)
    refusal_code: str | None = _short(length=64)
    reset_at: datetime | None = _instant(nullable=True)
    resolution_s: int | None = Field(default=None, sa_type=Integer, nullable=True)
    native_auto_continue: bool = Field(sa_type=Boolean, nullable=False)
    failure_kind: str = _short(nullable=False, length=32)
    failure_kind_stated: bool = Field(sa_type=Boolean, nullable=False)
    observed_at: datetime = _instant()
    received_at: datetime = _instant()
    zone: str | None = _short(length=64)
    cli_session_id: str | None = _short()
    account_key: str | None = _short()
    halted: bool = Field(sa_type=Boolean, nullable=False)
    capture: str | None = _short(length=16)
    events: list[Any] | None = Field(default=None, sa_type=JSON, nullable=True)
    #: What the CLI showed about how the attempt ended, for display only (never parsed).
    cli_text: str | None = Field(default=None, sa_type=Text, nullable=True)
    #: False when the CLI saved no conversation for the attempt (nothing to resume in place);
    #: None when the report did not say.
    conversation_saved: bool | None = Field(default=None, sa_type=Boolean, nullable=True)
    body_hash: str = _short(nullable=False, length=64)
    answer: dict[str, Any] = Field(sa_type=JSON, nullable=False)
    reported_by: str = _short(nullable=False)


class MarkRow(SQLModel, table=True):
    """An auto-resume request for one failed attempt (docs/design.md#marks)."""

    __tablename__ = "marks"
    __table_args__ = (
        ForeignKeyConstraint(["root_id"], ["sessions.root_id"]),
        Index(
            "ux_marks_live_per_session",
            "root_id",
            unique=True,
            sqlite_where=_LIVE_SQL,
            postgresql_where=_LIVE_SQL,
        ),
        Index("ix_marks_state_due_at", "state", "due_at"),
        Index("ix_marks_attempt", "root_id", "run_id", "attempt"),
        # Pacing counts an account's marks in sending (alembic revision 0002).
        Index("ix_marks_account_state", "account_key", "state"),
    )

    id: int | None = Field(default=None, sa_type=Integer, primary_key=True)
    root_id: str = _id()
    run_id: str = _id()
    attempt: int = Field(sa_type=Integer, nullable=False)
    state: str = _short(nullable=False, length=16)
    reset_at: datetime = _instant()
    resolution_s: int = Field(sa_type=Integer, nullable=False)
    due_at: datetime = _instant()
    armed_by: str = _short(nullable=False)
    armed_at: datetime = _instant()
    claimed_by: str | None = _short()
    attempt_key: str | None = _short(length=100)
    lease_until: datetime | None = _instant(nullable=True)
    sent_at: datetime | None = _instant(nullable=True)
    outcome: str | None = _short(length=64)
    outcome_detail: str | None = Field(default=None, sa_type=Text, nullable=True)
    clear_reason: str | None = _short(length=32)
    account_key: str | None = _short()
    despite_native: bool = Field(sa_type=Boolean, nullable=False)
    updated_at: datetime = _instant()


class TombstoneRow(SQLModel, table=True):
    """What a deleted session was, who deleted it and when."""

    __tablename__ = "tombstones"
    __table_args__ = (Index("ix_tombstones_deleted_at", "deleted_at"),)

    root_id: str = _id(primary_key=True)
    deleted_at: datetime = _instant()
    deleted_by: str = _short(nullable=False)
    summary: dict[str, Any] = Field(sa_type=JSON, nullable=False)


class TimelineRow(SQLModel, table=True):
    """One change to a session, appended in the transaction that made it."""

    __tablename__ = "timeline"
    __table_args__ = (
        ForeignKeyConstraint(["root_id"], ["sessions.root_id"]),
        Index("ix_timeline_root_id", "root_id", "id"),
    )

    id: int | None = Field(default=None, sa_type=Integer, primary_key=True)
    root_id: str = _id()
    at: datetime = _instant()
    event: str = _short(nullable=False, length=64)
    actor: str | None = _short()
    run_id: str | None = _short()
    attempt: int | None = Field(default=None, sa_type=Integer, nullable=True)
    mark_id: int | None = Field(default=None, sa_type=Integer, nullable=True)
    detail: dict[str, Any] = Field(sa_type=JSON, nullable=False)


class AccountPacingRow(SQLModel, table=True):
    """When a resume of each account last started, so that starts keep their stagger across
    sweeper processes."""

    __tablename__ = "account_pacing"

    account_key: str = _id(primary_key=True)
    last_started_at: datetime = _instant()


class SweeperHeartbeatRow(SQLModel, table=True):
    """The last time each sweeper process showed it was alive."""

    __tablename__ = "sweeper_heartbeats"

    sweeper_id: str = _id(primary_key=True)
    seen_at: datetime = _instant()
    started_at: datetime = _instant()
    host: str | None = _short()
    pid: int | None = Field(default=None, sa_type=Integer, nullable=True)
    #: What it does with a due mark (`log`, `command`, `webhook`); None from an older rewake.
    executor: str | None = _short(length=32)
