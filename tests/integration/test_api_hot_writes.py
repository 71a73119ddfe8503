"""Failure reports and auto-resume requests answered by `HotWrites` (app.api.hot) get the
answers FastAPI's routes give: the same status, content type and body, for requests it serves
and requests it passes on.

Two servers on two SQLite files and one clock, one with the intake and one without, receive
the same requests in the same order; every answer must be the same."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    ALICE,
    OBSERVED,
    QUOTA,
    QUOTA_LATER,
    T0,
    TOKENS,
    Clock,
    LiveServer,
    failure,
    migrate,
    runs_url,
)

from app.api.app import create_app
from app.api.hot import AUTO_RESUME_PATH, FAILURES_PATH, HotWrites
from app.db import Database
from app.settings import Settings


@contextmanager
def _server(path: Path, clock: Clock, *, intake: bool) -> Iterator[httpx.Client]:
    url = f"sqlite:///{path}"
    migrate(url)
    database = Database(url)
    app = create_app(
        Settings(database_url=url, api_tokens=TOKENS, display_zone="Europe/Berlin"),
        database=database,
        clock=clock,
    )
    if not intake:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not HotWrites]
    with LiveServer(app) as base, httpx.Client(base_url=base, headers=ALICE) as client:
        yield client
    database.dispose()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, ...]]:
    """A server with the intake and one without, on one clock."""
    folder = tmp_path_factory.mktemp("intake")
    clock = Clock(now=T0)
    with ExitStack() as stack:
        with_intake = stack.enter_context(_server(folder / "a.db", clock, intake=True))
        without = stack.enter_context(_server(folder / "b.db", clock, intake=False))
        yield with_intake, without


def _same_answer(pair: tuple[httpx.Client, ...], method: str, url: str, **kw: Any) -> Any:
    with_intake, without = (client.request(method, url, **kw) for client in pair)
    assert with_intake.status_code == without.status_code, (with_intake.text, without.text)
    assert with_intake.headers["content-type"] == without.headers["content-type"]
    assert with_intake.json() == without.json()
    return with_intake


def _body(**changes: Any) -> bytes:
    return json.dumps(failure() | changes).encode()


def _deep_body(attempt: int) -> bytes:
    """A report whose events nest 3,000 arrays deep: too deep for json.loads."""
    text = json.dumps(failure(attempt=attempt, events="EVENTS"))
    return text.replace('"EVENTS"', "[" + "[" * 3000 + "]" * 3000 + "]").encode()


def _sent(content: bytes, content_type: str | None = "application/json") -> dict[str, Any]:
    headers = {} if content_type is None else {"content-type": content_type}
    return {"content": content, "headers": headers}


INVALID_UTF8 = b'{"attempt": 9, "message": "\xff", "observed_at": "' + OBSERVED.encode() + b'"}'
MISSING_FIELD = json.dumps({"attempt": 8, "message": QUOTA}).encode()

CASES: list[tuple[str, dict[str, Any], int]] = [
    # what the intake answers itself
    ("new", _sent(_body()), 201),
    ("charset", _sent(_body(attempt=2), "application/json; charset=utf-8"), 201),
    ("unknown and lenient fields", _sent(_body(attempt=3, extra=1, zone="Mars/Olympus")), 201),
    ("nested too deep for json.loads", _sent(_deep_body(4)), 201),
    ("long message", _sent(_body(attempt=5, message="x" * 20_000 + QUOTA_LATER)), 201),
    ("naive observed_at", _sent(_body(attempt=6, observed_at="2026-11-30T13:00:00")), 422),
    ("future observed_at", _sent(_body(attempt=7, observed_at="2026-12-30T13:00:00Z")), 422),
    # what it passes on to FastAPI
    ("not JSON", _sent(b"{"), 422),
    ("a JSON array", _sent(b"[]"), 422),
    ("a wrong type", _sent(_body(attempt="one")), 422),
    ("a missing field", _sent(MISSING_FIELD), 422),
    ("invalid UTF-8", _sent(INVALID_UTF8), 400),
    ("no content type", _sent(_body(attempt=10), None), 422),
    ("another content type", _sent(_body(attempt=11), "text/plain"), 422),
]


@pytest.mark.parametrize(("case", "request_kw", "status"), CASES, ids=[c[0] for c in CASES])
def test_an_intake_answer_is_the_routes_answer(
    pair: tuple[httpx.Client, ...], case: str, request_kw: dict[str, Any], status: int
) -> None:
    """Each kind of report (served by the intake or passed on) is answered the same."""
    answer = _same_answer(pair, "POST", runs_url("intake-1"), **request_kw)
    assert answer.status_code == status, answer.text


def test_repeats_conflicts_and_deleted_sessions_are_answered_the_same(
    pair: tuple[httpx.Client, ...],
) -> None:
    """The same report again (200), another body for a reported attempt (409), a report for a
    deleted session (410) and the reserved root id: the same answers with or without it."""
    url = runs_url("intake-2")
    assert _same_answer(pair, "POST", url, json=failure()).status_code == 201
    assert _same_answer(pair, "POST", url, json=failure()).status_code == 200
    assert _same_answer(pair, "POST", url, json=failure(message="other")).status_code == 409
    assert _same_answer(pair, "POST", "/api/agent/runs/intake-2/cancel").status_code == 200
    assert _same_answer(pair, "DELETE", "/api/agent/runs/intake-2").status_code == 200
    assert _same_answer(pair, "POST", url, json=failure(attempt=2)).status_code == 410
    reserved = runs_url("tombstones")
    assert _same_answer(pair, "POST", reserved, json=failure()).status_code == 422


@pytest.mark.parametrize(
    "root_id", ["-starts-with-a-dash", "a" * 201, "has space", "ünicode"]
)  # fmt: skip
def test_ids_the_route_refuses_are_passed_on(
    pair: tuple[httpx.Client, ...], root_id: str
) -> None:
    """An id outside the alphabet is not taken by the intake; FastAPI refuses it (422)."""
    assert FAILURES_PATH.fullmatch(runs_url(root_id)) is None
    assert _same_answer(pair, "POST", runs_url(root_id), json=failure()).status_code == 422


def test_a_report_without_a_token_is_refused_before_the_intake(
    pair: tuple[httpx.Client, ...],
) -> None:
    """Auth runs first: no token, no report (401), with or without the intake."""
    answers = [
        client.post(runs_url("intake-3"), json=failure(), headers={"Authorization": ""})
        for client in pair
    ]
    assert [answer.status_code for answer in answers] == [401, 401]


class _Inner:
    """An app behind the intake that records the bodies it reads and answers 299."""

    def __init__(self) -> None:
        self.reads: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.reads.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _status(intake: HotWrites, app: Any, path: str, body: bytes, method: str = "POST") -> int:
    """One request through `intake` alone, its body sent in two chunks; the status answered."""
    scope = {
        "type": "http", "method": method, "path": path, "raw_path": path.encode(),
        "query_string": b"", "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "scheme": "http",
        "http_version": "1.1", "app": app, "state": {"actor": "alice"}, "root_path": "",
    }  # fmt: skip
    sent: list[Any] = []
    chunks = [body[: len(body) // 2], body[len(body) // 2 :]]

    async def receive() -> dict[str, Any]:
        chunk = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(intake(scope, receive, send))
    status: int = sent[0]["status"]
    return status


@pytest.fixture
def alone(tmp_path: Path) -> Iterator[tuple[HotWrites, _Inner, Any]]:
    """`HotWrites` in front of an app that records the bodies reaching it, and the service app
    (on a SQLite file of its own) whose state and handlers it uses."""
    url = f"sqlite:///{tmp_path / 'i.db'}"
    migrate(url)
    database = Database(url)
    app = create_app(Settings(database_url=url, api_tokens=TOKENS), database=database)
    inner = _Inner()
    yield HotWrites(inner), inner, app
    database.dispose()


def test_the_intake_answers_a_valid_report_itself_and_passes_the_rest_whole(
    alone: tuple[HotWrites, _Inner, Any],
) -> None:
    """A valid report (sent in two chunks) is stored and answered 201 without the inner app;
    a body that does not validate reaches the inner app whole, in one piece."""
    intake, inner, app = alone
    assert _status(intake, app, runs_url("intake-4"), _body()) == 201
    assert inner.reads == []
    refused = _body(attempt="one")
    assert _status(intake, app, runs_url("intake-4"), refused) == 299
    assert inner.reads == [refused]


def _arm(root_id: str) -> str:
    return f"/api/agent/runs/{root_id}/auto-resume"


ARM_CASES: list[tuple[str, dict[str, Any], int]] = [
    # what the intake answers itself
    ("arm", _sent(b'{"enabled": true}'), 200),
    ("arm again", _sent(b'{"enabled": true, "despite_native": false}'), 200),
    ("charset, unknown field",
     _sent(b'{"enabled": true, "x": 1}', "application/json; charset=utf-8"), 200),
    ("disable", _sent(b'{"enabled": false}'), 200),
    ("disable again", _sent(b'{"enabled": false}'), 200),
    # what it passes on to FastAPI
    ("not JSON", _sent(b"{"), 422),
    ("a JSON array", _sent(b"[]"), 422),
    ("not a strict bool", _sent(b'{"enabled": "yes"}'), 422),
    ("a missing field", _sent(b'{"despite_native": true}'), 422),
    ("no content type", _sent(b'{"enabled": true}', None), 422),
    ("another content type", _sent(b'{"enabled": true}', "text/plain"), 422),
]  # fmt: skip


def test_auto_resume_requests_are_answered_as_the_route_answers(
    pair: tuple[httpx.Client, ...],
) -> None:
    """Arming, arming again, disabling and malformed requests for a session paused on a limit
    get the same answers with or without the intake, in the same order."""
    assert _same_answer(pair, "POST", runs_url("hot-arm"), json=failure()).status_code == 201
    for case, request_kw, status in ARM_CASES:
        answer = _same_answer(pair, "PUT", _arm("hot-arm"), **request_kw)
        assert answer.status_code == status, (case, answer.text)


def test_auto_resume_refusals_are_answered_the_same(pair: tuple[httpx.Client, ...]) -> None:
    """An unknown session (404), a session not paused on a stated reset (409), a cancelled one,
    a deleted one (410) and the reserved root id: the same answers with or without it."""
    arm = {"json": {"enabled": True}}
    assert _same_answer(pair, "PUT", _arm("hot-unknown"), **arm).status_code == 404
    unstated = failure(message="Error: something else went wrong")
    assert _same_answer(pair, "POST", runs_url("hot-other"), json=unstated).status_code == 201
    assert _same_answer(pair, "PUT", _arm("hot-other"), **arm).status_code == 409
    assert _same_answer(pair, "POST", "/api/agent/runs/hot-other/cancel").status_code == 200
    assert _same_answer(pair, "PUT", _arm("hot-other"), **arm).status_code == 409
    assert _same_answer(pair, "DELETE", "/api/agent/runs/hot-other").status_code == 200
    assert _same_answer(pair, "PUT", _arm("hot-other"), **arm).status_code == 410
    assert _same_answer(pair, "PUT", _arm("tombstones"), **arm).status_code == 404


@pytest.mark.parametrize("root_id", ["-starts-with-a-dash", "a" * 201, "has space"])
def test_auto_resume_ids_the_route_refuses_are_passed_on(
    pair: tuple[httpx.Client, ...], root_id: str
) -> None:
    """An id outside the alphabet is not taken by the intake; FastAPI refuses it (422)."""
    assert AUTO_RESUME_PATH.fullmatch(_arm(root_id)) is None
    answer = _same_answer(pair, "PUT", _arm(root_id), json={"enabled": True})
    assert answer.status_code == 422


def test_the_intake_arms_a_valid_request_itself_and_passes_the_rest_whole(
    alone: tuple[HotWrites, _Inner, Any],
) -> None:
    """A valid PUT is answered without the inner app (a 404 for a session it does not know is
    still its own answer); a body that does not validate reaches the inner app whole."""
    intake, inner, app = alone
    assert _status(intake, app, runs_url("hot-5"), _body()) == 201
    assert _status(intake, app, _arm("hot-5"), b'{"enabled": true}', "PUT") == 200
    assert _status(intake, app, _arm("hot-6"), b'{"enabled": true}', "PUT") == 404
    assert inner.reads == []
    refused = b'{"enabled": 1}'
    assert _status(intake, app, _arm("hot-5"), refused, "PUT") == 299
    assert inner.reads == [refused]
