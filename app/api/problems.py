"""RFC 9457 problem+json for every error, and the 16 MiB body limit.

Every 4xx carries a stable `code` (rewake.errors.CODES); no input may produce a 5xx,
so unexpected exceptions are logged and answered with `internal_error`.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewake.db.engine import is_storage_full
from rewake.errors import CODES, DomainError
from rewake.logs import log_event

logger = logging.getLogger("rewake.api")

#: Bodies above this are refused with 413 before they are read.
MAX_BODY_BYTES = 16 * 1024 * 1024

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}


class FieldError(BaseModel):
    """One reason a request did not match the schema."""

    loc: list[str] = Field(description="where: body, query, path, then the field's names")
    msg: str
    type: str


class UncertainMark(BaseModel):
    """A mark left uncertain: which one to name when resolving."""

    id: int
    run_id: str
    attempt: int


class Problem(BaseModel):
    """An error as `problem` writes it: RFC 9457 problem details with a stable `code` (some
    codes add a member: `ProblemMembers`)."""

    type: str = Field(description="urn:rewake:problem:<code>")
    title: str = Field(description="what the code means")
    status: int
    detail: str = Field(description="what happened, in words")
    code: str = Field(description="the stable code (docs/api.md: Errors)")


class ProblemMembers(BaseModel):
    """The members that some codes add to a problem (`MEMBERS` says which)."""

    errors: list[FieldError] = Field(description="the first 20 reasons the schema refused")
    refusal: str = Field(description="the verdict's refusal code")
    uncertain: list[UncertainMark] = Field(description="the marks left uncertain")
    checks: dict[str, dict[str, Any]] = Field(description="each check and whether it passed")


#: The member a problem with this code may carry (invalid_request: when the schema refused).
MEMBERS = {
    "invalid_request": "errors",
    "reset_not_stated": "refusal",
    "mark_ambiguous": "uncertain",
    "not_ready": "checks",
}


def problem(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    """A problem+json response."""
    title = CODES[code][1] if code in CODES else code.replace("_", " ")
    body = {
        "type": f"urn:rewake:problem:{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }
    headers = {"WWW-Authenticate": 'Bearer realm="rewake"'} if status == 401 else None
    return JSONResponse(
        body, status_code=status, media_type="application/problem+json", headers=headers
    )


def install_problem_handlers(app: FastAPI, on_problem: Any) -> None:
    """Answer every error as problem+json; `on_problem(code)` counts them."""

    @app.exception_handler(DomainError)
    async def _domain(_request: Request, exc: DomainError) -> JSONResponse:
        on_problem(exc.code)
        return problem(exc.status, exc.code, exc.detail, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        on_problem("invalid_request")
        errors = [
            {"loc": [str(part) for part in error.get("loc", ())], "msg": str(error.get("msg")),
             "type": str(error.get("type"))}
            for error in exc.errors()[:20]
        ]  # fmt: skip
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        detail = f"{'.'.join(first['loc'])}: {first['msg']}" if first["loc"] else first["msg"]
        return problem(422, "invalid_request", str(detail), errors=errors)

    @app.exception_handler(HTTPException)
    async def _http(_request: Request, exc: HTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(
            exc.status_code, "invalid_request" if exc.status_code < 500 else "internal_error"
        )
        on_problem(code)
        answer = problem(exc.status_code, code, str(exc.detail))
        # The router's own headers: a 405's `Allow` (RFC 9110 says it must be sent).
        answer.headers.update(exc.headers or {})
        return answer

    @app.exception_handler(OperationalError)
    async def _database(_request: Request, exc: OperationalError) -> JSONResponse:
        if is_storage_full(exc):  # the database answered: it cannot store the write
            on_problem("storage_full")
            log_event(
                logger, "storage_full", logging.ERROR,
                repeats=type(exc.orig).__name__, error=str(exc.orig),
            )  # fmt: skip
            return problem(
                503, "storage_full", "the database's storage is full; nothing was written"
            )
        on_problem("database_unavailable")
        log_event(
            logger, "database_unavailable", logging.ERROR,
            repeats=type(exc.orig).__name__, error=str(exc.orig),
        )  # fmt: skip
        return problem(503, "database_unavailable", "the database did not answer; try again")

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        on_problem("internal_error")
        logger.exception("internal_error", exc_info=exc)
        return problem(500, "internal_error", "an unexpected error; it has been logged")


class BodyLimit:
    """Refuse bodies over `limit` bytes: by Content-Length up front, else while reading."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    response = problem(
                        413, "body_too_large", f"the body is over {self.limit} bytes"
                    )
                    await response(scope, receive, send)
                    return
        received = 0
        too_large = False

        async def limited() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    too_large = True
                    raise DomainError("body_too_large", f"the body is over {self.limit} bytes")
            return message

        async def answer(message: Message) -> None:
            # FastAPI turns any error while reading the body into a 400; say what it was.
            if not too_large:
                await send(message)
            elif message["type"] == "http.response.start":
                refusal = problem(413, "body_too_large", f"the body is over {self.limit} bytes")
                await send(
                    {"type": "http.response.start", "status": 413, "headers": refusal.raw_headers}
                )
                await send({"type": "http.response.body", "body": refusal.body})

        await self.app(scope, limited, answer)
