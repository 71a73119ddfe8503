"""Well-formed failure reports, answered without FastAPI's per-request machinery.

`POST /api/agent/runs/{root_id}/runs/{run_id}/failures` is the route hosts call most. Through
FastAPI a report was matched against the routes before it twice, had its dependencies and
body solved generically and went through two more middlewares: together more than the
request's own reading and parsing. `FailureIntake` sits just inside the body limit and the
auth: a POST to that path with valid ids, a JSON content type and a body that `FailureBody`
accepts is answered by `accept_failure`, the FastAPI route's own function; its errors by the
app's own exception handlers. Anything else (a body that does not validate, another content
type, an id out of the alphabet) goes on to FastAPI unchanged, body included, and is answered
exactly as it always was.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.json_body import load_json_body
from app.api.routes import accept_failure, router
from app.api.schemas import FailureBody
from app.domain.ids import ID_PATTERN

_ID = ID_PATTERN.removeprefix("^").removesuffix("$")
#: The failure route's path, with ids as the route's own validation accepts them.
FAILURES_PATH = re.compile(
    rf"{re.escape(router.prefix)}/(?P<root_id>{_ID})/runs/(?P<run_id>{_ID})/failures"
)
_JSON_TYPES = frozenset({b"application/json", b"application/json; charset=utf-8"})

Handler = Callable[[Request, Exception], Awaitable[Response]]


class FailureIntake:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        found = FAILURES_PATH.fullmatch(scope["path"])
        if found is None or not _is_json(scope):
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
        body = _valid_body(raw)
        if body is None:  # FastAPI says why, as it always has
            await self.app(scope, _replaying(raw, receive), send)
            return
        try:
            response = await accept_failure(request, found["root_id"], found["run_id"], body)
        except Exception as error:
            await _answer_error(request, error, scope, receive, send)
            return
        await response(scope, receive, send)


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


def _valid_body(raw: bytes) -> FailureBody | None:
    """The report, if FastAPI would accept this body for the route as it is; else None."""
    try:
        data = load_json_body(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return FailureBody.model_validate(data)
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
