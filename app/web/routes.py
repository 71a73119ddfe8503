"""The page routes: the sessions list at `/` and a session's page at `/sessions/{root_id}`.

They call the same domain functions as the JSON API, under the same auth (`rewake.api.deps.Auth`,
which also reads the sign-in cookie for these paths). Every refusal is an HTML page that says
why, with the API's status and code; query parameters are read by hand so that bad input is
such a page too, not a problem+json body.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from rewake.api.deps import AppServices, Reader, RequestContext
from rewake.errors import DomainError
from rewake.ids import ID_HELP, ID_RE
from rewake.marks import service as marks
from rewake.parsers.verdict import PROVIDERS
from rewake.reports.rules import clean_text
from rewake.session_service import reads as session_views
from rewake.sessions.repository import SessionFilter
from rewake.web import cards as views
from rewake.web import detail, fleet
from rewake.web.render import Times, error_page, page

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 50
STATES = ("paused", "running", "finished", "cancelled")
MAX_OFFSET = 1_000_000
MAX_ACCOUNT_KEY = 200


class BadQuery(Exception):
    """A query parameter the page cannot use; `detail` says which and why."""


@router.get("/", response_class=HTMLResponse)
def sessions_page(
    request: Request, ctx: RequestContext, db: Reader, services: AppServices
) -> HTMLResponse:
    try:
        where, offset = _list_query(request)
    except BadQuery as bad:
        return error_page(request, 422, "invalid_request", str(bad))
    listing = session_views.list_sessions(db, where, limit=PAGE_SIZE, offset=offset, ctx=ctx)
    loaded = [
        (summary, marks.mark_view(db, summary["root_id"], ctx)) for summary in listing["sessions"]
    ]
    delay = services.settings.resume_delay_s
    cards = [views.card(summary, mark, resume_delay_s=delay) for summary, mark in loaded]
    kept = {"provider": where.provider, "account_key": where.account_key}
    return page(
        request,
        "list.html",
        {
            "times": Times(ctx.now, ctx.display_zone),
            "cards": cards,
            "fleet": fleet.fleet(loaded, ctx.now),
            "width": fleet.WIDTH,
            "label_w": fleet.LABEL_W,
            "state": where.state,
            "states": STATES,
            "offset": offset,
            "filtered": where != SessionFilter(),
            "page_link": lambda at: _list_link(where.state, at, kept),
            "state_link": lambda state: _list_link(state, 0, kept),
            "next_offset": listing["next_offset"],
            "previous_offset": max(0, offset - PAGE_SIZE) if offset else None,
        },
    )


def _list_query(request: Request) -> tuple[SessionFilter, int]:
    """The list's filters (as `GET /api/agent/runs` takes them) and offset, checked."""
    params = request.query_params
    state = params.get("state") or None
    if state is not None and state not in STATES:
        raise BadQuery(f"state {state!r} is not one of {', '.join(STATES)}")
    provider = params.get("provider") or None
    if provider is not None and provider not in PROVIDERS:
        raise BadQuery(f"provider {provider!r} is not one of {', '.join(PROVIDERS)}")
    account_key = params.get("account_key") or None
    if account_key is not None and len(account_key) > MAX_ACCOUNT_KEY:
        raise BadQuery(f"account_key is longer than {MAX_ACCOUNT_KEY} characters")
    raw_offset = params.get("offset") or "0"
    if not raw_offset.isdigit() or int(raw_offset) > MAX_OFFSET:
        raise BadQuery(f"offset {raw_offset[:40]!r} is not a whole number from 0 to {MAX_OFFSET}")
    where = SessionFilter(
        state=state,
        provider=provider,
        account_key=clean_text(account_key) if account_key is not None else None,
    )
    return where, int(raw_offset)


def _list_link(state: str | None, offset: int, kept: dict[str, str | None]) -> str:
    """The list's address with these filters and offset."""
    query = {"state": state, **kept, "offset": offset or None}
    return "/?" + urlencode({key: value for key, value in query.items() if value is not None})


@router.get("/sessions/{root_id}", response_class=HTMLResponse)
def session_page(
    root_id: str, request: Request, ctx: RequestContext, db: Reader, services: AppServices
) -> HTMLResponse:
    times = Times(ctx.now, ctx.display_zone)
    if not ID_RE.fullmatch(root_id):
        detail_text = f"no session can be called {root_id[:80]!r}: a root_id is {ID_HELP}"
        return error_page(request, 404, "session_not_found", detail_text)
    raw_offset = request.query_params.get("attempts_offset") or "0"
    if not raw_offset.isdigit() or int(raw_offset) > MAX_OFFSET:
        detail_text = (
            f"attempts_offset {raw_offset[:40]!r} is not a whole number from 0 to {MAX_OFFSET}"
        )
        return error_page(request, 422, "invalid_request", detail_text)
    try:
        view = session_views.session_view(db, root_id, ctx, attempts_offset=int(raw_offset))
    except DomainError as refused:
        if refused.code == "session_deleted":
            return _tombstone_page(request, db, root_id, ctx, times)
        return error_page(request, refused.status, refused.code, refused.detail)
    summary = {**view, "failure": detail.current_failure(view)}
    return page(
        request,
        "session.html",
        {
            "times": times,
            "card": views.card(
                summary, view["mark"], resume_delay_s=services.settings.resume_delay_s
            ),
            "view": view,
            "cli_box": detail.cli_box,
            "banner_of": lambda failure: views.banner_view(detail.failure_summary(failure)),
            "timeline": detail.timeline(view["timeline"]),
        },
    )


@router.get("/sessions/{root_id}/runs/{run_id}/attempts/{attempt}/failure/{part}")
def failure_text(
    root_id: str,
    run_id: str,
    attempt: str,
    part: str,
    request: Request,
    ctx: RequestContext,
    db: Reader,
) -> Response:
    """A failure's whole stored text, which the session page shows a part of (the same as
    the API's route of this path under /api/agent/runs, with the page's sign-in cookie)."""
    known = ID_RE.fullmatch(root_id) and ID_RE.fullmatch(run_id) and attempt.isdigit()
    if not known or part not in ("message", "cli_text") or int(attempt) > 1_000_000_000:
        return error_page(request, 404, "not_found", "no such failure text")
    try:
        text = session_views.stored_text(db, root_id, run_id, int(attempt), part, ctx)
    except DomainError as refused:
        return error_page(request, refused.status, refused.code, refused.detail)
    return PlainTextResponse(text)


def _tombstone_page(
    request: Request, db: Reader, root_id: str, ctx: RequestContext, times: Times
) -> HTMLResponse:
    """What a deleted session was (410: the session is gone, its record is kept)."""
    try:
        tombstone = session_views.tombstone_view(db, root_id, ctx)
    except DomainError as refused:  # purged between the two reads
        return error_page(request, refused.status, refused.code, refused.detail)
    return page(request, "tombstone.html", {"times": times, "tombstone": tombstone}, status=410)
