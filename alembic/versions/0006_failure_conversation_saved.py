"""failure conversation_saved: whether the CLI saved a conversation to resume

`failures.conversation_saved` is false when the report says the CLI saved no conversation for
the attempt (Gemini CLI keeps one only once the model answered, so a first request that hit
the limit leaves nothing for `--resume`). Auto-resume of such an attempt is refused unless it
is armed as a fresh start. Null when the report did not say, as for every failure from before
this revision.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("failures", sa.Column("conversation_saved", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("failures") as batch:
        batch.drop_column("conversation_saved")
