"""The two busiest write routes, answered without FastAPI's per-request machinery when the
request is well formed.

`POST /api/agent/runs/{root_id}/runs/{run_id}/failures` is the route hosts call most, and
`PUT /api/agent/runs/{root_id}/auto-resume` the one every limit may be followed by. Through
FastAPI a request was matched against the routes before it twice, had its dependencies and
body solved generically and went through two more middlewares: together more than the
request's own reading and parsing. `HotWrites` sits just inside the body limit and the auth:
a request to one of these paths, with valid ids, a JSON content type and a body that the
route's body model accepts, is answered by the FastAPI route's own function (`accept_failure`,
`accept_auto_resume`); its errors by the app's own exception handlers. Anything else (a body
that does not validate, another content type, an id out of the alphabet) goes on to FastAPI
unchanged, body included, and is answered exactly as it always was.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.json_body import load_json_body
from app.api.routes import accept_auto_resume, accept_failure, router
from app.api.schemas import AutoResumeBody, FailureBody
from app.domain.ids import ID_PATTERN

_ID = ID_PATTERN.removeprefix("^").removesuffix("$")
#: The failure route's path, with ids as the route's own validation accepts them.
FAILURES_PATH = re.compile(
    rf"{re.escape(router.prefix)}/(?P<root_id>{_ID})/runs/(?P<run_id>{_ID})/failures"
)
#: The auto-resume route's path.
AUTO_RESUME_PATH = re.compile(rf"{re.escape(router.prefix)}/(?P<root_id>{_ID})/auto-resume")
_JSON_TYPES = frozenset({b"application/json", b"application/json; charset=utf-8"})

Handler = Callable[[Request, Exception], Awaitable[Response]]


class _Route(NamedTuple):
    """A route `HotWrites` answers: its method, path, body model and the route's function."""

    method: str
    path: re.Pattern[str]
    body: type[BaseModel]
    answer: Callable[[Request, dict[str, str], Any], Awaitable[Response]]


ROUTES = (
    _Route("POST", FAILURES_PATH, FailureBody,
           lambda request, ids, body: accept_failure(request, ids["root_id"], ids["run_id"], body)),
    _Route("PUT", AUTO_RESUME_PATH, AutoResumeBody,
           lambda request, ids, body: accept_auto_resume(request, ids["root_id"], body)),
)  # fmt: skip


class HotWrites:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route, found = _route_of(scope)
        if route is None or found is None or not _is_json(scope):  # FastAPI's to answer
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            raw = await _body(receive)
        except Exception as error:  # the body limit refused it
            await _answer_error(request, error, scope, receive, send)
            return
        if raw is None:  # the client went away: nobody to answer
            return
        body = _valid_body(route.body, raw)
        if body is None:  # FastAPI says why, as it always has
            await self.app(scope, _replaying(raw, receive), send)
            return
        try:
            response = await route.answer(request, found.groupdict(), body)
        except Exception as error:
            await _answer_error(request, error, scope, receive, send)
            return
        await response(scope, receive, send)


def _route_of(scope: Scope) -> tuple[_Route | None, re.Match[str] | None]:
    """The route this request is for, and its path's match; (None, None) for any other."""
    if scope["type"] != "http":
        return None, None
    method = scope["method"]
    for route in ROUTES:
        if route.method == method:
            found = route.path.fullmatch(scope["path"])
            if found is not None:
                return route, found
    return None, None


async def _body(receive: Receive) -> bytes | None:
    """The whole request body; None when the client disconnected before sending it."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _is_json(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.lower() in _JSON_TYPES
    return False


def _valid_body(model: type[BaseModel], raw: bytes) -> BaseModel | None:
    """The body as `model`, if FastAPI would accept it for the route as it is; else None."""
    try:
        data = load_json_body(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _replaying(raw: bytes, receive: Receive) -> Receive:
    """A receive that gives the body already read, then whatever the client sends next."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return replay


async def _answer_error(
    request: Request, error: Exception, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer `error` with the app's own handler for it, as FastAPI would have."""
    handlers: dict[Any, Handler] = request.app.exception_handlers
    for kind in type(error).__mro__:
        handler = handlers.get(kind)
        if handler is not None:
            response = await handler(request, error)
            await response(scope, receive, send)
            return
    raise error
