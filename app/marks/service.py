"""Auto-resume marks as the API sees them: arm, disable, resolve, and the mark's JSON. Every
state change is a verb of rewake.marks.lifecycle."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlmodel import Session

from rewake.context import JSON, Context, iso
from rewake.db.models import FailureRow, MarkRow, RunRow, SessionRow
from rewake.errors import DomainError
from rewake.heartbeats import executors_seen_since
from rewake.marks import lifecycle
from rewake.marks import repository as mark_repo
from rewake.marks.rules import (
    OfferFacts,
    SweepersWill,
    auto_resume_refusal,
    due_at_for,
    sweeper_warnings,
    sweepers_will,
)
from rewake.marks.states import LIVE_STATES, MarkState
from rewake.sessions import repository as repo
from rewake.sessions.tombstones import refuse_if_deleted
from rewake.settings import SWEEPER_FRESH_S

#: A mark that ended this way may be armed again for its attempt: nothing was ever sent.
REARMABLE_CLEAR_REASONS = ("disabled",)


def offer_facts(db: Session, session: SessionRow) -> tuple[OfferFacts, FailureRow | None]:
    """The facts the auto-resume offer decides on, and the session's current failure."""
    failure = run = None
    if session.current_run_id is not None and session.current_attempt is not None:
        failure, run = repo.failure_and_run(
            db, session.root_id, session.current_run_id, session.current_attempt
        )
    if failure is None:
        return facts_for(session, None, None, resumed_before=False), None
    resumed_before = mark_repo.attempt_resumed_before(
        db, failure.root_id, failure.run_id, failure.attempt, REARMABLE_CLEAR_REASONS
    )
    return facts_for(session, failure, run, resumed_before=resumed_before), failure


def facts_for(
    session: SessionRow,
    failure: FailureRow | None,
    run: RunRow | None,
    *,
    resumed_before: bool,
) -> OfferFacts:
    """OfferFacts from rows already at hand: the current failure, its run, and whether a mark
    of its attempt already ended (other than by being disabled)."""
    return OfferFacts(
        cancelled=session.cancelled_at is not None,
        has_failure=failure is not None,
        run_paused_at_failure=(
            failure is not None
            and run is not None
            and run.status == "paused"
            and run.current_attempt == failure.attempt
        ),
        failure_kind=failure.failure_kind if failure else None,
        halted=failure.halted if failure else False,
        reset_at=failure.reset_at if failure else None,
        refusal_code=failure.refusal_code if failure else None,
        refusal_detail=_refusal_detail(failure),
        native_auto_continue=failure.native_auto_continue if failure else False,
        attempt_resumed_before=resumed_before,
        conversation_saved=failure.conversation_saved if failure else None,
    )


def _refusal_detail(failure: FailureRow | None) -> str | None:
    refusal = failure.verdict.get("refusal") if failure is not None else None
    detail = refusal.get("detail") if isinstance(refusal, dict) else None
    return str(detail) if detail is not None else None


def require_session(db: Session, root_id: str, ctx: Context, *, lock: bool) -> SessionRow:
    """The session (locked for writing when asked), or 404 / 410 when it is unknown or deleted
    (within the tombstone's retention)."""
    session = repo.lock_session(db, root_id) if lock else repo.get_session(db, root_id)
    if session is None:
        refuse_if_deleted(db, root_id, ctx)
        raise DomainError("session_not_found", f"no session {root_id!r}")
    return session


def set_auto_resume(
    db: Session,
    root_id: str,
    *,
    enabled: bool,
    despite_native: bool,
    ctx: Context,
    fresh_if_missing: bool = False,
) -> JSON:
    """Arm or disable auto-resume for the session's current failure; repeating changes nothing.
    `fresh_if_missing` arms a failure whose CLI saved no conversation: the resumer is to start
    the task afresh (the timeline's mark_armed event says so)."""
    session = require_session(db, root_id, ctx, lock=True)
    live = mark_repo.live_mark(db, root_id)
    # Neither arming nor disabling changes these facts: the answer's offer is read from them.
    facts, failure = offer_facts(db, session)
    if not enabled:
        if live is None:
            return _view(db, root_id, mark_repo.latest_mark(db, root_id), facts, ctx)
        cleared = lifecycle.clear_for(db, root_id, "disabled", ctx, live=live)
        if cleared is None:  # being sent, or a sweeper moved it to sending just now
            raise DomainError("recovery_in_progress", "the resume is being sent right now")
        return _view(db, root_id, cleared, facts, ctx)
    if (
        live is not None
        and failure is not None
        and (live.run_id, live.attempt) == (failure.run_id, failure.attempt)
    ):
        return _view(db, root_id, live, facts, ctx)
    refusal = auto_resume_refusal(
        facts, despite_native=despite_native, fresh_if_missing=fresh_if_missing
    )
    if refusal is not None:
        raise refusal
    assert failure is not None and failure.reset_at is not None
    if live is not None:
        # A live mark for another attempt can only be one being sent (newer reports clear
        # armed and claimed marks); it must settle first.
        raise DomainError("recovery_in_progress", "another attempt's resume is being sent")
    resolution_s = failure.resolution_s or 0
    mark = lifecycle.arm(
        db,
        {
            "root_id": root_id,
            "run_id": failure.run_id,
            "attempt": failure.attempt,
            "reset_at": failure.reset_at,
            "resolution_s": resolution_s,
            "due_at": due_at_for(failure.reset_at, resolution_s, ctx.resume_delay_s, ctx.now),
            "armed_by": ctx.actor,
            "armed_at": ctx.now,
            "account_key": failure.account_key,
            "despite_native": despite_native,
            "updated_at": ctx.now,
        },
        actor=ctx.actor,
        now=ctx.now,
        detail={
            "despite_native": despite_native,
            # Only when it counted: the failure said nothing was saved, so the resume starts afresh.
            **({"fresh_start": True} if fresh_if_missing and failure.conversation_saved is False
               else {}),
        },
    )  # fmt: skip
    session.updated_at = ctx.now
    return _view(db, root_id, mark, facts, ctx)


def resolve_mark(
    db: Session,
    root_id: str,
    outcome: str,
    ctx: Context,
    *,
    run_id: str | None = None,
    attempt: int | None = None,
) -> JSON:
    """Settle the session's uncertain mark by hand: done, or failed with outcome not_sent.
    Never re-fires. A newer mark does not hide it; when several are uncertain, `run_id` and
    `attempt` say which."""
    session = require_session(db, root_id, ctx, lock=True)
    mark = pick_uncertain(mark_repo.list_marks(db, root_id), run_id=run_id, attempt=attempt)
    assert mark.id is not None
    moved = lifecycle.resolve_uncertain(
        db, mark.id, delivered=outcome == "done", why=f"resolved by {ctx.actor}", now=ctx.now,
        actor=ctx.actor, event="mark_resolved",
    )  # fmt: skip
    if moved is None:  # a sweeper's lookup at the host settled it meanwhile
        raise DomainError("mark_not_uncertain", "the mark was settled meanwhile")
    facts, _ = offer_facts(db, session)
    return _view(db, root_id, moved, facts, ctx)


def pick_uncertain(marks: Sequence[MarkRow], *, run_id: str | None, attempt: int | None) -> MarkRow:
    """The uncertain mark among a session's `marks` (oldest first) that `run_id` and `attempt`
    name (None: any). 404 mark_not_found when none is named, 409 mark_not_uncertain when the
    named ones are all settled, 409 mark_ambiguous when several are uncertain."""
    named = [
        mark
        for mark in marks
        if (run_id is None or mark.run_id == run_id)
        and (attempt is None or mark.attempt == attempt)
    ]
    if not named:
        which = "" if run_id is None and attempt is None else " for " + _which(run_id, attempt)
        raise DomainError("mark_not_found", f"the session has no auto-resume mark{which}")
    uncertain = [mark for mark in named if mark.state == MarkState.UNCERTAIN]
    if len(uncertain) == 1:
        return uncertain[0]
    if not uncertain:
        raise DomainError(
            "mark_not_uncertain",
            f"the mark is {named[-1].state}; only an uncertain mark is resolved",
        )
    listed = ", ".join(_which(mark.run_id, mark.attempt) for mark in uncertain)
    raise DomainError(
        "mark_ambiguous",
        f"{len(uncertain)} marks are uncertain ({listed}); name run_id and attempt",
        uncertain=[
            {"id": mark.id, "run_id": mark.run_id, "attempt": mark.attempt} for mark in uncertain
        ],
    )


def _which(run_id: str | None, attempt: int | None) -> str:
    parts = []
    if run_id is not None:
        parts.append(f"run {run_id}")
    if attempt is not None:
        parts.append(f"attempt {attempt}")
    return " ".join(parts)


def mark_view(db: Session, root_id: str, ctx: Context) -> JSON:
    """The session's mark (live, else the latest), with warnings and whether it can be armed."""
    session = require_session(db, root_id, ctx, lock=False)
    mark = mark_repo.live_mark(db, root_id) or mark_repo.latest_mark(db, root_id)
    facts, _ = offer_facts(db, session)
    return _view(db, root_id, mark, facts, ctx)


def _view(db: Session, root_id: str, mark: MarkRow | None, facts: OfferFacts, ctx: Context) -> JSON:
    refusal = auto_resume_refusal(facts, despite_native=False)
    view = mark_json(mark) if mark is not None else empty_mark_json()
    view["root_id"] = root_id
    view["offer"] = {
        "available": refusal is None,
        "code": refusal.code if refusal else None,
        "detail": refusal.detail if refusal else None,
    }
    view["warnings"] = warnings_for(db, mark, ctx) if mark is not None else []
    return view


def warnings_for(db: Session, mark: MarkRow, ctx: Context) -> list[str]:
    """What may keep a live mark from doing what its owner expects."""
    if mark.state not in LIVE_STATES:
        return []
    return sweepers_warnings(db, ctx)


def sweepers_warnings(db: Session, ctx: Context) -> list[str]:
    """Why no mark would be resumed now, from what the sweepers seen lately report; [] when a
    sweeper that resumes runs."""
    return sweeper_warnings(what_sweepers_will_do(db, ctx), SWEEPER_FRESH_S)


def what_sweepers_will_do(db: Session, ctx: Context) -> SweepersWill:
    """What the sweepers seen in the last SWEEPER_FRESH_S will do with a due mark."""
    since = ctx.now - timedelta(seconds=SWEEPER_FRESH_S)
    return sweepers_will(executors_seen_since(db, since))


def mark_json(mark: MarkRow) -> JSON:
    return {
        "id": mark.id,
        "enabled": mark.state in LIVE_STATES,
        "state": mark.state,
        "run_id": mark.run_id,
        "attempt": mark.attempt,
        "reset_at": iso(mark.reset_at),
        "resolution_s": mark.resolution_s,
        "due_at": iso(mark.due_at),
        "armed_by": mark.armed_by,
        "armed_at": iso(mark.armed_at),
        "claimed_by": mark.claimed_by,
        "attempt_key": mark.attempt_key,
        "lease_until": iso(mark.lease_until),
        "sent_at": iso(mark.sent_at),
        "outcome": mark.outcome,
        "outcome_detail": mark.outcome_detail,
        "clear_reason": mark.clear_reason,
        "account_key": mark.account_key,
        "despite_native": mark.despite_native,
        "updated_at": iso(mark.updated_at),
    }


def empty_mark_json() -> JSON:
    """The mark JSON of a session that never had one: every field null, not enabled."""
    view: JSON = dict.fromkeys(MARK_FIELDS)
    view["enabled"] = False
    return view


MARK_FIELDS = (
    "id", "enabled", "state", "run_id", "attempt", "reset_at", "resolution_s", "due_at",
    "armed_by", "armed_at", "claimed_by", "attempt_key", "lease_until", "sent_at", "outcome",
    "outcome_detail", "clear_reason", "account_key", "despite_native", "updated_at",
)  # fmt: skip
