"""What routes are given: the services, who acts (bearer auth), the request's Context and
database sessions. The clock is read here, once per request."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session
from starlette.types import ASGIApp, Receive, Scope, Send

from rewake.api.metrics import Metrics
from rewake.api.problems import problem
from rewake.db import Database
from rewake.domain.context import Context, ParseFn
from rewake.domain.errors import DomainError
from rewake.settings import Settings, is_loopback
from rewake.web import gate
from rewake.web.headers import harden_pages

#: Who acts when no token is configured (loopback only).
LOCAL_ACTOR = "local"


@dataclass(frozen=True, slots=True)
class Services:
    """Everything a request may use, built once per app."""

    settings: Settings
    database: Database
    clock: Callable[[], datetime]
    parse: ParseFn
    metrics: Metrics
    display_zone: tzinfo | None


async def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


Svc = Annotated[Services, Depends(services)]


def authenticate(settings: Settings, client_host: str, authorization: str) -> str:
    """Who acts: the name of the bearer token presented; with no token configured, only
    loopback callers are let in, as `local`. DomainError 401/403 otherwise."""
    tokens = settings.tokens
    if not tokens:
        if not is_loopback(client_host):
            raise DomainError(
                "loopback_only",
                "no REWAKE_API_TOKENS configured: only this machine may call the API",
            )
        return LOCAL_ACTOR
    scheme, _, presented = authorization.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise DomainError("unauthorized", "send Authorization: Bearer <token>")
    given = presented.strip().encode()
    matched = None
    for name, secret in tokens.items():
        # Compare against every secret, so the time taken says nothing about which matched.
        if hmac.compare_digest(secret.encode(), given):
            matched = name
    if matched is None:
        raise DomainError("unauthorized", "the bearer token matches no configured token")
    return matched


class Auth:
    """Bearer auth on every route but /healthz (and the web page's sign-in form and static
    files), before the body is read or parsed. The web page's sign-in cookie counts as the
    bearer token only where `rewake.web.gate` says a cross-site request cannot use it. With no
    token configured, only loopback callers that name a loopback host are served.

    Being outermost, it also adds the page headers (`rewake.web.headers`) to every HTML answer,
    its own refusals included."""

    OPEN_PATHS = frozenset({"/healthz"})

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http":
            send = harden_pages(send)
        if scope["type"] != "http" or path in self.OPEN_PATHS or gate.is_open(path):
            await self.app(scope, receive, send)
            return
        svc: Services = scope["app"].state.services
        headers = dict(scope.get("headers", ()))
        client = scope.get("client") or ("", 0)
        method = scope.get("method", "GET")
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        try:
            if not svc.settings.tokens and gate.is_cross_site_write(method, headers):
                raise DomainError("loopback_only", "a page on another site cannot act here")
            if not authorization:
                authorization = gate.cookie_authorization(method, path, headers)
            who = authenticate(svc.settings, client[0], authorization)
            if not svc.settings.tokens:
                # DNS rebinding: another site's name pointed at 127.0.0.1 (see gate).
                gate.refuse_foreign_host(headers)
        except DomainError as refused:
            svc.metrics.problem(refused.code)
            if gate.is_page(path):
                response = gate.page_refusal(refused, scope)
            else:
                response = problem(refused.status, refused.code, refused.detail)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["actor"] = who
        await self.app(scope, receive, send)


async def actor(request: Request) -> str:
    """Set by `Auth` for every route that needs it."""
    who: str = request.state.actor
    return who


Actor = Annotated[str, Depends(actor)]


async def context(request: Request) -> Context:
    """The request's Context: who acts (set by `Auth`) and the clock, read once, here."""
    svc: Services = request.app.state.services
    return Context(
        now=svc.clock(),
        actor=request.state.actor,
        resume_delay_s=svc.settings.resume_delay_s,
        display_zone=svc.display_zone,
        executor=svc.settings.executor,
        tombstone_retention_days=svc.settings.tombstone_retention_days,
        hold_window_s=svc.settings.hold_window_s,
    )


Ctx = Annotated[Context, Depends(context)]


# These dependencies never block (a session connects on first use, inside the route's worker
# thread), so they run on the event loop instead of costing a thread hop each.


async def writer(svc: Svc) -> AsyncIterator[Session]:
    """A write session; the route commits it with `svc.database.transaction(db)`."""
    with svc.database.writer() as db:
        yield db


async def reader(svc: Svc) -> AsyncIterator[Session]:
    with svc.database.reader() as db:
        yield db


Writer = Annotated[Session, Depends(writer)]
Reader = Annotated[Session, Depends(reader)]
