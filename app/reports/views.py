"""What the API, the page and the runner show of a session: the session with its runs,
failures, mark and timeline; the list of sessions; a tombstone."""

from __future__ import annotations

from sqlmodel import Session

from rewake.context import JSON, Context, iso
from rewake.db.models import FailureRow, RunRow, SessionRow, TombstoneRow
from rewake.errors import DomainError
from rewake.marks.service import (
    mark_view,
    require_session,
)
from rewake.reports.failures import failure_banner
from rewake.sessions import repository as repo
from rewake.sessions.tombstones import kept_tombstone


def tombstone_view(db: Session, root_id: str, ctx: Context) -> JSON:
    """A deleted session's tombstone, while within the retention."""
    row = kept_tombstone(db, root_id, ctx)
    if row is None:
        raise DomainError("tombstone_not_found", f"no deleted session {root_id!r} is on record")
    return tombstone_json(row)


def session_view(db: Session, root_id: str, ctx: Context) -> JSON:
    """A session: runs with attempts and failures (with banners), mark, and timeline."""
    session = require_session(db, root_id, ctx, lock=False)
    failures = {(f.run_id, f.attempt): f for f in repo.list_failures(db, root_id)}
    attempts: dict[str, list[JSON]] = {}
    for row in repo.list_attempts(db, root_id):
        failure = failures.get((row.run_id, row.attempt))
        attempts.setdefault(row.run_id, []).append(
            {
                "attempt": row.attempt,
                "status": row.status,
                "started_at": iso(row.started_at),
                "completed_at": iso(row.completed_at),
                "failed_at": iso(row.failed_at),
                "failure": failure_json(failure, ctx) if failure is not None else None,
            }
        )
    return {
        **_session_summary(session, None),
        "runs": [
            {**run_json(run), "attempts": attempts.get(run.run_id, [])}
            for run in repo.list_runs(db, root_id)
        ],
        "mark": mark_view(db, root_id, ctx),
        "timeline": [
            {
                "id": entry.id,
                "at": iso(entry.at),
                "event": entry.event,
                "actor": entry.actor,
                "run_id": entry.run_id,
                "attempt": entry.attempt,
                "mark_id": entry.mark_id,
                "detail": entry.detail,
            }
            for entry in repo.list_timeline(db, root_id)
        ],
    }


def list_sessions(
    db: Session, where: repo.SessionFilter, *, limit: int, offset: int, ctx: Context
) -> JSON:
    """A page of sessions, most recently changed first."""
    rows = repo.list_sessions(db, where, limit=limit + 1, offset=offset)
    page = [_session_summary(session, failure, ctx) for session, failure in rows[:limit]]
    return {"sessions": page, "next_offset": offset + limit if len(rows) > limit else None}


def failure_json(failure: FailureRow, ctx: Context) -> JSON:
    return {
        "run_id": failure.run_id,
        "attempt": failure.attempt,
        "failure_kind": failure.failure_kind,
        "failure_kind_stated": failure.failure_kind_stated,
        "halted": failure.halted,
        "observed_at": iso(failure.observed_at),
        "received_at": iso(failure.received_at),
        "zone": failure.zone,
        "provider": failure.provider,
        "session_id": failure.cli_session_id,
        "account_key": failure.account_key,
        "capture": failure.capture,
        "truncated": failure.truncated,
        "message_chars": failure.message_chars,
        "message": failure.message,
        "cli_text": failure.cli_text,
        "verdict": failure.verdict,
        "banner": failure_banner(failure, ctx),
        "warnings": failure.answer.get("warnings", []),
        "reported_by": failure.reported_by,
    }


def _session_summary(
    session: SessionRow, failure: FailureRow | None, ctx: Context | None = None
) -> JSON:
    summary: JSON = {
        "root_id": session.root_id,
        "state": session.state,
        "created_at": iso(session.created_at),
        "updated_at": iso(session.updated_at),
        "cancelled_at": iso(session.cancelled_at),
        "cancelled_by": session.cancelled_by,
        "current": (
            {"run_id": session.current_run_id, "attempt": session.current_attempt}
            if session.current_run_id is not None
            else None
        ),
    }
    if ctx is not None:
        summary["failure"] = (
            {
                "failure_kind": failure.failure_kind,
                "provider": failure.provider,
                "reset_at": iso(failure.reset_at),
                "account_key": failure.account_key,
                "banner": failure_banner(failure, ctx),
            }
            if failure is not None
            else None
        )
    return summary


def run_json(run: RunRow) -> JSON:
    return {
        "run_id": run.run_id,
        "status": run.status,
        "current_attempt": run.current_attempt,
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
    }


def tombstone_json(row: TombstoneRow) -> JSON:
    return {
        "root_id": row.root_id,
        "deleted_at": iso(row.deleted_at),
        "deleted_by": row.deleted_by,
        "summary": row.summary,
    }
