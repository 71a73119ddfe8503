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


#: Characters of a failure's message and of its cli_text that a session's answer carries:
#: the end of the text (or the part around the verdict's evidence); the whole stored text is
#: at the failure's `message_url` / `cli_text_url`. 300 failures of a megabyte each made one
#: answer of 335 MB; now an answer holds at most ATTEMPTS_LIMIT_MAX times twice this.
TEXT_PART_CHARS = 8_192
#: Characters shown on either side of the verdict's evidence, when it lies before the end.
EVIDENCE_CONTEXT_CHARS = 2_000
#: Attempts per answer: by default, and at most (`attempts_limit`).
ATTEMPTS_LIMIT = 50
ATTEMPTS_LIMIT_MAX = 200


def session_view(
    db: Session,
    root_id: str,
    ctx: Context,
    *,
    attempts_limit: int = ATTEMPTS_LIMIT,
    attempts_offset: int = 0,
) -> JSON:
    """A session: a page of its attempts, newest first from `attempts_offset`, under their
    runs (with their failures' banners and a bounded part of their text), the mark, and the
    timeline. `attempts_next_offset` is where the next page starts, None on the last."""
    session = require_session(db, root_id, ctx, lock=False)
    page = repo.page_of_attempts(db, root_id, limit=attempts_limit + 1, offset=attempts_offset)
    more = len(page) > attempts_limit
    page = list(reversed(page[:attempts_limit]))  # oldest first, as the runs are
    keys = [(row.run_id, row.attempt) for row in page]
    failures = {(f.run_id, f.attempt): f for f in repo.list_failures(db, root_id, keys)}
    texts = repo.failure_text_parts(db, root_id, list(failures), TEXT_PART_CHARS)
    attempts: dict[str, list[JSON]] = {}
    for row in page:
        failure = failures.get((row.run_id, row.attempt))
        attempts.setdefault(row.run_id, []).append(
            {
                "attempt": row.attempt,
                "status": row.status,
                "started_at": iso(row.started_at),
                "completed_at": iso(row.completed_at),
                "failed_at": iso(row.failed_at),
                "failure": (
                    failure_json(failure, _shown_parts(db, failure, texts), ctx)
                    if failure is not None
                    else None
                ),
            }
        )
    return {
        **_session_summary(session, None),
        "runs": [
            {**run_json(run), "attempts": attempts.get(run.run_id, [])}
            for run in repo.runs_named(db, root_id, list(attempts))
        ],
        "attempts_next_offset": attempts_offset + attempts_limit if more else None,
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


def stored_text(
    db: Session, root_id: str, run_id: str, attempt: int, part: str, ctx: Context
) -> str:
    """A failure's whole stored `message` or `cli_text` ("" when it has none): at most the
    characters a report keeps (MESSAGE_LIMIT_CHARS, CLI_TEXT_LIMIT_CHARS)."""
    require_session(db, root_id, ctx, lock=False)
    text = repo.failure_text(db, root_id, run_id, attempt, part)
    if text is None:
        raise DomainError(
            "failure_not_found", f"no failure was reported for run {run_id!r}, attempt {attempt}"
        )
    return text


def list_sessions(
    db: Session, where: repo.SessionFilter, *, limit: int, offset: int, ctx: Context
) -> JSON:
    """A page of sessions, most recently changed first."""
    rows = repo.list_sessions(db, where, limit=limit + 1, offset=offset)
    page = [_session_summary(session, failure, ctx) for session, failure in rows[:limit]]
    return {"sessions": page, "next_offset": offset + limit if len(rows) > limit else None}


def _shown_parts(
    db: Session,
    failure: FailureRow,
    texts: dict[tuple[str, int], tuple[repo.TextPart, repo.TextPart | None]],
) -> tuple[repo.TextPart, repo.TextPart | None]:
    """The parts of a failure's message and cli_text an answer carries: their ends, unless
    the verdict's evidence lies in the message before its end: then the part around it (one
    more query, for this failure alone)."""
    message, cli_text = texts[(failure.run_id, failure.attempt)]
    evidence = (failure.verdict or {}).get("evidence") or {}
    start, end = evidence.get("start"), evidence.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return message, cli_text
    if 0 <= start <= end <= message.chars and start < message.start:
        ends_at = min(message.chars, end + EVIDENCE_CONTEXT_CHARS)
        begins_at = max(0, start - EVIDENCE_CONTEXT_CHARS, ends_at - TEXT_PART_CHARS)
        text = repo.failure_message_part(
            db, failure.root_id, failure.run_id, failure.attempt, begins_at, ends_at - begins_at
        )
        message = repo.TextPart(text, begins_at, message.chars)
    return message, cli_text


def failure_json(
    failure: FailureRow, parts: tuple[repo.TextPart, repo.TextPart | None], ctx: Context
) -> JSON:
    """A stored failure as a session shows it, with these parts of its texts."""
    message, cli_text = parts
    url = f"/api/agent/runs/{failure.root_id}/runs/{failure.run_id}/attempts/{failure.attempt}"
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
        "message": message.text,
        "message_from": message.start,
        "message_stored_chars": message.chars,
        "message_url": f"{url}/failure/message",
        "cli_text": cli_text.text if cli_text is not None else None,
        "cli_text_from": cli_text.start if cli_text is not None else None,
        "cli_text_stored_chars": cli_text.chars if cli_text is not None else None,
        "cli_text_url": f"{url}/failure/cli_text" if cli_text is not None else None,
        "conversation_saved": failure.conversation_saved,
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
