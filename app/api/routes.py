"""The session API: thin routes that call one domain function each and own the commit.

Writes run through `Database.write` (one transaction, committed, on the writer threads);
reads are plain `def` routes on the thread pool.
"""

from __future__ import annotations

import logging
from typing import Annotated, TypeVar

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from rewake.api import answers
from rewake.api.answers import Answer
from rewake.api.deps import AppServices, Reader, RequestContext
from rewake.api.json_body import TolerantJSONRoute
from rewake.api.openapi import problems
from rewake.api.schemas import (
    AttemptBody,
    AutoResumeBody,
    ResolveBody,
    RootId,
    RunId,
)
from rewake.context import JSON
from rewake.logs import log_event
from rewake.marks import service as marks
from rewake.reports import failures
from rewake.reports.body import FailureBody
from rewake.reports.rules import FailureKind, clean_text
from rewake.session_service import actions
from rewake.session_service import reads as session_views
from rewake.sessions.repository import SessionFilter, refuse_reserved

logger = logging.getLogger("rewake.api")
# Failure reports nested too deep for Python's JSON decoder are still read (rewake.api.json_body).
router = APIRouter(prefix="/api/agent/runs", tags=["sessions"], route_class=TolerantJSONRoute)

#: Longer CLI output is parsed on a worker thread, not on the event loop.
INLINE_PARSE_CHARS = 16_384


#: A session's routes answer 404 for a root_id never seen, 410 while a deleted one's tombstone
#: is kept; a malformed root_id (or run_id) is 422.
ON_SESSION = ("invalid_request", "session_not_found", "session_deleted")
#: Why auto-resume cannot be armed for the session's current failure (rewake.marks.rules).
ARM_REFUSALS = (
    "session_cancelled",
    "not_paused_on_provider_limit",
    "attempt_already_resumed",
    "reset_not_stated",
    "native_auto_continue",
    "conversation_not_saved",
)


A = TypeVar("A", bound=Answer)


def _answer(model: type[A], content: JSON) -> A:
    """The domain's answer as the route's declared model, which FastAPI then writes: an answer
    that does not fit its model (a field missing, unknown or of the wrong type) fails here, a
    500, instead of reaching a host."""
    return model.model_validate(content)


def _refuse_reserved(root_id: str) -> None:
    """Before the CLI text is parsed or the database touched; the domain refuses the word too
    (`ensure_session`), for the runner's local store."""
    refuse_reserved(root_id)


@router.get(
    "/tombstones/{root_id}",
    summary="What a deleted session was",
    response_model=answers.Tombstone,
    responses=problems("invalid_request", "tombstone_not_found"),
)
def get_tombstone(root_id: RootId, ctx: RequestContext, db: Reader) -> answers.Tombstone:
    return _answer(answers.Tombstone, session_views.tombstone_view(db, root_id, ctx))


@router.post(
    "/{root_id}/runs/{run_id}/failures",
    status_code=201,
    summary="Report a failed attempt (201 when new, 200 for the same report again)",
    response_description="a new report: what rewake made of it",
    response_model=answers.FailureAnswer,
    responses={
        200: {"model": answers.FailureAnswer, "description": "the same report again: as stored"},
        **problems(
            "observed_at_naive",
            "observed_in_future",
            "attempt_already_reported",
            "session_deleted",
            body=True,
        ),
    },
)
async def report_failure(
    root_id: RootId,
    run_id: RunId,
    body: FailureBody,
    ctx: RequestContext,
    services: AppServices,
    response: Response,
) -> answers.FailureAnswer | JSONResponse:
    _refuse_reserved(root_id)
    report = body.to_report(root_id, run_id)
    if len(report.message) > INLINE_PARSE_CHARS or report.events:
        read = await run_in_threadpool(
            failures.read_report, report, parse=services.parse, now=ctx.now
        )
    else:  # a banner-sized text parses in less time than a thread hop costs
        read = failures.read_report(report, parse=services.parse, now=ctx.now)
    answer, created = await services.database.write(
        lambda db: failures.store_failure(db, read, ctx=ctx)
    )
    if created:
        services.metrics.failure_stored(answer)
        log_event(
            logger, "failure_reported", root_id=root_id, run_id=run_id, attempt=body.attempt,
            kind=answer["failure_kind"], reset_at=answer["verdict"].get("reset_at"),
        )  # fmt: skip
    if not created:
        # The same report again gets the answer stored when it was new, as stored: it was
        # checked against its model then, and an answer stored by an earlier rewake (before a
        # field was added) is still that report's answer, never a 500.
        return JSONResponse(answer, status_code=200)
    response.status_code = 201
    return _answer(answers.FailureAnswer, answer)


@router.post(
    "/{root_id}/runs/{run_id}/attempts",
    summary="An attempt started or completed",
    response_model=answers.AttemptAnswer,
    responses=problems("session_deleted", body=True),
)
async def record_attempt(
    root_id: RootId, run_id: RunId, body: AttemptBody, ctx: RequestContext, services: AppServices
) -> answers.AttemptAnswer:
    _refuse_reserved(root_id)
    answer = await services.database.write(
        lambda db: actions.record_attempt(db, root_id, run_id, body.attempt, body.status, ctx)
    )
    return _answer(answers.AttemptAnswer, answer)


@router.post(
    "/{root_id}/runs/{run_id}/resume",
    summary="A manual resume happened",
    response_model=answers.ResumeAnswer,
    responses=problems(*ON_SESSION, "run_not_found"),
)
async def manual_resume(
    root_id: RootId, run_id: RunId, ctx: RequestContext, services: AppServices
) -> answers.ResumeAnswer:
    answer = await services.database.write(
        lambda db: actions.manual_resume(db, root_id, run_id, ctx)
    )
    log_event(logger, "manual_resume", root_id=root_id, run_id=run_id, actor=ctx.actor)
    return _answer(answers.ResumeAnswer, answer)


@router.put(
    "/{root_id}/auto-resume",
    summary="Turn auto-resume on or off",
    response_model=answers.Mark,
    responses=problems(*ON_SESSION, "recovery_in_progress", *ARM_REFUSALS, body=True),
)
async def put_auto_resume(
    root_id: RootId, body: AutoResumeBody, ctx: RequestContext, services: AppServices
) -> answers.Mark:
    mark = await services.database.write(
        lambda db: marks.set_auto_resume(
            db,
            root_id,
            enabled=body.enabled,
            despite_native=body.despite_native,
            ctx=ctx,
            fresh_if_missing=body.fresh_if_missing,
        )
    )
    log_event(
        logger, "auto_resume_set", root_id=root_id, enabled=body.enabled, state=mark["state"],
        actor=ctx.actor,
    )  # fmt: skip
    return _answer(answers.Mark, mark)


@router.get(
    "/{root_id}/auto-resume",
    summary="The session's mark",
    response_model=answers.Mark,
    responses=problems(*ON_SESSION),
)
def get_auto_resume(root_id: RootId, ctx: RequestContext, db: Reader) -> answers.Mark:
    return _answer(answers.Mark, marks.mark_view(db, root_id, ctx))


@router.post(
    "/{root_id}/auto-resume/resolve",
    summary="Settle an uncertain mark",
    response_model=answers.Mark,
    responses=problems(
        *ON_SESSION, "mark_not_found", "mark_not_uncertain", "mark_ambiguous", body=True
    ),
)
async def resolve_auto_resume(
    root_id: RootId, body: ResolveBody, ctx: RequestContext, services: AppServices
) -> answers.Mark:
    mark = await services.database.write(
        lambda db: marks.resolve_mark(
            db, root_id, body.outcome, ctx, run_id=body.run_id, attempt=body.attempt
        )
    )
    log_event(
        logger, "mark_resolved", root_id=root_id, run_id=mark["run_id"], attempt=mark["attempt"],
        outcome=body.outcome, actor=ctx.actor,
    )  # fmt: skip
    return _answer(answers.Mark, mark)


@router.post(
    "/{root_id}/cancel",
    summary="Cancel the session (final)",
    response_model=answers.Session,
    responses=problems("invalid_request", "session_deleted"),
)
async def cancel(root_id: RootId, ctx: RequestContext, services: AppServices) -> answers.Session:
    _refuse_reserved(root_id)
    view = await services.database.write(lambda db: actions.cancel_session(db, root_id, ctx))
    log_event(logger, "session_cancelled", root_id=root_id, actor=ctx.actor)
    return _answer(answers.Session, view)


@router.delete(
    "/{root_id}",
    summary="Delete a finished or cancelled session",
    response_model=answers.Tombstone,
    responses=problems(*ON_SESSION, "session_active", "recovery_in_progress"),
)
async def delete(root_id: RootId, ctx: RequestContext, services: AppServices) -> answers.Tombstone:
    tombstone = await services.database.write(lambda db: actions.delete_session(db, root_id, ctx))
    log_event(logger, "session_deleted", root_id=root_id, actor=ctx.actor)
    return _answer(answers.Tombstone, tombstone)


@router.get(
    "/{root_id}",
    summary="A session: runs, attempts, failures, mark, timeline",
    response_model=answers.Session,
    responses=problems(*ON_SESSION),
)
def get_session(
    root_id: RootId,
    ctx: RequestContext,
    db: Reader,
    attempts_limit: Annotated[
        int,
        Query(
            ge=1,
            le=session_views.ATTEMPTS_LIMIT_MAX,
            description="attempts in this answer, newest first (their runs with them)",
        ),
    ] = session_views.ATTEMPTS_LIMIT,
    attempts_offset: Annotated[
        int,
        Query(
            ge=0,
            le=1_000_000,
            description="attempts skipped, newest first: the answer's attempts_next_offset",
        ),
    ] = 0,
) -> answers.Session:
    view = session_views.session_view(
        db, root_id, ctx, attempts_limit=attempts_limit, attempts_offset=attempts_offset
    )
    return _answer(answers.Session, view)


@router.get(
    "/{root_id}/runs/{run_id}/attempts/{attempt}/failure/{part}",
    summary="The whole stored text of a failure: its message or its cli_text",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        **problems(*ON_SESSION, "failure_not_found"),
    },
)
def failure_text(
    root_id: RootId,
    run_id: RunId,
    attempt: Annotated[int, Path(ge=0, le=1_000_000_000)],
    part: Annotated[str, Path(pattern="^(message|cli_text)$")],
    ctx: RequestContext,
    db: Reader,
) -> PlainTextResponse:
    return PlainTextResponse(session_views.stored_text(db, root_id, run_id, attempt, part, ctx))


@router.get(
    "",
    summary="Sessions, most recently changed first",
    response_model=answers.SessionList,
    responses=problems("invalid_request"),
)
def list_sessions(
    ctx: RequestContext,
    db: Reader,
    state: Annotated[str | None, Query(pattern="^(running|paused|finished|cancelled)$")] = None,
    mark_state: Annotated[str | None, Query(pattern="^[a-z_]{1,16}$")] = None,
    failure_kind: FailureKind | None = None,
    provider: Annotated[str | None, Query(pattern="^(claude|codex|gemini)$")] = None,
    account_key: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> answers.SessionList:
    where = SessionFilter(
        state=state,
        mark_state=mark_state,
        failure_kind=failure_kind,
        provider=provider,
        account_key=clean_text(account_key) if account_key is not None else None,
    )
    page = session_views.list_sessions(db, where, limit=limit, offset=offset, ctx=ctx)
    return _answer(answers.SessionList, page)
