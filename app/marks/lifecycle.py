"""The mark lifecycle of docs/design.md#states, one verb per change, and the one way in: the
sweeper, the reports and the API change a mark's state only by calling these.

    arm ─> armed ─claim_due─> claimed ─start (start_sending)─> sending ─settle─> done | failed
             │                  │                                     │       | uncertain | logged
             │                  ├─release, reap_lost_leases─> armed   │       | superseded
             │                  │                                     ├─defer (nothing sent)─> armed
             ├──────────────────┴─clear_for(reason)─> cleared         └─reap_lost_leases─> uncertain
             └─expire_late, expire_host_unseen─> expired
    sending | uncertain ─settle_by_attempt (a later attempt was seen)─> done | failed
    uncertain ─resolve_uncertain (the host's lookup, the resolve route)─> done | failed

Each verb runs in the caller's transaction and never commits (the sweeper commits `start`
through `Database.durable_writer` before anything leaves the process). Each state change is a
compare-and-set in rewake.marks.repository, checked there against the one table of
rewake.marks.states (`check_transition`); None or an empty list means another writer won and
nothing may be sent. Each change appends its entry to the session's timeline.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case
from sqlmodel import Session, col

from rewake.context import Context, iso
from rewake.db.models import MarkRow
from rewake.marks import repository as mark_repo
from rewake.marks.pacing import PacingRules, accounts_of, plan_starts
from rewake.marks.states import CLEARABLE_STATES, OPEN_STATES, OUTCOME_STATES, MarkState
from rewake.sessions import repository as repo

# -- what the sweeper and the reports read -------------------------------------------------


def database_now(db: Session, fallback: datetime) -> datetime:
    """The database's clock on PostgreSQL (one clock for every sweeper); `fallback` elsewhere."""
    return mark_repo.database_now(db, fallback)


def live_mark(db: Session, root_id: str) -> MarkRow | None:
    """The session's armed, claimed or sending mark (there is at most one)."""
    return mark_repo.live_mark(db, root_id)


def list_marks(db: Session, root_id: str) -> list[MarkRow]:
    """Every mark the session had, oldest first."""
    return mark_repo.list_marks(db, root_id)


def count_by_state(db: Session) -> dict[str, int]:
    """How many marks are in each state."""
    return mark_repo.count_by_state(db)


def earliest_due(db: Session, exclude_accounts: Sequence[str] = ()) -> datetime | None:
    """When the next armed mark falls due, leaving out marks of `exclude_accounts`."""
    return mark_repo.earliest_armed_due(db, exclude_accounts)


def uncertain_marks(db: Session, limit: int, *, after_id: int = 0) -> list[MarkRow]:
    """Up to `limit` uncertain marks with an attempt key, in id order from the first after
    `after_id` (where the previous round of lookups stopped)."""
    return mark_repo.uncertain_marks(db, limit, after_id=after_id)


# -- armed ---------------------------------------------------------------------------------


def arm(
    db: Session, values: Mapping[str, Any], *, actor: str, now: datetime, detail: Mapping[str, Any]
) -> MarkRow:
    """A new armed mark with `values` as its columns (those not given are NULL), written now
    so that its id is known and the one-live-mark index is checked; its `mark_armed` entry
    carries its due_at and `detail`."""
    mark = mark_repo.insert_mark(db, {**values, "state": MarkState.ARMED})
    repo.append_mark_event(
        db, mark, now, "mark_armed", actor=actor, detail={"due_at": iso(mark.due_at), **detail}
    )
    return mark


def claim_due(
    db: Session,
    now: datetime,
    limit: int,
    claimed_by: str,
    lease_s: float,
    exclude_accounts: Sequence[str] = (),
    only_ids: Sequence[int] | None = None,
) -> list[MarkRow]:
    """armed -> claimed: up to `limit` armed marks with due_at <= now, earliest first, each
    with a fresh attempt key and a lease until now + lease_s; marks of `exclude_accounts`
    (accounts with as many resumes in flight as they may have) stay armed; with `only_ids`,
    only those."""
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


def clear_for(
    db: Session, root_id: str, reason: str, ctx: Context, live: MarkRow | None = None
) -> MarkRow | None:
    """armed | claimed -> cleared(reason); the cleared mark, or None if none could be cleared
    (none is live, or it is being sent). `live` is the session's live mark when the caller
    has it already."""
    live = live or mark_repo.live_mark(db, root_id)
    if live is None or live.id is None or live.state not in CLEARABLE_STATES:
        return None
    cleared = mark_repo.move_mark(
        db,
        live.id,
        from_states=CLEARABLE_STATES,
        to_state=MarkState.CLEARED,
        now=ctx.now,
        clear_reason=reason,
        lease_until=None,
    )
    if cleared is not None:
        repo.append_mark_event(
            db,
            cleared,
            ctx.now,
            "mark_cleared",
            actor=ctx.actor,
            detail={"reason": reason, "was": live.state},
        )
    return cleared


def clearable(marks: Sequence[MarkRow]) -> MarkRow | None:
    """The first of `marks` that could still be cleared (armed or claimed: nothing sent)."""
    return next((mark for mark in marks if mark.state in CLEARABLE_STATES), None)


def expire_late(db: Session, cutoff: datetime, now: datetime) -> list[MarkRow]:
    """armed -> expired for marks due before `cutoff`: a resume that late is not sent."""
    expired = mark_repo.expire_armed_before(db, cutoff, now)
    for row in expired:
        repo.append_mark_event(
            db, row, now, "mark_expired", actor="sweeper", detail={"due_at": iso(row.due_at)}
        )
    return expired


def expire_host_unseen(
    db: Session, seen_before: datetime, now: datetime, *, due_by: datetime | None = None
) -> list[MarkRow]:
    """armed -> expired (host_unseen) for marks whose session's host was last seen before
    `seen_before` (only those due by `due_by`, when given): nobody is there to take the
    resume."""
    expired = mark_repo.expire_host_unseen(db, seen_before, now, due_by=due_by)
    for row in expired:
        repo.append_mark_event(
            db, row, now, "mark_expired", actor="sweeper",
            detail={"due_at": iso(row.due_at), "reason": mark_repo.HOST_UNSEEN,
                    "host_seen_before": iso(seen_before)},
        )  # fmt: skip
    return expired


# -- claimed -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim a sweeper holds: the mark, the key that fences it, and when it is due."""

    mark_id: int
    attempt_key: str
    account_key: str | None
    due_at: datetime
    lease_until: datetime

    @classmethod
    def of(cls, row: MarkRow) -> Claim:
        assert row.id is not None and row.attempt_key is not None
        assert row.lease_until is not None
        return cls(row.id, row.attempt_key, row.account_key, row.due_at, row.lease_until)


def renew(db: Session, claim: Claim, lease_until: datetime, now: datetime) -> bool:
    """Extend the lease of a claim its holder still holds; False when it lost the claim."""
    return mark_repo.renew_claim(db, claim.mark_id, claim.attempt_key, lease_until, now)


def release(
    db: Session, mark_id: int, attempt_key: str, now: datetime, **detail: object
) -> MarkRow | None:
    """claimed -> armed for the holder of `attempt_key`: nothing was sent, anyone may claim it;
    the mark, or None when the claim was no longer held. Its `mark_released` entry says
    `detail`."""
    row = mark_repo.release_claim(db, mark_id, attempt_key, now)
    if row is not None:
        repo.append_mark_event(db, row, now, "mark_released", actor="sweeper", detail=dict(detail))
    return row


@dataclass(slots=True)
class Starts:
    """What one start did with its claims: the marks now sending, each with the CLI session
    id its failure named (in the order they start), the claims that wait for pacing (with
    the instant to look again; None: when a send of the account finishes), those past the
    start's limit (`queued`), and those no longer the holder's: lost (`dropped`) or given
    back because their due_at moved later (`released`)."""

    sending: list[tuple[MarkRow, str | None]] = field(default_factory=list)
    waiting: dict[int, datetime | None] = field(default_factory=dict)
    queued: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)


def start(
    db: Session,
    now: datetime,
    claims: Sequence[Claim],
    rules: PacingRules,
    *,
    lease_s: float,
    limit: int | None,
    lock_timeout_ms: int,
    into: Starts | None = None,
) -> Starts:
    """claimed -> sending for the claims that pacing lets start, at most `limit` of them
    (earliest due first); what became of each claim, in `into` when given. The caller commits
    this before any of them is sent.

    Each mark is re-read under a lock (waiting at most `lock_timeout_ms` for it on
    PostgreSQL): a claim lost to a clear, a delete or the reaper is dropped, and one whose
    due_at was moved later (an account hold) is released, so a held mark never starts before
    its new due_at."""
    starts = Starts() if into is None else into
    mark_repo.limit_lock_waits(db, lock_timeout_ms)
    mark_repo.lock_accounts(db, [c.account_key for c in claims if c.account_key is not None])
    current = mark_repo.lock_marks(db, [c.mark_id for c in claims])
    rows: dict[int, MarkRow] = {}
    for claim in claims:
        row = current.get(claim.mark_id)
        if row is None or row.state != MarkState.CLAIMED or row.attempt_key != claim.attempt_key:
            starts.dropped.append(claim.mark_id)
        elif row.due_at > now:
            release(db, claim.mark_id, claim.attempt_key, now, due_at=iso(row.due_at))
            starts.released.append(claim.mark_id)
        else:
            rows[claim.mark_id] = row
    candidates = [
        (mark_id, row.account_key)
        for mark_id, row in sorted(rows.items(), key=lambda item: (item[1].due_at, item[0]))
    ]
    loads = mark_repo.account_loads(db, accounts_of(candidates))
    plan = plan_starts(candidates, loads, rules, now, limit=limit)
    starts.waiting.update(plan.wait)
    starts.queued.extend(plan.later)
    sessions = mark_repo.cli_session_ids(db, [rows[mark_id] for mark_id in plan.start])
    mark_repo.record_starts(
        db,
        [acct for acct in (rows[m].account_key for m in plan.start) if acct is not None],
        now,
    )
    held = [(mark_id, rows[mark_id].attempt_key or "") for mark_id in plan.start]
    moved = {row.id: row for row in start_sending(db, held, now, lease_s)}
    for mark_id in plan.start:
        moved_row = moved.get(mark_id)
        if moved_row is None:  # pragma: no cover - the row is locked by this transaction
            starts.dropped.append(mark_id)
            continue
        session_id = sessions.get((moved_row.root_id, moved_row.run_id, moved_row.attempt))
        starts.sending.append((moved_row, session_id))
    return starts


def start_sending(
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
class Reaped:
    """Marks whose lease ran out: re-armed (nothing was sent) or uncertain (maybe sent)."""

    rearmed: list[MarkRow]
    uncertain: list[MarkRow]


def reap_lost_leases(db: Session, now: datetime) -> Reaped:
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


# -- sending -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendResult:
    """How one send ended, for `settle`."""

    mark_id: int
    attempt_key: str
    state: str
    outcome: str | None = None
    detail: str | None = None


def settle(db: Session, sends: Sequence[SendResult], now: datetime) -> list[MarkRow]:
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
#: What a look at a mark writes to the timeline before its outcome is known.
LOOK_EVENTS = ("mark_claimed", "mark_sending")


def defer(
    db: Session, mark_id: int, attempt_key: str, now: datetime, due_at: datetime, reason: str
) -> MarkRow | None:
    """sending -> armed, for the holder of `attempt_key`, when the resume program proved that
    it sent nothing (an open interactive CLI holds the conversation and rewake cannot reach it,
    or it continues the conversation itself and has not yet): the mark waits again, due at
    `due_at`, with `reason` as its outcome detail; its claim, lease and sent_at are dropped, as
    nothing left. The timeline hears of it when the reason is new. A look that ends deferred
    again for the same reason changed nothing but the due time, and its `mark_claimed` and
    `mark_sending` entries are taken back with it: a mark held for hours by an open CLI is
    looked at every minute, and those entries pushed the session's own history (its failure,
    its arming) out of the latest 500 the timeline shows. None when another writer moved the
    mark meanwhile (a later attempt's report, the reaper)."""
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
    if repeated:
        repo.take_back_mark_events(db, moved[0], LOOK_EVENTS, attempt_key)
    else:
        repo.append_mark_event(
            db, moved[0], now, "mark_deferred", actor=actor,
            detail={"reason": reason, "due_at": iso(due_at)},
        )  # fmt: skip
    return moved[0]


# -- a later attempt was seen --------------------------------------------------------------


def marks_a_report_concerns(db: Session, root_id: str, run_id: str, attempt: int) -> list[MarkRow]:
    """Every mark a report of `attempt` of the run may change or be held by: the session's
    open marks, and the run's marks for earlier attempts whose resume was sent."""
    return mark_repo.marks_a_report_concerns(db, root_id, run_id, attempt, OPEN_STATES)


def settle_by_later_attempt(
    db: Session, root_id: str, run_id: str, attempt: int, ctx: Context, *, source: str
) -> None:
    """Attempt `attempt` of the run was seen: see `settle_by_attempt`, for the session's open
    marks of the run's earlier attempts."""
    candidates = mark_repo.marks_of_run_in(db, root_id, run_id, OPEN_STATES, attempt)
    settle_by_attempt(db, candidates, run_id, attempt, ctx, source=source)


def settle_by_attempt(
    db: Session,
    marks: Sequence[MarkRow],
    run_id: str,
    attempt: int,
    ctx: Context,
    *,
    source: str,
    failure_kind: str | None = None,
) -> None:
    """Attempt `attempt` of the run was seen: of `marks`, those on earlier attempts of the run
    that were being sent (or are uncertain) landed, so they are done; armed or claimed ones
    were overtaken by hand (cleared, manual_resume).

    Except when that attempt failed with `conversation_missing`: the resume reached the host
    but found nothing to continue, so the mark ends failed (never done, and never re-fired)."""
    missing = failure_kind == "conversation_missing"
    state, outcome = (
        (MarkState.FAILED, "conversation_missing") if missing else (MarkState.DONE, "done")
    )
    for mark in marks:
        if mark.run_id != run_id or mark.attempt >= attempt or mark.state not in OPEN_STATES:
            continue
        assert mark.id is not None
        overtaken = mark.state in CLEARABLE_STATES
        reason = "new_failure" if missing else "manual_resume"
        if overtaken and clear_for(db, mark.root_id, reason, ctx, live=mark):
            continue
        settled = mark_repo.move_mark(
            db,
            mark.id,
            from_states=(MarkState.SENDING, MarkState.UNCERTAIN),
            to_state=state,
            now=ctx.now,
            outcome=outcome,
            outcome_detail=(
                f"attempt {attempt} of run {run_id} found no conversation to continue"
                if missing
                else f"attempt {attempt} of run {run_id} was {source}"
            ),
            lease_until=None,
        )
        if settled is not None:
            proof = {"proof": f"attempt {attempt} {source}"}
            repo.append_mark_event(
                db, settled, ctx.now, f"mark_{state}", actor=ctx.actor,
                detail={"outcome": outcome, **proof} if missing else proof,
            )  # fmt: skip


# -- uncertain -----------------------------------------------------------------------------


def resolve_uncertain(
    db: Session,
    mark_id: int,
    *,
    delivered: bool,
    why: str,
    now: datetime,
    actor: str | None,
    event: str,
    attempt_key: str | None = None,
) -> MarkRow | None:
    """uncertain -> done (outcome done) when the resume was `delivered`, else failed
    (not_sent), with `why` as the outcome's detail; fenced by `attempt_key` as well when
    given. The mark, or None when it was settled meanwhile. Its `event` entry names the
    outcome."""
    to_state, outcome = (MarkState.DONE, "done") if delivered else (MarkState.FAILED, "not_sent")
    moved = mark_repo.move_mark(
        db, mark_id, from_states=(MarkState.UNCERTAIN,), to_state=to_state, now=now,
        attempt_key=attempt_key, outcome=outcome, outcome_detail=why,
    )  # fmt: skip
    if moved is not None:
        repo.append_mark_event(db, moved, now, event, actor=actor, detail={"outcome": outcome})
    return moved
