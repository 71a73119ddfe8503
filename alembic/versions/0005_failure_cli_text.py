"""failure cli_text: what the CLI showed about how an attempt ended

`failures.cli_text` keeps the texts of the CLI's error events (Claude's error result, Codex's
`error` / `turn.failed`, Gemini's error result) that a headless run never prints as text, so
that the session page and `rewake show` have the CLI's words to show. It is display only: the
parser never reads it. Failures from before this revision have none.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("failures", sa.Column("cli_text", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("failures") as batch:
        batch.drop_column("cli_text")
