"""sweeper executor: what each sweeper does with a due mark

`sweeper_heartbeats.executor` is the executor a sweeper runs (`log`, `command`, `webhook`), sent
with every heartbeat, so that a mark's warnings say what the running sweepers will do with it
rather than what the caller's own settings say. Sweepers from before this revision have none
until their next heartbeat after an upgrade (a sweeper of an older rewake never writes one:
its executor is then unknown, and no warning is made of it).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("sweeper_heartbeats", sa.Column("executor", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sweeper_heartbeats") as batch:
        batch.drop_column("executor")
