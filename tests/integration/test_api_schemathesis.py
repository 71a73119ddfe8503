"""Schemathesis walks the OpenAPI document against the API served on loopback: every answer
must be one the document declares for that operation (status, content type, headers, body
schema), and none a 5xx (but /readyz's declared 503). Walked with a token, with no token
configured (loopback only) and without the token a server wants (401 everywhere)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import checks
from schemathesis.core import NOT_SET

from rewake import heartbeats
from rewake.main import create_app
from rewake.settings import Settings
from tests.support.api import ALICE, T0, TOKENS, Api, serve_api
from tests.support.db import migrate
from tests.support.reports import NATIVE, NOT_STATED, failure, runs_url

# The document the app serves with tokens configured (its bearer scheme declared), built
# without opening a database (test_the_served_document checks that a live server serves this
# same document); with none configured it is the same less the scheme.
DOCUMENT = create_app(Settings(database_url="sqlite://", api_tokens=TOKENS)).openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT)

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]

# Sessions in known states, so that generated requests reach past 404 session_not_found:
# found, armed, refused for each reason, cancelled, deleted. The walk may change them.
_RUN = uuid.uuid4().hex[:8]
SEEDED = {
    name: f"walk-{name}-{_RUN}"
    for name in ("paused", "armed", "native", "not-stated", "finished", "cancelled", "deleted")
}
SEEDED_RUN = "r1"


@schema.hook
def flatmap_path_parameters(_ctx: Any, path_parameters: dict[str, Any] | None) -> Any:
    """Half the time a generated root_id (and run_id) is replaced by a seeded one."""
    if not path_parameters or "root_id" not in path_parameters:
        return st.just(path_parameters)
    seeded = st.sampled_from(sorted(SEEDED.values())).map(
        lambda root_id: {
            **path_parameters,
            "root_id": root_id,
            **({"run_id": SEEDED_RUN} if "run_id" in path_parameters else {}),
        }
    )
    return st.one_of(st.just(path_parameters), seeded)


def _seed(client: httpx.Client) -> None:
    """Each seeded session in its state (idempotent: a repeat changes nothing that matters)."""
    for name in ("paused", "armed", "finished", "cancelled", "deleted"):
        client.post(runs_url(SEEDED[name], SEEDED_RUN), json=failure())
    client.post(runs_url(SEEDED["native"], SEEDED_RUN), json=failure(message=NATIVE))
    client.post(runs_url(SEEDED["not-stated"], SEEDED_RUN), json=failure(message=NOT_STATED))
    client.put(f"/api/agent/runs/{SEEDED['armed']}/auto-resume", json={"enabled": True})
    finished = runs_url(SEEDED["finished"], SEEDED_RUN, "attempts")
    client.post(finished, json={"attempt": 2, "status": "completed"})
    for name in ("cancelled", "deleted"):
        client.post(f"/api/agent/runs/{SEEDED[name]}/cancel")
    client.delete(f"/api/agent/runs/{SEEDED['deleted']}")


@dataclass
class Walked:
    """A live server and the headers every generated request carries."""

    api: Api
    headers: dict[str, str]


@pytest.fixture(scope="module")
def _open_server(db_url: str) -> Iterator[Api]:
    """The API with no token configured, on the same database as `_served`."""
    with serve_api(db_url, api_tokens=None) as api:
        yield api


@pytest.fixture(params=["token", "no token configured"])
def walked(request: pytest.FixtureRequest, _served: Api) -> Iterator[Walked]:
    """The API with a token configured and sent, or with none configured (loopback only)."""
    _served.clock.now = T0
    with _served.client() as client:
        _seed(client)
    if request.param == "token":
        yield Walked(_served, ALICE)
    else:
        yield Walked(request.getfixturevalue("_open_server"), {})


def _walk(case: schemathesis.Case, walked: Walked) -> int:
    """Send `case` and check its answer against the document; the answer's status."""
    response = case.call(base_url=walked.api.url, headers=walked.headers)
    # /readyz's 503 (no sweeper here) is its declared answer, not a server error.
    not_ready = case.path == "/readyz" and response.status_code == 503
    case.validate_response(
        response,
        checks=CHECKS,
        excluded_checks=[checks.not_a_server_error] if not_ready else None,
        headers=walked.headers,
    )
    return response.status_code


@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_answer_is_declared(case: schemathesis.Case, walked: Walked) -> None:
    """Each generated request gets an answer the document declares: status, content type,
    headers and body schema; never a 5xx but /readyz's 503."""
    _walk(case, walked)


@schema.parametrize()
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_refusal_without_the_token_is_declared(case: schemathesis.Case, _served: Api) -> None:
    """Without the token a server wants, each route's 401 problem is declared (with its
    WWW-Authenticate header), and /healthz still answers."""
    response = case.call(base_url=_served.url)
    case.validate_response(response, checks=CHECKS)
    if case.path != "/healthz":
        assert response.status_code == 401, response.text
    elif case.method == "GET":
        assert response.status_code == 200, response.text


#: A body that each operation taking one accepts.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/agent/runs/{root_id}/runs/{run_id}/failures"): failure(attempt=2),
    ("POST", "/api/agent/runs/{root_id}/runs/{run_id}/attempts"): {
        "attempt": 3,
        "status": "started",
    },
    ("PUT", "/api/agent/runs/{root_id}/auto-resume"): {"enabled": True},
    ("POST", "/api/agent/runs/{root_id}/auto-resume/resolve"): {"outcome": "done"},
}
SESSION_OPERATIONS = [
    (operation.method.upper(), operation.path)
    for operation in (result.ok() for result in schema.get_all_operations())
    if "{root_id}" in operation.path
]


@pytest.mark.parametrize(("method", "path"), SESSION_OPERATIONS)
def test_each_session_state_answers_as_declared(method: str, path: str, walked: Walked) -> None:
    """Every session operation, on a session in each seeded state and on one never seen,
    answers as the document declares (the walk above reaches them only by chance)."""
    operation = schema[path][method]
    body = BODIES.get((method, path), NOT_SET)
    statuses = set()
    for root_id in [*SEEDED.values(), f"walk-unseen-{uuid.uuid4().hex[:8]}"]:
        parameters = {"root_id": root_id}
        if "{run_id}" in path:
            parameters["run_id"] = SEEDED_RUN
        if "{attempt}" in path:  # a failure's whole text: the seeded failure's
            parameters |= {"attempt": "1", "part": "message"}
        case = operation.Case(
            path_parameters=parameters,
            body=body,
            media_type="application/json" if body is not NOT_SET else None,
        )
        statuses.add(_walk(case, walked))
    assert statuses - {200, 201}, f"{method} {path}: only successes, no refusal was walked"


def test_the_ready_answer_is_declared(tmp_path: Path) -> None:
    """/readyz's 200, with a sweeper seen, matches its declared schema."""
    url = f"sqlite:///{tmp_path / 'ready.db'}"
    migrate(url)
    with serve_api(url) as api:
        with api.database.writer() as db, db.begin():
            heartbeats.record_heartbeat(
                db, "walk-sweeper", api.clock.now, host="test", pid=1, executor="command"
            )
        case = schema["/readyz"]["GET"].Case()
        response = case.call(base_url=api.url, headers=ALICE)
        assert response.status_code == 200, response.text
        case.validate_response(response, checks=CHECKS)


def test_the_served_document_is_the_walked_one(api: Api) -> None:
    """GET /openapi.json on a live server is the document the walk generates requests from."""
    with api.client() as client:
        assert client.get("/openapi.json").json() == DOCUMENT


#: A PostgreSQL address where nothing listens: every connection is refused at once.
NO_DATABASE = "postgresql+psycopg://rewake@127.0.0.1:1/rewake"


def test_every_route_answers_a_lost_database_as_declared() -> None:
    """With the database unreachable, each route that reads it answers its declared 503
    database_unavailable (/readyz: 503 not_ready); /healthz and /api/parse still answer 200."""
    with serve_api(NO_DATABASE) as api:
        for result in schema.get_all_operations():
            operation = result.ok()
            method, path = operation.method.upper(), operation.path
            body = BODIES.get((method, path), NOT_SET)
            if path == "/api/parse":
                body = {"message": NOT_STATED}
            parameters = {
                "root_id": "lost",
                "run_id": SEEDED_RUN,
                "attempt": "1",
                "part": "message",
            }
            case = operation.Case(
                path_parameters={key: value for key, value in parameters.items() if key in path},
                body=body,
                media_type="application/json" if body is not NOT_SET else None,
            )
            response = case.call(base_url=api.url, headers=ALICE)
            case.validate_response(
                response, checks=CHECKS, excluded_checks=[checks.not_a_server_error]
            )
            declared = operation.definition.raw["responses"].get("503")
            if path in ("/healthz", "/api/parse"):
                assert response.status_code == 200, (method, path, response.text)
            else:
                assert declared is not None and response.status_code == 503, (method, path)
                expected = "not_ready" if path == "/readyz" else "database_unavailable"
                assert response.json()["code"] == expected, (method, path, response.text)
