"""host seen: when a session's host last sent anything for it

`sessions.host_seen_at` is set by every host request for the session (a failure report, an
attempts report, a manual resume report). With REWAKE_MARK_HOST_UNSEEN_S set, the sweeper
expires an armed mark instead of firing it when its host went unseen that long. Sessions from
before this revision have none until their host next reports (the rule leaves them alone).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "sessions", sa.Column("host_seen_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("host_seen_at")
