"""A resume that finds no conversation: the resumed attempt's conversation_missing report ends
the mark being sent `failed` (never `done`), while any other report of it still proves the
resume landed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rewake.db.engine import Database
from rewake.marks.pacing import PacingRules
from rewake.parsers import parse
from rewake.reports.failures import FailureReport, report_failure
from rewake.sweeper import step
from tests.support.api import T0
from tests.support.sweeper import arm, context, marks_by_root

LIMIT = "Claude AI usage limit reached|{epoch}"


#: Before the shared database's other sessions (the web list shows the latest changed first).
EARLIER = T0 - timedelta(hours=1)


def _sending(database: Database, root_id: str) -> None:
    reset = EARLIER + timedelta(minutes=5)
    arm(database, root_id, message=LIMIT.format(epoch=int(reset.timestamp())),
        observed_at=EARLIER, now=EARLIER, delay_s=0)  # fmt: skip
    at = reset + timedelta(seconds=1)
    claims = step.claim(database, at, limit=10, sweeper_id="t", lease_s=60)
    step.start(database, at, claims, PacingRules(), lease_s=60)


@pytest.mark.parametrize(
    ("failure_kind", "state", "outcome"),
    [("conversation_missing", "failed", "conversation_missing"), (None, "done", "done")],
)
def test_resumed_attempt_report_settles_the_sending_mark(
    database: Database, failure_kind: str | None, state: str, outcome: str
) -> None:
    """Attempt 2 reporting conversation_missing fails the mark; any other failure of attempt 2
    proves the resume landed (done)."""
    root_id = f"cm-{failure_kind}"
    _sending(database, root_id)
    later = EARLIER + timedelta(minutes=6)
    report = FailureReport(
        root_id=root_id, run_id="r1", attempt=2, observed_at=later, provider="claude",
        message="No conversation found with session ID: 3f6c2a9e", failure_kind=failure_kind,
    )  # fmt: skip
    with database.writer() as db, db.begin():
        report_failure(db, report, parse=parse, ctx=context(later))
    mark = marks_by_root(database, [root_id])[root_id]
    assert (mark.state, mark.outcome) == (state, outcome)
