"""A host reports a failed attempt: store it once, parse it, clear or settle marks it overtakes."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session

from rewake.context import JSON, Context, ParseFn, iso
from rewake.db.models import FailureRow, MarkRow, RunRow, SessionRow
from rewake.errors import DomainError
from rewake.logs import log_event
from rewake.marks import lifecycle
from rewake.marks.holds import hold_after_resume
from rewake.marks.rules import auto_resume_refusal
from rewake.marks.service import facts_for
from rewake.parsers.verdict import Verdict
from rewake.reports.banners import banner_for
from rewake.reports.fields import FieldWarning, events_warnings
from rewake.reports.rules import (
    FailureKind,
    FailurePoint,
    check_observed_at,
    clean_json,
    clean_text,
    derive_failure_kind,
    is_newer,
    keep_last_part,
)
from rewake.sessions import repository as repo
from rewake.sessions.rules import session_state
from rewake.sessions.tombstones import refuse_if_deleted

logger = logging.getLogger("rewake.failures")


@dataclass(frozen=True, slots=True)
class FailureReport:
    """One failure report as the host sent it (docs/design.md#bodies, the failure body)."""

    root_id: str
    run_id: str
    attempt: int
    message: str
    observed_at: datetime
    zone: str | None = None
    provider: str | None = None
    session_id: str | None = None
    events: list[Any] | None = None
    failure_kind: str | None = None
    capture: str | None = None
    account_key: str | None = None
    halted: bool = False
    #: What the CLI showed about how the attempt ended (its error events' texts): stored and
    #: shown, never parsed (docs/design.md rule 8).
    cli_text: str | None = None
    #: False when the CLI saved no conversation for this attempt (nothing to resume in place);
    #: None when not known.
    conversation_saved: bool | None = None
    #: What reading the optional fields changed or dropped (rewake.reports.fields).
    warnings: tuple[FieldWarning, ...] = ()

    def fingerprint(self, events: list[Any] | None) -> str:
        """Equal for reports that say the same thing, however their JSON was spelled; `events`
        are the report's as stored (cleaned, so that any nesting can be hashed)."""
        body = {
            "attempt": self.attempt,
            "message": self.message,
            "observed_at": iso(self.observed_at) if self.observed_at.tzinfo else None,
            "zone": self.zone,
            "provider": self.provider,
            "session_id": self.session_id,
            "events": events,
            "failure_kind": self.failure_kind,
            "capture": self.capture,
            "account_key": self.account_key,
            "halted": self.halted,
        }
        if self.cli_text is not None:
            # Left out when absent, so that a report stored before the field existed keeps its
            # fingerprint; when sent, other words are another body (409), never silently lost.
            body["cli_text"] = self.cli_text
        if self.conversation_saved is not None:
            body["conversation_saved"] = self.conversation_saved  # left out when absent, as above
        text = json.dumps(body, sort_keys=True, ensure_ascii=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ReadReport:
    """A report checked, cleaned, cut to the limit and parsed: everything but the database."""

    report: FailureReport
    fingerprint: str
    message: str
    truncated: bool
    events: list[Any] | None
    verdict: Verdict
    failure_kind: FailureKind
    warnings: tuple[FieldWarning, ...]


def read_report(report: FailureReport, *, parse: ParseFn, now: datetime) -> ReadReport:
    """The pure half of a report, done before any lock is taken (parsing is the costly part)."""
    check_observed_at(report.observed_at, now)
    message, truncated = keep_last_part(clean_text(report.message))
    events, warnings = None, list(report.warnings)
    if report.events is not None:
        cleaned = clean_json(report.events)
        events = cleaned.value
        warnings += events_warnings(cleaned)
    verdict = _parse(parse, _parse_input(message, events), report)
    return ReadReport(
        report=report,
        fingerprint=report.fingerprint(events),
        message=message,
        truncated=truncated,
        events=events,
        verdict=verdict,
        failure_kind=derive_failure_kind(report.failure_kind, verdict.kind, report.halted),
        warnings=tuple(warnings),
    )


def report_failure(
    db: Session, report: FailureReport, *, parse: ParseFn, ctx: Context
) -> tuple[JSON, bool]:
    """Read and store a failure report: `store_failure(read_report(...))`."""
    return store_failure(db, read_report(report, parse=parse, now=ctx.now), ctx=ctx)


def store_failure(db: Session, read: ReadReport, *, ctx: Context) -> tuple[JSON, bool]:
    """Store a read report (once) and return the answer, and whether it was new.

    What is known already is not asked again: a session created by this report has no runs,
    failures or marks yet, and is created as the report leaves it."""
    report = read.report
    session, created = _locked_or_new_session(db, report, ctx)
    earlier = None if created else _earlier_answer(db, read)
    if earlier is not None:
        repo.note_host_seen(session, ctx.now)
        return earlier, False
    runs, marks = ({}, []) if created else _runs_and_marks(db, report)
    point = FailurePoint(report.run_id, report.attempt, report.observed_at)
    _clear_overtaken_mark(db, marks, point, ctx)
    lifecycle.settle_by_attempt(
        db, marks, report.run_id, report.attempt, ctx, source="reported failed",
        failure_kind=read.failure_kind,
    )  # fmt: skip
    becomes_current = created or _becomes_current(db, session, point)
    run = _move_run_and_attempt(db, runs, read, ctx)
    _move_session(db, session, runs, point if becomes_current else None, ctx)
    failure = _failure_row(read, ctx)
    # docs/design.md#accounts: a resumed attempt that soon reports a new limit holds its account.
    held = hold_after_resume(db, failure, marks, ctx, window_s=ctx.hold_window_s)
    failure.answer = _answer(session, failure, run, ctx) | {
        "resumed_into_live_limit": held.resumed_into_live_limit,
        "held_marks": held.held_mark_ids,
        "warnings": [warning.to_json() for warning in read.warnings],
    }
    repo.add(db, failure)  # with its answer: one INSERT, written with the transaction
    _append_reported(db, read, failure, ctx)
    return failure.answer, True


def _runs_and_marks(db: Session, report: FailureReport) -> tuple[dict[str, RunRow], list[MarkRow]]:
    """The session's runs by id, and every mark the report may settle or be held by."""
    runs = {run.run_id: run for run in repo.list_runs(db, report.root_id)}
    marks = lifecycle.marks_a_report_concerns(db, report.root_id, report.run_id, report.attempt)
    return runs, marks


def _append_reported(db: Session, read: ReadReport, failure: FailureRow, ctx: Context) -> None:
    """The report's entry in the session's timeline."""
    report = read.report
    repo.append_timeline(
        db,
        report.root_id,
        ctx.now,
        "failure_reported",
        actor=ctx.actor,
        run_id=report.run_id,
        attempt=report.attempt,
        detail={
            "failure_kind": read.failure_kind,
            "verdict_kind": read.verdict.kind,
            "reset_at": failure.verdict["reset_at"],
            "refusal": failure.refusal_code,
            "truncated": read.truncated,
            "warnings": [f"{warning.field}: {warning.code}" for warning in read.warnings],
        },
    )


def _move_session(
    db: Session,
    session: SessionRow,
    runs: dict[str, RunRow],
    current: FailurePoint | None,
    ctx: Context,
) -> None:
    """The session's one UPDATE: its host was seen, its state follows its runs, and `current`
    (when given) is its current failure from now on."""
    changes: dict[str, Any] = {
        "host_seen_at": repo.host_seen_at(session, ctx.now),
        "state": session_state(
            session.cancelled_at is not None, [run.status for run in runs.values()]
        ),
        "updated_at": ctx.now,
    }
    if current is not None:
        changes |= {"current_run_id": current.run_id, "current_attempt": current.attempt}
    for name, value in changes.items():
        if getattr(session, name) != value:  # an unchanged session is not written
            setattr(session, name, value)


def _locked_or_new_session(
    db: Session, report: FailureReport, ctx: Context
) -> tuple[SessionRow, bool]:
    """The report's session, locked; created on first sight (410 while a tombstone is kept).

    A session this report creates is created as the report leaves it (its one run paused,
    this failure current, its host seen now), so that `_move_session` finds nothing to
    change; were these values wrong, it would still write the right ones."""
    session = repo.lock_session(db, report.root_id)
    if session is not None:
        return session, False
    refuse_if_deleted(db, report.root_id, ctx)
    first = {
        "state": session_state(False, ["paused"]),
        "host_seen_at": ctx.now,
        "current_run_id": report.run_id,
        "current_attempt": report.attempt,
    }
    return repo.ensure_session(db, report.root_id, ctx.now, first)


def _earlier_answer(db: Session, read: ReadReport) -> JSON | None:
    """The answer stored for the same report sent before; 409 when that attempt was reported
    with another body; None when it was never reported."""
    report = read.report
    stored = repo.stored_answer(db, report.root_id, report.run_id, report.attempt)
    if stored is None:
        return None
    if stored[0] != read.fingerprint:
        raise DomainError(
            "attempt_already_reported",
            f"attempt {report.attempt} of run {report.run_id!r} was reported with another body",
        )
    return stored[1]


def _failure_row(read: ReadReport, ctx: Context) -> FailureRow:
    report, verdict = read.report, read.verdict
    return FailureRow(
        root_id=report.root_id,
        run_id=report.run_id,
        attempt=report.attempt,
        message=read.message,
        message_chars=len(report.message),
        truncated=read.truncated,
        verdict=verdict.to_json(),
        verdict_kind=verdict.kind,
        provider=verdict.provider or report.provider,
        refusal_code=verdict.refusal.code if verdict.refusal else None,
        reset_at=verdict.reset_at,
        resolution_s=verdict.resolution_s,
        native_auto_continue=verdict.native_auto_continue,
        failure_kind=read.failure_kind,
        failure_kind_stated=report.failure_kind is not None,
        observed_at=report.observed_at,
        received_at=ctx.now,
        zone=clean_text(report.zone) if report.zone else None,
        cli_session_id=clean_text(report.session_id) if report.session_id else None,
        account_key=clean_text(report.account_key) if report.account_key else None,
        halted=report.halted,
        capture=report.capture,
        events=read.events,
        cli_text=clean_text(report.cli_text) if report.cli_text else None,
        conversation_saved=report.conversation_saved,
        body_hash=read.fingerprint,
        answer={},
        reported_by=ctx.actor,
    )


def failure_banner(failure: FailureRow, ctx: Context) -> JSON:
    return banner_for(
        failure.failure_kind,
        failure.verdict,
        halted=failure.halted,
        reset_at=failure.reset_at,
        now=ctx.now,
        display_zone=ctx.display_zone,
    ).to_json()


def _parse(parse: ParseFn, text: str, report: FailureReport) -> Verdict:
    try:
        return parse(
            text, observed_at=report.observed_at, zone=report.zone, provider=report.provider
        )
    except Exception:
        # The report is kept whatever the parser makes of it; the failure is logged to be fixed.
        log_event(
            logger,
            "parser_failed",
            logging.ERROR,
            root_id=report.root_id,
            run_id=report.run_id,
            attempt=report.attempt,
        )
        logger.exception("parser_failed")
        return Verdict(kind="other_failure")


def _parse_input(message: str, events: list[Any] | None) -> str:
    """Structured events as JSON lines, then the CLI output: what the parser reads."""
    if not events:
        return message
    lines = [item if isinstance(item, str) else json.dumps(item) for item in events]
    return "\n".join([*lines, message])


def _becomes_current(db: Session, session: SessionRow, point: FailurePoint) -> bool:
    """Whether the failure at `point` is the session's current one from now on: the session
    has none yet, or `point` is newer than it."""
    if session.current_run_id is None or session.current_attempt is None:
        return True
    newer = _newer_than_stored(
        db, point, session.root_id, session.current_run_id, session.current_attempt
    )
    return newer is None or newer  # a current failure that was never stored counts for none


def _newer_than_stored(
    db: Session, point: FailurePoint, root_id: str, run_id: str, attempt: int
) -> bool | None:
    """Whether `point` is newer than the stored failure (run_id, attempt); None when that one
    was never stored. Within one run attempts are ordered by their number alone (see
    `is_newer`), so the stored failure's observed_at is read only for another run's."""
    if run_id == point.run_id:
        # The session's current failure and a mark's failure are always stored ones.
        return point.attempt > attempt
    observed_at = repo.failure_observed_at(db, root_id, run_id, attempt)
    if observed_at is None:
        return None
    return is_newer(point, FailurePoint(run_id, attempt, observed_at))


def _clear_overtaken_mark(
    db: Session, marks: list[MarkRow], point: FailurePoint, ctx: Context
) -> None:
    """An armed or claimed mark is cleared (new_failure) by a report newer than its failure."""
    live = lifecycle.clearable(marks)
    if live is None:
        return
    if _newer_than_stored(db, point, live.root_id, live.run_id, live.attempt):
        lifecycle.clear_for(db, live.root_id, "new_failure", ctx, live=live)


def _move_run_and_attempt(
    db: Session, runs: dict[str, RunRow], read: ReadReport, ctx: Context
) -> RunRow:
    """The run pauses at the reported attempt (unless a later one is known); the attempt failed.

    A new run and the attempt are written at once, in this order: the failure refers to them."""
    report = read.report
    run = runs.get(report.run_id)
    if run is None:
        run = RunRow(
            root_id=report.root_id, run_id=report.run_id, status="paused",
            current_attempt=report.attempt, created_at=ctx.now, updated_at=ctx.now,
        )  # fmt: skip
        runs[report.run_id] = run
        repo.add_now(db, run)  # now: the attempt's upsert below refers to the run
    elif report.attempt >= run.current_attempt:
        run.current_attempt, run.status, run.updated_at = report.attempt, "paused", ctx.now
    repo.mark_attempt_failed(db, report.root_id, report.run_id, report.attempt, ctx.now)
    return run


def _answer(session: SessionRow, failure: FailureRow, run: RunRow, ctx: Context) -> JSON:
    is_current = (session.current_run_id, session.current_attempt) == (
        failure.run_id,
        failure.attempt,
    )
    if is_current:
        # A failure just stored has no marks yet.
        refusal = auto_resume_refusal(
            facts_for(session, failure, run, resumed_before=False), despite_native=False
        )
    else:
        refusal = DomainError(
            "not_paused_on_provider_limit", "a newer failure of the session is current"
        )
    return {
        "root_id": failure.root_id,
        "run_id": failure.run_id,
        "attempt": failure.attempt,
        "failure_kind": failure.failure_kind,
        "halted": failure.halted,
        "truncated": failure.truncated,
        "message_chars": failure.message_chars,
        "received_at": iso(failure.received_at),
        "current": is_current,
        "verdict": failure.verdict,
        "banner": failure_banner(failure, ctx),
        "auto_resume": {
            "available": refusal is None,
            "code": refusal.code if refusal else None,
            "detail": refusal.detail if refusal else None,
        },
    }
