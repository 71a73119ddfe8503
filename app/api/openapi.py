"""The OpenAPI document (`GET /openapi.json`, shown at `/docs`): what each route answers, its
problems included, and who may call it.

Each route names the problem codes it can answer (`problems`), by stable code; the status
comes from `rewake.errors.CODES`, so a route cannot declare a code under the wrong status.
Every problem is `application/problem+json` with the `Problem` schema, its `code` narrowed
to the codes that route gives with that status. `install_openapi` adds the bearer security
scheme to every route that `rewake.security.auth.Auth` guards, when tokens are configured:
without them no route asks for a bearer token, and the document says none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from rewake.api.problems import MEMBERS, Problem, ProblemMembers
from rewake.errors import CODES
from rewake.security.auth import Auth

#: Where the document is served (`rewake.api.ops`), for `/docs` to load.
OPENAPI_PATH = "/openapi.json"
PROBLEM_JSON = "application/problem+json"
#: The security scheme's name in the document.
BEARER = "bearer"
_REF_TEMPLATE = "#/components/schemas/{model}"
_PROBLEM_REF = _REF_TEMPLATE.format(model="Problem")
_MEMBERS = ProblemMembers.model_json_schema(ref_template=_REF_TEMPLATE)

Responses = dict[int | str, dict[str, Any]]


def problems(
    *codes: str, body: bool = False, database: bool = True, auth: bool = True
) -> Responses:
    """A route's `responses`: one per status for `codes`, plus what every such route can
    answer: `auth` 401 unauthorized and 403 loopback_only; `body` (it reads a JSON body) 422
    and 400 invalid_request and 413 body_too_large; `database` 503 database_unavailable and
    (a write the storage cannot hold) storage_full."""
    listed = list(codes)
    if auth:
        listed += ["unauthorized", "loopback_only"]
    if body:
        listed += ["invalid_request", "body_too_large"]
    if database:
        listed += ["database_unavailable", "storage_full"]
    by_status: dict[int, list[str]] = {}
    for code in dict.fromkeys(listed):
        by_status.setdefault(CODES[code][0], []).append(code)
    if body:  # a body the JSON decoder cannot even read (docs/api.md)
        by_status[400] = ["invalid_request"]
    return {status: _problem(status, found) for status, found in sorted(by_status.items())}


def _problem(status: int, codes: list[str]) -> dict[str, Any]:
    if status == 400:
        description = "`invalid_request`: the body could not be read as JSON text"
    else:
        description = "\n".join(f"- `{code}`: {CODES[code][1]}" for code in codes)
    properties: dict[str, Any] = {"status": {"const": status}, "code": {"enum": codes}}
    for code in codes:
        member = MEMBERS.get(code)
        if member is not None and status != 400:
            properties[member] = _MEMBERS["properties"][member]
    schema = {"allOf": [{"$ref": _PROBLEM_REF}, {"type": "object", "properties": properties}]}
    response: dict[str, Any] = {
        "description": description,
        "content": {PROBLEM_JSON: {"schema": schema}},
    }
    if status == 401:
        response["headers"] = {
            "WWW-Authenticate": {
                "description": 'Bearer realm="rewake"',
                "schema": {"type": "string"},
            }
        }
    return response


def install_openapi(app: FastAPI, *, bearer: bool) -> None:
    """`app.openapi()` as FastAPI builds it, then the Problem schema and, when `bearer` (tokens
    are configured), the bearer scheme."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _complete(build(), bearer=bearer)  # FastAPI keeps what it built in app.openapi_schema
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _complete(document: dict[str, Any], *, bearer: bool) -> None:
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Problem"] = Problem.model_json_schema(ref_template=_REF_TEMPLATE)
    schemas.update(_MEMBERS.get("$defs", {}))
    if not bearer:  # no token configured: nothing to send, loopback callers only
        return
    components["securitySchemes"] = {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "the secret of a token in REWAKE_API_TOKENS (with none configured, the "
                "document declares no scheme and only callers on this machine are served)."
            ),
        }
    }
    for path, operations in document.get("paths", {}).items():
        if path in Auth.OPEN_PATHS:
            continue
        for operation in operations.values():
            operation["security"] = [{BEARER: []}]
