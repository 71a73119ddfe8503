"""Signing in to the web page: a token checked by the API's own `authenticate`, kept in an
HttpOnly, SameSite=Strict cookie (see `rewake.security.browser` for where the cookie counts).

With no token configured there is nothing to sign in to: the API serves loopback only, and
so does the page.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from rewake.api.deps import AppServices
from rewake.errors import DomainError
from rewake.security.auth import authenticate
from rewake.security.browser import COOKIE, SIGN_IN_PATH, from_another_origin
from rewake.web.render import error_page, page

router = APIRouter(include_in_schema=False)

#: A sign-in form is a token and a path; anything much longer is not one.
MAX_FORM_BYTES = 8_192
#: How long a browser keeps the sign-in: the token itself stays valid until it is rotated.
COOKIE_MAX_AGE_S = 14 * 24 * 3600

WHY = {
    "needed": "Sign in with one of the tokens in REWAKE_API_TOKENS to see the sessions.",
    "expired": "Your sign-in no longer matches a configured token; sign in again.",
}


@router.get(SIGN_IN_PATH, response_class=HTMLResponse)
def sign_in_form(request: Request, services: AppServices) -> Response:
    target = safe_next(request.query_params.get("next"))
    if not services.settings.tokens:
        return RedirectResponse(target, status_code=303)
    note = WHY.get(request.query_params.get("why") or "", "")
    return page(request, "sign_in.html", {"next": target, "note": note, "problem": None})


@router.post(SIGN_IN_PATH, response_class=HTMLResponse)
async def sign_in(request: Request, services: AppServices) -> Response:
    if _from_another_site(request):
        # Another site must not sign this browser in, not even to an account of its own.
        return error_page(request, 403, "unauthorized", "a sign-in must come from this page")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return error_page(request, 413, "body_too_large", "a sign-in form is not this long")
    form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8)
    given = (form.get("token") or [""])[0].strip()
    target = safe_next((form.get("next") or ["/"])[0])
    if not services.settings.tokens:
        return RedirectResponse(target, status_code=303)
    client = request.client.host if request.client else ""
    try:
        secret = check_token(services, client, given)
    except DomainError as refused:
        context = {"next": target, "note": "", "problem": refused.detail, "code": refused.code}
        return page(request, "sign_in.html", context, status=refused.status)
    answer = RedirectResponse(target, status_code=303)
    answer.set_cookie(COOKIE, secret, max_age=COOKIE_MAX_AGE_S, **_cookie_attributes(request))
    return answer


@router.post("/sign-out")
def sign_out(request: Request) -> Response:
    if _from_another_site(request):
        # Another site must not sign this browser out either (logout CSRF).
        return error_page(request, 403, "unauthorized", "a sign-out must come from this page")
    answer = RedirectResponse(SIGN_IN_PATH, status_code=303)
    answer.delete_cookie(COOKIE, **_cookie_attributes(request))
    return answer


def _cookie_attributes(request: Request) -> dict[str, Any]:
    """The cookie's attributes, the same when it is set and when it is cleared. Secure when
    the request came over https: behind a TLS proxy uvicorn takes the scheme from
    X-Forwarded-Proto, trusting proxies at FORWARDED_ALLOW_IPS (loopback by default)."""
    return {
        "path": "/",
        "httponly": True,
        "samesite": "strict",
        "secure": request.url.scheme == "https",
    }


def check_token(services: AppServices, client_host: str, given: str) -> str:
    """The secret to keep for `given`: a configured token as `name:secret`, or its secret
    alone. The API's `authenticate` decides; a name that is not the secret's is refused."""
    if not given:
        raise DomainError("unauthorized", "enter a token: name:secret, as in REWAKE_API_TOKENS")
    try:
        authenticate(services.settings, client_host, f"Bearer {given}")
        return given  # a secret that itself holds a colon
    except DomainError:
        name, colon, secret = given.partition(":")
        if not colon:
            raise
    who = authenticate(services.settings, client_host, f"Bearer {secret}")
    if who != name:
        raise DomainError("unauthorized", "the bearer token matches no configured token")
    return secret


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path on this site only (no `//host`, no scheme)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target


def _from_another_site(request: Request) -> bool:
    """The browser says another origin's page sent this form (`rewake.security.browser`): a
    `Sec-Fetch-Site` other than same-origin, an opaque `Origin`, or an `Origin` that is not
    this host. A browser that sends neither header is taken at its word; SameSite=Strict still
    keeps the cookie from such a post."""
    return from_another_origin(dict(request.scope.get("headers", ())))
