"""The sweeper's side of a mark: claim when due, send, record the outcome, reap lost leases.

Each function runs in the caller's transaction and never commits: the sweeper owns its
commits (and commits `mark_sending` through `Database.durable_writer` before anything leaves
the process). Every transition is a compare-and-set; None or an empty list means another
writer won and nothing may be sent.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case
from sqlmodel import Session, col

from rewake.context import iso
from rewake.db.models import MarkRow
from rewake.marks import repository as mark_repo
from rewake.marks.states import OUTCOME_STATES, MarkState
from rewake.sessions import repository as repo


def claim_due_marks(
    db: Session,
    now: datetime,
    limit: int,
    claimed_by: str,
    lease_s: float,
    exclude_accounts: Sequence[str] = (),
    only_ids: Sequence[int] | None = None,
) -> list[MarkRow]:
    """Claim up to `limit` armed marks with due_at <= now, earliest first, each with a fresh
    attempt key and a lease until now + lease_s; marks of `exclude_accounts` (accounts with
    as many resumes in flight as they may have) stay armed; with `only_ids`, only those."""
    if limit <= 0:
        return []
    claimed = mark_repo.claim_due(
        db,
        now,
        limit=limit,
        claimed_by=claimed_by,
        lease_s=lease_s,
        batch_key=secrets.token_hex(8),
        exclude_accounts=exclude_accounts,
        only_ids=only_ids,
    )
    for mark in claimed:
        repo.append_mark_event(
            db,
            mark,
            now,
            "mark_claimed",
            actor=claimed_by,
            detail={"attempt_key": mark.attempt_key, "lease_until": iso(mark.lease_until)},
        )
    return claimed


def mark_sending(
    db: Session, held: Sequence[tuple[int, str]], now: datetime, lease_s: float
) -> list[MarkRow]:
    """claimed -> sending, with sent_at = now, for (mark_id, attempt_key) claims in one
    statement, each fenced by its own key; the rows that moved. Commit this before sending
    any of them."""
    moved = mark_repo.move_held_marks(
        db,
        held,
        from_state=MarkState.CLAIMED,
        to_state=MarkState.SENDING,
        now=now,
        lease_until=now + timedelta(seconds=lease_s),
        sent_at=now,
    )
    for mark in moved:
        repo.append_mark_event(
            db,
            mark,
            now,
            "mark_sending",
            actor=mark.claimed_by,
            detail={"attempt_key": mark.attempt_key},
        )
    return moved


@dataclass(frozen=True, slots=True)
class SendResult:
    """How one send ended, for `record_outcomes`."""

    mark_id: int
    attempt_key: str
    state: str
    outcome: str | None = None
    detail: str | None = None


def record_outcomes(db: Session, sends: Sequence[SendResult], now: datetime) -> list[MarkRow]:
    """sending -> done | failed | uncertain | superseded | logged: one statement per (state,
    outcome) pair, each mark fenced by its own key, each keeping its own detail; the rows that
    moved (a mark settled meanwhile, by a later attempt's report or the reaper, does not)."""
    groups: dict[tuple[str, str], list[SendResult]] = {}
    for send in sends:
        if send.state not in OUTCOME_STATES:
            raise ValueError(f"{send.state!r} is not an outcome state; expected {OUTCOME_STATES}")
        groups.setdefault((send.state, send.outcome or send.state), []).append(send)
    moved: list[MarkRow] = []
    for (state, outcome), group in groups.items():
        details = {send.mark_id: send.detail for send in group}
        rows = mark_repo.move_held_marks(
            db,
            [(send.mark_id, send.attempt_key) for send in group],
            from_state=MarkState.SENDING,
            to_state=state,
            now=now,
            outcome=outcome,
            lease_until=None,
            outcome_detail=case(details, value=col(MarkRow.id), else_=None),
        )
        for mark in rows:
            repo.append_mark_event(
                db,
                mark,
                now,
                f"mark_{state}",
                actor=mark.claimed_by,
                detail={"outcome": outcome, "detail": details.get(mark.id or 0)},
            )
        moved.extend(rows)
    return moved


#: The outcome code of a deferred mark: armed again, its reason in outcome_detail.
DEFERRED = "deferred"


def defer_send(
    db: Session, mark_id: int, attempt_key: str, now: datetime, due_at: datetime, reason: str
) -> MarkRow | None:
    """sending -> armed, for the holder of `attempt_key`, when the resume program proved that
    it sent nothing (an open interactive CLI holds the conversation and rewake cannot reach it,
    or it continues the conversation itself and has not yet): the mark waits again, due at
    `due_at`, with `reason` as its outcome detail; its claim, lease and sent_at are dropped, as
    nothing left. The timeline hears of it when the reason is new (not at every look again).
    None when another writer moved the mark meanwhile (a later attempt's report, the reaper)."""
    before = db.get(MarkRow, mark_id)
    repeated = before is not None and (before.outcome, before.outcome_detail) == (DEFERRED, reason)
    actor = before.claimed_by if before is not None else None
    moved = mark_repo.move_held_marks(
        db,
        [(mark_id, attempt_key)],
        from_state=MarkState.SENDING,
        to_state=MarkState.ARMED,
        now=now,
        due_at=due_at,
        claimed_by=None,
        attempt_key=None,
        lease_until=None,
        sent_at=None,
        outcome=DEFERRED,
        outcome_detail=reason,
    )
    if not moved:
        return None
    if not repeated:
        repo.append_mark_event(
            db,
            moved[0],
            now,
            "mark_deferred",
            actor=actor,
            detail={"reason": reason, "due_at": iso(due_at)},
        )
    return moved[0]


@dataclass(frozen=True, slots=True)
class Reaped:
    """Marks whose lease ran out: re-armed (nothing was sent) or uncertain (maybe sent)."""

    rearmed: list[MarkRow]
    uncertain: list[MarkRow]


def reap_expired_leases(db: Session, now: datetime) -> Reaped:
    """claimed past its lease -> armed; sending past its lease -> uncertain (never retried)."""
    rearmed = mark_repo.reap(
        db,
        now,
        from_state=MarkState.CLAIMED,
        to_state=MarkState.ARMED,
        claimed_by=None,
        attempt_key=None,
        lease_until=None,
    )
    uncertain = mark_repo.reap(
        db,
        now,
        from_state=MarkState.SENDING,
        to_state=MarkState.UNCERTAIN,
        outcome="lease_expired",
        outcome_detail="the send did not report back within its lease",
    )
    for mark, event in [(m, "mark_rearmed") for m in rearmed] + [
        (m, "mark_uncertain") for m in uncertain
    ]:
        repo.append_mark_event(db, mark, now, event, actor="reaper", detail={"lease_expired": True})
    return Reaped(rearmed=rearmed, uncertain=uncertain)
