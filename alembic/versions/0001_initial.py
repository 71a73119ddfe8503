"""initial schema: sessions, runs, attempts, failures, marks, tombstones, timeline, account
pacing, sweeper heartbeats

Written from an autogenerate run and reviewed by hand. Instants are `TIMESTAMP WITH TIME
ZONE` on PostgreSQL and UTC text on SQLite (rewake.db.UTCDateTime does the converting).

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LIVE = sa.text("state IN ('armed', 'claimed', 'sending')")


def _id(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.String(length=200), nullable=nullable)


def _instant(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "sessions",
        _id("root_id"),
        sa.Column("state", sa.String(length=16), nullable=False),
        _id("current_run_id", nullable=True),
        sa.Column("current_attempt", sa.Integer(), nullable=True),
        _instant("created_at"),
        _instant("updated_at"),
        _instant("cancelled_at", nullable=True),
        _id("cancelled_by", nullable=True),
        sa.PrimaryKeyConstraint("root_id"),
    )
    op.create_index("ix_sessions_updated_at", "sessions", ["updated_at"])

    op.create_table(
        "runs",
        _id("root_id"),
        _id("run_id"),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("current_attempt", sa.Integer(), nullable=False),
        _instant("created_at"),
        _instant("updated_at"),
        sa.ForeignKeyConstraint(["root_id"], ["sessions.root_id"]),
        sa.PrimaryKeyConstraint("root_id", "run_id"),
    )

    op.create_table(
        "attempts",
        _id("root_id"),
        _id("run_id"),
        sa.Column("attempt", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        _instant("started_at", nullable=True),
        _instant("completed_at", nullable=True),
        _instant("failed_at", nullable=True),
        sa.ForeignKeyConstraint(["root_id", "run_id"], ["runs.root_id", "runs.run_id"]),
        sa.PrimaryKeyConstraint("root_id", "run_id", "attempt"),
    )

    op.create_table(
        "failures",
        _id("root_id"),
        _id("run_id"),
        sa.Column("attempt", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("message_chars", sa.Integer(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("verdict", sa.JSON(), nullable=False),
        sa.Column("verdict_kind", sa.String(length=32), nullable=False),
        sa.Column("provider", sa.String(length=32), nullable=True),
        sa.Column("refusal_code", sa.String(length=64), nullable=True),
        _instant("reset_at", nullable=True),
        sa.Column("resolution_s", sa.Integer(), nullable=True),
        sa.Column("native_auto_continue", sa.Boolean(), nullable=False),
        sa.Column("failure_kind", sa.String(length=32), nullable=False),
        sa.Column("failure_kind_stated", sa.Boolean(), nullable=False),
        _instant("observed_at"),
        _instant("received_at"),
        sa.Column("zone", sa.String(length=64), nullable=True),
        _id("cli_session_id", nullable=True),
        _id("account_key", nullable=True),
        sa.Column("halted", sa.Boolean(), nullable=False),
        sa.Column("capture", sa.String(length=16), nullable=True),
        sa.Column("events", sa.JSON(), nullable=True),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("answer", sa.JSON(), nullable=False),
        _id("reported_by"),
        sa.ForeignKeyConstraint(
            ["root_id", "run_id", "attempt"],
            ["attempts.root_id", "attempts.run_id", "attempts.attempt"],
        ),
        sa.PrimaryKeyConstraint("root_id", "run_id", "attempt"),
    )

    op.create_table(
        "marks",
        sa.Column("id", sa.Integer(), nullable=False),
        _id("root_id"),
        _id("run_id"),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        _instant("reset_at"),
        sa.Column("resolution_s", sa.Integer(), nullable=False),
        _instant("due_at"),
        _id("armed_by"),
        _instant("armed_at"),
        _id("claimed_by", nullable=True),
        sa.Column("attempt_key", sa.String(length=100), nullable=True),
        _instant("lease_until", nullable=True),
        _instant("sent_at", nullable=True),
        sa.Column("outcome", sa.String(length=64), nullable=True),
        sa.Column("outcome_detail", sa.Text(), nullable=True),
        sa.Column("clear_reason", sa.String(length=32), nullable=True),
        _id("account_key", nullable=True),
        sa.Column("despite_native", sa.Boolean(), nullable=False),
        _instant("updated_at"),
        sa.ForeignKeyConstraint(["root_id"], ["sessions.root_id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_marks_attempt", "marks", ["root_id", "run_id", "attempt"])
    op.create_index("ix_marks_state_due_at", "marks", ["state", "due_at"])
    # At most one live mark per session, on both databases.
    op.create_index(
        "ux_marks_live_per_session",
        "marks",
        ["root_id"],
        unique=True,
        sqlite_where=LIVE,
        postgresql_where=LIVE,
    )

    op.create_table(
        "tombstones",
        _id("root_id"),
        _instant("deleted_at"),
        _id("deleted_by"),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("root_id"),
    )
    op.create_index("ix_tombstones_deleted_at", "tombstones", ["deleted_at"])

    op.create_table(
        "timeline",
        sa.Column("id", sa.Integer(), nullable=False),
        _id("root_id"),
        _instant("at"),
        sa.Column("event", sa.String(length=64), nullable=False),
        _id("actor", nullable=True),
        _id("run_id", nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("mark_id", sa.Integer(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["root_id"], ["sessions.root_id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_timeline_root_id", "timeline", ["root_id", "id"])

    op.create_table(
        "account_pacing",
        _id("account_key"),
        _instant("last_started_at"),
        sa.PrimaryKeyConstraint("account_key"),
    )

    op.create_table(
        "sweeper_heartbeats",
        _id("sweeper_id"),
        _instant("seen_at"),
        _instant("started_at"),
        _id("host", nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("sweeper_id"),
    )


def downgrade() -> None:
    op.drop_table("sweeper_heartbeats")
    op.drop_table("account_pacing")
    op.drop_index("ix_timeline_root_id", table_name="timeline")
    op.drop_table("timeline")
    op.drop_index("ix_tombstones_deleted_at", table_name="tombstones")
    op.drop_table("tombstones")
    op.drop_index("ux_marks_live_per_session", table_name="marks")
    op.drop_index("ix_marks_state_due_at", table_name="marks")
    op.drop_index("ix_marks_attempt", table_name="marks")
    op.drop_table("marks")
    op.drop_table("failures")
    op.drop_table("attempts")
    op.drop_table("runs")
    op.drop_index("ix_sessions_updated_at", table_name="sessions")
    op.drop_table("sessions")
