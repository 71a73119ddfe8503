"""The two busiest write routes, the failure report and PUT auto-resume, answer each kind of
request (well formed, lenient, malformed, refused) with the status the API promises, over a
real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rewake.db.engine import Database
from rewake.main import create_app
from rewake.settings import Settings
from tests.support.api import ALICE, T0, TOKENS, Clock, LiveServer, loopback_client
from tests.support.db import migrate
from tests.support.reports import OBSERVED, QUOTA, QUOTA_LATER, failure, runs_url


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A served API on a SQLite file of its own, as Alice."""
    path: Path = tmp_path_factory.mktemp("writes") / "w.db"
    url = f"sqlite:///{path}"
    migrate(url)
    database = Database(url)
    app = create_app(
        Settings(database_url=url, api_tokens=TOKENS, display_zone="Europe/Berlin"),
        database=database,
        clock=Clock(now=T0),
    )
    with (
        LiveServer(app) as base,
        loopback_client(base, headers=ALICE) as http,
    ):
        yield http
    database.dispose()


def _status(client: httpx.Client, method: str, url: str, **kw: Any) -> int:
    answer = client.request(method, url, **kw)
    assert answer.headers["content-type"].startswith(("application/json", "application/problem"))
    return answer.status_code


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
    ("new", _sent(_body()), 201),
    ("charset", _sent(_body(attempt=2), "application/json; charset=utf-8"), 201),
    ("unknown and lenient fields", _sent(_body(attempt=3, extra=1, zone="Mars/Olympus")), 201),
    ("nested too deep for json.loads", _sent(_deep_body(4)), 201),
    ("long message", _sent(_body(attempt=5, message="x" * 20_000 + QUOTA_LATER)), 201),
    ("naive observed_at", _sent(_body(attempt=6, observed_at="2026-11-30T13:00:00")), 422),
    ("future observed_at", _sent(_body(attempt=7, observed_at="2026-12-30T13:00:00Z")), 422),
    ("not JSON", _sent(b"{"), 422),
    ("a JSON array", _sent(b"[]"), 422),
    ("a wrong type", _sent(_body(attempt="one")), 422),
    ("a missing field", _sent(MISSING_FIELD), 422),
    ("invalid UTF-8", _sent(INVALID_UTF8), 400),
    ("no content type", _sent(_body(attempt=10), None), 422),
    ("another content type", _sent(_body(attempt=11), "text/plain"), 422),
]


@pytest.mark.parametrize(("case", "request_kw", "status"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_of_failure_report_gets_its_status(
    client: httpx.Client, case: str, request_kw: dict[str, Any], status: int
) -> None:
    """Valid, lenient and deeply nested reports are stored (201); malformed ones are refused."""
    answer = client.post(runs_url("writes-1"), **request_kw)
    assert answer.status_code == status, (case, answer.text)


def test_repeats_conflicts_and_deleted_sessions_get_their_statuses(client: httpx.Client) -> None:
    """The same report again (200), another body for a reported attempt (409), a report for a
    deleted session (410) and the reserved root id (422)."""
    url = runs_url("writes-2")
    assert _status(client, "POST", url, json=failure()) == 201
    assert _status(client, "POST", url, json=failure()) == 200
    assert _status(client, "POST", url, json=failure(message="other")) == 409
    assert _status(client, "POST", "/api/agent/runs/writes-2/cancel") == 200
    assert _status(client, "DELETE", "/api/agent/runs/writes-2") == 200
    assert _status(client, "POST", url, json=failure(attempt=2)) == 410
    assert _status(client, "POST", runs_url("tombstones"), json=failure()) == 422


@pytest.mark.parametrize(
    "root_id", ["-starts-with-a-dash", "a" * 201, "has space", "ünicode"]
)  # fmt: skip
def test_a_failure_report_for_an_id_outside_the_alphabet_is_refused(
    client: httpx.Client, root_id: str
) -> None:
    """An id outside the alphabet is refused (422) before anything is stored."""
    assert _status(client, "POST", runs_url(root_id), json=failure()) == 422


def test_a_report_without_a_token_is_refused(client: httpx.Client) -> None:
    """Auth runs first: no token, no report (401)."""
    answer = client.post(runs_url("writes-3"), json=failure(), headers={"Authorization": ""})
    assert answer.status_code == 401


def _arm(root_id: str) -> str:
    return f"/api/agent/runs/{root_id}/auto-resume"


ARM_CASES: list[tuple[str, dict[str, Any], int]] = [
    ("arm", _sent(b'{"enabled": true}'), 200),
    ("arm again", _sent(b'{"enabled": true, "despite_native": false}'), 200),
    ("charset, unknown field",
     _sent(b'{"enabled": true, "x": 1}', "application/json; charset=utf-8"), 200),
    ("disable", _sent(b'{"enabled": false}'), 200),
    ("disable again", _sent(b'{"enabled": false}'), 200),
    ("not JSON", _sent(b"{"), 422),
    ("a JSON array", _sent(b"[]"), 422),
    ("not a strict bool", _sent(b'{"enabled": "yes"}'), 422),
    ("a missing field", _sent(b'{"despite_native": true}'), 422),
    ("no content type", _sent(b'{"enabled": true}', None), 422),
    ("another content type", _sent(b'{"enabled": true}', "text/plain"), 422),
]  # fmt: skip


def test_auto_resume_requests_get_their_statuses_in_order(client: httpx.Client) -> None:
    """Arming, arming again, disabling and malformed requests for a session paused on a limit
    get the statuses the route promises, in the order sent."""
    assert _status(client, "POST", runs_url("writes-arm"), json=failure()) == 201
    for case, request_kw, status in ARM_CASES:
        answer = client.put(_arm("writes-arm"), **request_kw)
        assert answer.status_code == status, (case, answer.text)


def test_auto_resume_refusals_get_their_statuses(client: httpx.Client) -> None:
    """An unknown session (404), a session not paused on a stated reset (409), a cancelled one
    (409), a deleted one (410) and the reserved root id (404)."""
    arm = {"json": {"enabled": True}}
    assert _status(client, "PUT", _arm("writes-unknown"), **arm) == 404
    unstated = failure(message="Error: something else went wrong")
    assert _status(client, "POST", runs_url("writes-other"), json=unstated) == 201
    assert _status(client, "PUT", _arm("writes-other"), **arm) == 409
    assert _status(client, "POST", "/api/agent/runs/writes-other/cancel") == 200
    assert _status(client, "PUT", _arm("writes-other"), **arm) == 409
    assert _status(client, "DELETE", "/api/agent/runs/writes-other") == 200
    assert _status(client, "PUT", _arm("writes-other"), **arm) == 410
    assert _status(client, "PUT", _arm("tombstones"), **arm) == 404


@pytest.mark.parametrize("root_id", ["-starts-with-a-dash", "a" * 201, "has space"])
def test_auto_resume_for_an_id_outside_the_alphabet_is_refused(
    client: httpx.Client, root_id: str
) -> None:
    """An id outside the alphabet is refused (422)."""
    assert _status(client, "PUT", _arm(root_id), json={"enabled": True}) == 422


def test_writes_that_wait_past_the_busy_timeout_all_get_the_same_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six reports sent while another process holds SQLite's write lock longer than the busy
    timeout (1 s here, for 2.5 s) are all 503 database_unavailable before the lock goes: not
    the first refused at the timeout and the five queued behind it stored once the lock goes."""
    import sqlite3
    import threading
    import time

    from rewake.db import engine
    from tests.support.api import ALICE, serve_api
    from tests.support.db import migrate
    from tests.support.reports import failure, runs_url

    monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_MS", 1000)
    url = f"sqlite:///{tmp_path / 'locked.db'}"
    migrate(url)
    answers: list[tuple[int, str, float]] = []
    with serve_api(url) as api:
        holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")

        def report(n: int) -> None:
            started = time.monotonic()
            with httpx.Client(base_url=api.url, headers=ALICE, timeout=30) as client:
                got = client.post(runs_url(f"locked-{n}"), json=failure())
            answers.append(
                (got.status_code, got.json().get("code", ""), time.monotonic() - started)
            )

        threads = [threading.Thread(target=report, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        time.sleep(2.5)
        holder.execute("COMMIT")
        holder.close()
        for thread in threads:
            thread.join(30)
    assert (
        sorted((status, code) for status, code, _ in answers) == [(503, "database_unavailable")] * 6
    ), answers
    assert max(took for _, _, took in answers) < 2.5, answers
