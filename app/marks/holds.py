"""Holding an account: a resumed attempt that soon reports a new provider limit means the
account's limit is live again, so its other marks wait for the new reset.

Called in the failure report's transaction. due_at only ever moves later; each moved mark gets
a timeline entry saying why. A limit reported within 10 minutes of a resume also counts as
`resume_into_live_limit`: the one sign of resuming too early.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from sqlmodel import Session

from rewake.context import Context, iso
from rewake.db.models import FailureRow, MarkRow
from rewake.marks import repository as mark_repo
from rewake.marks.rules import due_at_for
from rewake.sessions import repository as repo

#: A limit reported this soon after a resume counts as resuming into a live limit.
LIVE_LIMIT_WINDOW = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class HoldResult:
    """Whether the failure followed a resume closely, and which marks were held."""

    resumed_into_live_limit: bool = False
    held_mark_ids: list[int] = field(default_factory=list)


def hold_after_resume(
    db: Session,
    failure: FailureRow,
    session_marks: Sequence[MarkRow],
    ctx: Context,
    *,
    window_s: float,
) -> HoldResult:
    """If `failure` is a provider limit reported by an attempt that rewake resumed less than
    `window_s` earlier, move the account's other armed and claimed marks to its new reset.

    `session_marks` holds at least the run's marks whose resume was sent for attempts before
    the failure's (`lifecycle.marks_a_report_concerns` reads them with the marks the report may
    settle): without such a mark nothing was resumed, and nothing more is read."""
    if failure.failure_kind != "provider_quota" or failure.reset_at is None:
        return HoldResult()
    sent = mark_repo.sent_marks_of_run(session_marks, failure.run_id, failure.attempt)
    resumed = sent[0] if sent else None
    if resumed is None or resumed.sent_at is None:
        return HoldResult()
    since_resume = failure.observed_at - resumed.sent_at
    if since_resume < timedelta(0) or since_resume > timedelta(seconds=window_s):
        return HoldResult()
    live_limit = since_resume <= LIVE_LIMIT_WINDOW
    account = failure.account_key or resumed.account_key
    if account is None:
        return HoldResult(resumed_into_live_limit=live_limit)
    new_due = due_at_for(failure.reset_at, failure.resolution_s or 0, ctx.resume_delay_s, ctx.now)
    held: list[int] = []
    for mark in mark_repo.marks_to_hold(db, account, new_due):
        assert mark.id is not None
        if mark.root_id == failure.root_id or not mark_repo.move_due_later(
            db, mark.id, new_due, ctx.now
        ):
            continue
        held.append(mark.id)
        repo.append_mark_event(
            db,
            mark,
            ctx.now,
            "mark_held",
            actor=ctx.actor,
            detail={
                "from": iso(mark.due_at),
                "to": iso(new_due),
                "account_key": account,
                "reason": "a resumed attempt of this account reported a new provider limit",
                "because": {
                    "root_id": failure.root_id,
                    "run_id": failure.run_id,
                    "attempt": failure.attempt,
                    "reset_at": iso(failure.reset_at),
                },
            },
        )
    return HoldResult(resumed_into_live_limit=live_limit, held_mark_ids=held)
