"""Adding the web page to the app: its routes, its static files, and HTML (not problem+json)
for an unknown address that a browser asked for as a page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.responses import Response

from rewake.security.browser import STATIC_PREFIX
from rewake.web import apidocs, routes, signin
from rewake.web.render import STATIC_DIR, error_page

Handler = Callable[[Request, Exception], Awaitable[Response]]

#: Paths that are always the API's: they answer problem+json whoever asks.
_API_PREFIXES = ("/api/", "/healthz", "/readyz", "/metrics", STATIC_PREFIX)


def install_web(app: FastAPI) -> None:
    """The page routes, `/static`, and HTML error pages for browsers outside the API."""
    app.include_router(signin.router)
    app.include_router(routes.router)
    app.include_router(apidocs.router)
    app.mount(STATIC_PREFIX.rstrip("/"), StaticFiles(directory=STATIC_DIR), name="static")
    api_answer = cast(Handler, app.exception_handlers[HTTPException])

    async def page_or_problem(request: Request, exc: Exception) -> Response:
        wants_page = "text/html" in request.headers.get("accept", "")
        if not wants_page or request.url.path.startswith(_API_PREFIXES):
            return await api_answer(request, exc)
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
        detail = f"there is no page at {request.url.path[:200]}"
        if status == 405:
            detail = f"{request.url.path[:200]} does not answer {request.method}"
        return error_page(request, status, code, detail)

    app.add_exception_handler(HTTPException, page_or_problem)
