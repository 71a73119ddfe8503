"""Bad input never makes a 5xx: every refusal is problem+json with a stable code."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from rewake.reports.rules import EVENTS_CUT, EVENTS_MAX_DEPTH
from tests.support.api import Api
from tests.support.reports import QUOTA, failure, runs_url


def assert_problem(answer: httpx.Response, status: int, code: str) -> None:
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    assert answer.headers["content-type"] == "application/problem+json"


def post_json(http: httpx.Client, url: str, body: Any) -> httpx.Response:
    """POST JSON text as Python writes it: lone surrogates travel as \\ud800 escapes."""
    content = json.dumps(body).encode()
    return http.post(url, content=content, headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{",
        b"not json",
        b"[]",
        b"null",
        b'{"attempt": 1, "message": "x", "observed_at": "2026-11-30T13:00:00Z"',
        b"\xff\xfe\x00garbage",
        b'{"attempt": 1, "message": "\xff\xfe", "observed_at": "2026-11-30T13:00:00Z"}',
    ],
)
def test_malformed_bodies_are_422(http: httpx.Client, root_id: str, content: bytes) -> None:
    """Bodies that are not a JSON object of the right shape are 400/422 invalid_request."""
    answer = http.post(
        runs_url(root_id), content=content, headers={"content-type": "application/json"}
    )
    assert answer.status_code in (400, 422)
    assert_problem(answer, answer.status_code, "invalid_request")


@pytest.mark.parametrize(
    "change",
    [
        {"attempt": "one"},
        {"attempt": -1},
        {"attempt": 2**40},
        {"attempt": None},
        {"message": 42},
        {"message": None},
        {"observed_at": "yesterday"},
        {"observed_at": 12.5e30},
        {"observed_at": None},
    ],
)
def test_wrong_types_are_422(http: httpx.Client, root_id: str, change: dict[str, Any]) -> None:
    """A required field (attempt, message, observed_at) of the wrong type is 422."""
    assert_problem(http.post(runs_url(root_id), json=failure() | change), 422, "invalid_request")


@pytest.mark.parametrize(
    "observed_at",
    ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "1970-01-01T00:00:00Z"],
)
def test_extreme_instants_are_refused_or_stored(
    http: httpx.Client, root_id: str, observed_at: str
) -> None:
    """Instants at the ends of the calendar are refused with 422 or stored, never a 5xx."""
    answer = http.post(runs_url(root_id), json=failure(observed_at=observed_at))
    assert answer.status_code in (201, 422), answer.text


def test_far_future_observed_at_is_observed_in_future(http: httpx.Client, root_id: str) -> None:
    """An observed_at past year 9999 in UTC is 422 observed_in_future, not "before 2000"."""
    answer = http.post(runs_url(root_id), json=failure(observed_at="9999-12-31T23:59:59-14:00"))
    assert_problem(answer, 422, "observed_in_future")
    assert "after year 9999" in answer.json()["detail"]


def stored_events(api: Api, root_id: str) -> str:
    """The events column of the root's failure as the database holds it, as text."""
    with api.database.reader() as db:
        query = text("SELECT CAST(events AS TEXT) FROM failures WHERE root_id = :root_id")
        stored: str = db.execute(query, {"root_id": root_id}).scalar_one()
    return stored


def reject_constant(name: str) -> None:
    raise AssertionError(f"{name} is not standard JSON")


@pytest.mark.parametrize("depth", [500, 5_000, 200_000])
def test_absurdly_nested_events_are_cut_and_the_report_kept(
    api: Api, http: httpx.Client, root_id: str, depth: int
) -> None:
    """Events nested any depth are stored cut at 64 levels, flagged, never a 5xx."""
    head = json.dumps(failure())[:-1]
    content = f'{head}, "events": [{"[" * depth}{"]" * depth}]}}'.encode()
    headers = {"content-type": "application/json"}
    answer = http.post(runs_url(root_id), content=content, headers=headers)
    assert answer.status_code == 201, answer.text
    assert answer.json()["verdict"]["reset_at"] == "2026-11-30T16:40:00Z"
    assert {"field": "events", "code": "too_deep"}.items() <= answer.json()["warnings"][0].items()
    nested, levels = json.loads(stored_events(api, root_id)), 0
    while isinstance(nested, list):
        nested, levels = nested[0], levels + 1
    assert (nested, levels) == (EVENTS_CUT, EVENTS_MAX_DEPTH + 1)
    again = http.post(runs_url(root_id), content=content, headers=headers)
    assert (again.status_code, again.json()) == (200, answer.json())


def test_non_finite_numbers_in_events_are_stored_as_strings(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """NaN, Infinity, -Infinity and 1e400 in events are stored as strings, the report kept."""
    head = json.dumps(failure())[:-1]
    events = '[{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e400, "e": 1.5}]'
    content = f'{head}, "events": {events}}}'.encode()
    answer = http.post(
        runs_url(root_id), content=content, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 201, answer.text
    assert [(w["field"], w["code"]) for w in answer.json()["warnings"]] == [
        ("events", "non_finite")
    ]
    stored = json.loads(stored_events(api, root_id), parse_constant=reject_constant)
    assert stored == [{"a": "NaN", "b": "Infinity", "c": "-Infinity", "d": "Infinity", "e": 1.5}]


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Etc/Unknown", "../../etc/passwd", "", "UTC\x00"])
def test_unknown_zones_are_a_verdict_not_an_error(
    http: httpx.Client, root_id: str, zone: str
) -> None:
    """An unusable host zone is stored, and a time that needs it is refused as zone_unknown."""
    body = failure(message="You've hit your session limit · resets 5:40pm", zone=zone)
    answer = http.post(runs_url(root_id), json=body)
    assert answer.status_code == 201, answer.text
    assert answer.json()["verdict"]["refusal"]["code"] == "zone_unknown"


@pytest.mark.parametrize(
    "message",
    [
        "\x00\x01\x02 binary \x00",
        "\ud800 lone surrogate",
        "\x1b[31m" + QUOTA + "\x1b[0m",
        "😀" * 1000,
    ],
)
def test_binary_text_is_stored(http: httpx.Client, root_id: str, message: str) -> None:
    """NUL bytes, lone surrogates and escape codes in the CLI output are stored, never a 5xx."""
    body = failure(message=message, session_id="\x00id", events=[{"k": "\x00v"}, "\ud800"])
    answer = post_json(http, runs_url(root_id), body)
    assert answer.status_code == 201, answer.text
    assert http.get(f"/api/agent/runs/{root_id}").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/agent/runs/has%20space/runs/r1/failures",
        "/api/agent/runs/" + "a" * 201 + "/runs/r1/failures",
        "/api/agent/runs/-leading-dash/runs/r1/failures",
        "/api/agent/runs/ok/runs/%00/failures",
        "/api/agent/runs/tombstones/runs/r1/failures",
    ],
)
def test_bad_ids_are_422(http: httpx.Client, path: str) -> None:
    """root_id and run_id outside their pattern (or reserved) are 422 invalid_request."""
    assert_problem(http.post(path, json=failure()), 422, "invalid_request")


def test_unknown_routes_and_methods_are_problems(http: httpx.Client) -> None:
    """Unknown paths are 404 not_found, wrong methods 405 method_not_allowed."""
    assert_problem(http.get("/api/nothing"), 404, "not_found")
    assert_problem(http.patch("/api/agent/runs"), 405, "method_not_allowed")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("auto-resume", {"enabled": "true"}),
        ("auto-resume", {}),
        ("auto-resume/resolve", {"outcome": "maybe"}),
    ],
)
def test_mark_bodies_are_checked(
    http: httpx.Client, root_id: str, path: str, body: dict[str, Any]
) -> None:
    """The auto-resume and resolve bodies take exactly their documented values."""
    method = http.put if path == "auto-resume" else http.post
    assert_problem(method(f"/api/agent/runs/{root_id}/{path}", json=body), 422, "invalid_request")


@pytest.mark.parametrize(
    "body", [{"attempt": 1, "status": "paused"}, {"attempt": "1x", "status": "started"}]
)
def test_attempt_bodies_are_checked(http: httpx.Client, root_id: str, body: dict[str, Any]) -> None:
    """The attempts body takes an attempt number and started or completed."""
    assert_problem(http.post(runs_url(root_id, what="attempts"), json=body), 422, "invalid_request")


def test_parse_route_refuses_naive_and_odd_input(http: httpx.Client) -> None:
    """/api/parse answers 422 for a naive observed_at and a verdict for any text."""
    naive = http.post("/api/parse", json={"message": QUOTA, "observed_at": "2026-11-30T14:05:00"})
    assert_problem(naive, 422, "observed_at_naive")
    odd = post_json(http, "/api/parse", {"message": "\x00\ud800", "zone": "Nowhere/At_All"})
    assert odd.status_code == 200


@pytest.mark.parametrize("attempt", [True, False, "1", 1.5, "2", 0, 0.0, -3.0])
@pytest.mark.parametrize("route", ["failures", "attempts", "resolve"])
def test_attempt_numbers_are_strict_integers(
    http: httpx.Client, root_id: str, route: str, attempt: Any
) -> None:
    """An attempt that is a boolean, a string, a fraction or below 1 is 422 invalid_request on
    every route that takes one, and nothing is stored (true was stored as attempt 1, 0 as 0)."""
    if route == "failures":
        answer = http.post(runs_url(root_id), json=failure() | {"attempt": attempt})
    elif route == "attempts":
        body = {"attempt": attempt, "status": "started"}
        answer = http.post(runs_url(root_id, what="attempts"), json=body)
    else:
        body = {"outcome": "done", "run_id": "r1", "attempt": attempt}
        answer = http.post(f"/api/agent/runs/{root_id}/auto-resume/resolve", json=body)
    assert_problem(answer, 422, "invalid_request")
    assert answer.json()["errors"][0]["loc"][-1] == "attempt"
    assert_problem(http.get(f"/api/agent/runs/{root_id}"), 404, "session_not_found")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/healthz", {"GET"}),
        ("PATCH", "/api/agent/runs/r-405/auto-resume", {"PUT"}),
        ("GET", runs_url("r-405"), {"POST"}),
    ],
)
def test_a_405_names_the_allowed_methods(
    http: httpx.Client, method: str, path: str, allowed: set[str]
) -> None:
    """A method the route does not take is 405 method_not_allowed with an `Allow` header
    naming the methods it does take (RFC 9110 requires it)."""
    answer = http.request(method, path)
    assert_problem(answer, 405, "method_not_allowed")
    named = {word.strip() for word in answer.headers["allow"].split(",")}
    assert allowed <= named and method not in named


def test_an_integral_float_attempt_is_that_integer(http: httpx.Client, root_id: str) -> None:
    """`2783.0`, an integer by the published schema's JSON Schema, is taken as attempt 2783
    on the failures and attempts routes."""
    answer = post_json(http, runs_url(root_id), failure() | {"attempt": 2783.0})
    assert answer.status_code == 201, answer.text
    body = {"attempt": 2784.0, "status": "started"}
    assert post_json(http, runs_url(root_id, what="attempts"), body).status_code == 200
    [run] = http.get(f"/api/agent/runs/{root_id}").json()["runs"]
    failed = [a["attempt"] for a in run["attempts"] if a["failure"] is not None]
    assert failed == [2783] and 2784 in [a["attempt"] for a in run["attempts"]]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/api/agent/runs/tombstones/cancel", None),
        ("POST", runs_url("tombstones"), failure()),
        ("POST", runs_url("tombstones", what="attempts"), {"attempt": 1, "status": "started"}),
    ],
)
def test_the_reserved_root_id_never_becomes_a_session(
    http: httpx.Client, method: str, path: str, body: dict[str, Any] | None
) -> None:
    """`tombstones` (the tombstone route's word) is refused with 422 invalid_request by every
    route that can create a session, the cancel route included, and no session is made."""
    assert_problem(http.request(method, path, json=body), 422, "invalid_request")
    assert_problem(http.get("/api/agent/runs/tombstones"), 404, "session_not_found")
