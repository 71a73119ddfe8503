"""What hosts and people do to a session: an attempt moving on, a manual resume, cancel, and
delete with a tombstone."""

from __future__ import annotations

from sqlmodel import Session

from rewake.context import JSON, Context, iso
from rewake.db.models import AttemptRow, RunRow, SessionRow, TombstoneRow
from rewake.errors import DomainError
from rewake.marks import lifecycle
from rewake.marks.service import mark_json, mark_view, require_session
from rewake.marks.states import MarkState
from rewake.session_service.reads import run_json, session_view, tombstone_json
from rewake.sessions import repository as repo
from rewake.sessions.rules import session_state
from rewake.sessions.tombstones import refuse_if_deleted


def record_attempt(
    db: Session, root_id: str, run_id: str, attempt: int, status: str, ctx: Context
) -> JSON:
    """The host says attempt `attempt` of the run started or completed."""
    session = repo.lock_session(db, root_id)
    if session is None:
        refuse_if_deleted(db, root_id, ctx)
        session, _ = repo.ensure_session(db, root_id, ctx.now)
    repo.note_host_seen(session, ctx.now)
    run = repo.get_run(db, root_id, run_id)
    if run is None:
        run = RunRow(
            root_id=root_id,
            run_id=run_id,
            status="running",
            current_attempt=attempt,
            created_at=ctx.now,
            updated_at=ctx.now,
        )
        repo.add(db, run)
    row = repo.get_attempt(db, root_id, run_id, attempt)
    if row is None:
        row = AttemptRow(root_id=root_id, run_id=run_id, attempt=attempt, status=status)
        repo.add(db, row)
    changed = _apply_attempt_status(row, status, ctx)
    if attempt >= run.current_attempt and row.status == status:
        new_status = "running" if status == "started" else "completed"
        if (run.current_attempt, run.status) != (attempt, new_status):
            run.current_attempt, run.status, run.updated_at = attempt, new_status, ctx.now
            changed = True
        if session.current_run_id == run_id and attempt > (session.current_attempt or 0):
            # The session's current point follows its run: once a later attempt of the run
            # whose failure was current starts, that failure is history, not what is true now.
            session.current_attempt = attempt
            changed = True
    db.flush()
    lifecycle.settle_by_later_attempt(db, root_id, run_id, attempt, ctx, source=status)
    if changed:
        _touch(db, session, ctx)
        repo.append_timeline(
            db,
            root_id,
            ctx.now,
            f"attempt_{status}",
            actor=ctx.actor,
            run_id=run_id,
            attempt=attempt,
        )
    return {"root_id": root_id, "run": run_json(run), "session_state": session.state}


def _apply_attempt_status(row: AttemptRow, status: str, ctx: Context) -> bool:
    """Attempts only move forward: started -> completed | failed; the first time is kept."""
    if status == "started":
        if row.started_at is None:
            row.started_at = ctx.now
            return True
        return False
    if row.status == "failed" or row.completed_at is not None:
        return False
    row.status, row.completed_at = "completed", ctx.now
    return True


def manual_resume(db: Session, root_id: str, run_id: str, ctx: Context) -> JSON:
    """Someone resumed the run by hand: the run is running again and its mark is cleared."""
    session = require_session(db, root_id, ctx, lock=True)
    repo.note_host_seen(session, ctx.now)
    run = repo.get_run(db, root_id, run_id)
    if run is None:
        raise DomainError("run_not_found", f"session {root_id!r} has no run {run_id!r}")
    live = lifecycle.live_mark(db, root_id)
    if live is not None and live.run_id == run_id:
        lifecycle.clear_for(db, root_id, "manual_resume", ctx)
    if run.status == "paused":
        run.status, run.updated_at = "running", ctx.now
    _touch(db, session, ctx)
    repo.append_timeline(
        db, root_id, ctx.now, "manual_resume", actor=ctx.actor, run_id=run_id,
        attempt=run.current_attempt,
    )  # fmt: skip
    return {"root_id": root_id, "run": run_json(run), "mark": mark_view(db, root_id, ctx)}


def cancel_session(db: Session, root_id: str, ctx: Context) -> JSON:
    """Cancel is final and always succeeds; an armed or claimed mark is cleared. A root_id
    never seen is created cancelled, so that no report arriving later can arm a mark for it
    (a deleted one stays deleted: 410 while its tombstone is kept)."""
    session = repo.lock_session(db, root_id)
    unseen = session is None
    if session is None:
        refuse_if_deleted(db, root_id, ctx)
        session, _ = repo.ensure_session(db, root_id, ctx.now)
    lifecycle.clear_for(db, root_id, "cancel", ctx)
    if session.cancelled_at is None:
        session.cancelled_at, session.cancelled_by = ctx.now, ctx.actor
        _touch(db, session, ctx)
        detail = {"before_any_report": True} if unseen else None
        repo.append_timeline(db, root_id, ctx.now, "cancelled", actor=ctx.actor, detail=detail)
    return session_view(db, root_id, ctx)


def delete_session(db: Session, root_id: str, ctx: Context) -> JSON:
    """Remove a finished or cancelled session, leaving a tombstone; never while sending."""
    session = require_session(db, root_id, ctx, lock=True)
    live = lifecycle.live_mark(db, root_id)
    if live is not None and live.state == MarkState.SENDING:
        raise DomainError("recovery_in_progress", "a resume for this session is being sent")
    if session.state not in ("finished", "cancelled"):
        raise DomainError(
            "session_active", f"session {root_id!r} is {session.state}; cancel it first"
        )
    if live is not None and lifecycle.clear_for(db, root_id, "delete", ctx) is None:
        # A sweeper moved the mark to sending after it was read: the resume is on its way.
        raise DomainError("recovery_in_progress", "a resume for this session is being sent")
    marks = [mark_json(mark) for mark in lifecycle.list_marks(db, root_id)]
    summary: JSON = {
        "state": session.state,
        "created_at": iso(session.created_at),
        "cancelled_at": iso(session.cancelled_at),
        "cancelled_by": session.cancelled_by,
        "runs": len(repo.list_runs(db, root_id)),
        "attempts": len(repo.list_attempts(db, root_id)),
        "failures": [
            {"run_id": f.run_id, "attempt": f.attempt, "failure_kind": f.failure_kind}
            for f in repo.list_failures(db, root_id)
        ],
        "marks": marks,
    }
    repo.delete_session_rows(db, root_id)
    tombstone = TombstoneRow(
        root_id=root_id, deleted_at=ctx.now, deleted_by=ctx.actor, summary=summary
    )
    repo.put_tombstone(db, tombstone)
    return tombstone_json(tombstone)


def _touch(db: Session, session: SessionRow, ctx: Context) -> None:
    db.flush()
    session.state = session_state(
        session.cancelled_at is not None,
        [run.status for run in repo.list_runs(db, session.root_id)],
    )
    session.updated_at = ctx.now
