"""Who acts: the bearer token (or the page's sign-in cookie where a cross-site request cannot
use it), checked before a request's body is read."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from rewake.errors import DomainError
from rewake.security import browser, resume_credential
from rewake.security.headers import harden_pages
from rewake.settings import Settings, is_loopback

#: Who acts when no token is configured (loopback only).
LOCAL_ACTOR = "local"


def authenticate(
    settings: Settings,
    client_host: str,
    authorization: str,
    *,
    route: tuple[str, str] | None = None,
) -> str:
    """Who acts: the name of the bearer token presented; with no token configured, only
    loopback callers are let in, as `local`. For a request to `route` (method, path), a resume
    credential (rewake.security.resume_credential) of that session's report routes acts too.
    DomainError 401/403 otherwise."""
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
    if matched is None and route is not None:
        matched = _resume_actor(settings, presented.strip(), route)
    if matched is None:
        raise DomainError("unauthorized", "the bearer token matches no configured token")
    return matched


def _resume_actor(settings: Settings, presented: str, route: tuple[str, str]) -> str | None:
    """The actor of a resume credential valid for `route`; None when it is none; refused when
    it is genuine but `route` is outside its session's report routes."""
    key = resume_credential.credential_key(settings.tokens.values())
    scope = resume_credential.verify(key, presented)
    if scope is None:
        return None
    if not resume_credential.allows(scope, *route):
        raise DomainError(
            "unauthorized",
            f"this credential reports the resume of mark {scope.mark_id} only: "
            f"{route[0]} {route[1]} is not one of its routes",
        )
    return scope.actor


class Auth:
    """Bearer auth on every route but /healthz (and the web page's sign-in form and static
    files), before the body is read or parsed. The web page's sign-in cookie counts as the
    bearer token only where `rewake.security.browser` says a cross-site request cannot use it.
    With no token configured, only loopback callers that name a loopback host are served.

    Being outermost, it also adds the page headers (`rewake.web.headers`) to every HTML answer,
    its own refusals included."""

    OPEN_PATHS = frozenset({"/healthz"})

    def __init__(
        self, app: ASGIApp, *, settings: Settings, refuse: Callable[[DomainError, Scope], ASGIApp]
    ) -> None:
        self.app = app
        self.settings = settings
        #: The answer to a refused request (a problem+json, or a page for a browser), given
        #: by the composition root, which knows the API's and the page's ways of saying no.
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http":
            send = harden_pages(send)
        if scope["type"] != "http" or path in self.OPEN_PATHS or browser.is_open(path):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        client = scope.get("client") or ("", 0)
        method = scope.get("method", "GET")
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        try:
            if not self.settings.tokens and browser.is_cross_site_write(method, headers):
                raise DomainError("loopback_only", "a page on another site cannot act here")
            if not authorization:
                authorization = browser.cookie_authorization(method, path, headers)
            who = authenticate(self.settings, client[0], authorization, route=(method, path))
            if not self.settings.tokens:
                # DNS rebinding: another site's name pointed at 127.0.0.1 (rewake.security.browser).
                browser.refuse_foreign_host(headers)
        except DomainError as refused:
            await self.refuse(refused, scope)(scope, receive, send)
            return
        scope.setdefault("state", {})["actor"] = who
        await self.app(scope, receive, send)
