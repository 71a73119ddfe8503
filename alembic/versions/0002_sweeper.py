"""sweeper: an index for counting an account's sends in flight, and NOTIFY on new marks

Pacing counts each account's marks in `sending` before it starts another; the index keeps that
an index seek however many marks the account has. On PostgreSQL a statement trigger sends
`NOTIFY rewake_marks` when marks are added or their state or due_at change, so sweepers notice
new marks at once (they re-read the earliest due mark every second too, so a notification
that is lost only costs latency).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOTIFY_FUNCTION = """
CREATE OR REPLACE FUNCTION rewake_marks_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('rewake_marks', '');
    RETURN NULL;
END
$$ LANGUAGE plpgsql
"""
NOTIFY_TRIGGER = """
CREATE TRIGGER rewake_marks_notify
AFTER INSERT OR UPDATE OF state, due_at ON marks
FOR EACH STATEMENT EXECUTE FUNCTION rewake_marks_notify()
"""


def upgrade() -> None:
    op.create_index("ix_marks_account_state", "marks", ["account_key", "state"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(NOTIFY_FUNCTION)
        op.execute(NOTIFY_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS rewake_marks_notify ON marks")
        op.execute("DROP FUNCTION IF EXISTS rewake_marks_notify()")
    op.drop_index("ix_marks_account_state", table_name="marks")
