"""Operations routes and auth over HTTP: healthz, readyz, metrics, stateless parse, tokens."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import delete

from rewake import heartbeats
from rewake.db.models import SweeperHeartbeatRow
from rewake.parsers import parse
from tests.support.api import Api, arm, mark_url, serve_api
from tests.support.reports import NOT_STATED, OBSERVED, QUOTA, failure, runs_url


def heartbeat(api: Api, at: datetime, executor: str | None = "log", name: str = "sweeper") -> None:
    with api.database.writer() as db, db.begin():
        heartbeats.record_heartbeat(db, name, at, host="test", pid=1, executor=executor)


def forget_sweepers(api: Api) -> None:
    """No sweeper seen: the API and its database are shared with other test modules."""
    with api.database.writer() as db, db.begin():
        db.execute(delete(SweeperHeartbeatRow))


@pytest.fixture(autouse=True)
def _no_sweeper_left_seen(api: Api) -> Iterator[None]:
    """The heartbeats a test here writes end with it: a later module's marks would otherwise
    carry this module's sweepers in their warnings."""
    yield
    forget_sweepers(api)


def test_healthz_needs_no_token(api: Api) -> None:
    """/healthz answers without a token and without touching the database."""
    answer = httpx.get(f"{api.url}/healthz")
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})


def test_readyz_needs_a_sweeper_seen_in_90_s(api: Api, http: httpx.Client) -> None:
    """/readyz is 503 not_ready until a sweeper heartbeat is at most 90 s old."""
    heartbeat(api, api.clock.now - timedelta(seconds=91))
    stale = http.get("/readyz")
    assert (stale.status_code, stale.json()["code"]) == (503, "not_ready")
    assert stale.json()["checks"]["schema"]["ok"] is True
    heartbeat(api, api.clock.now - timedelta(seconds=90))
    ready = http.get("/readyz")
    assert ready.status_code == 200
    assert {name: check["ok"] for name, check in ready.json()["checks"].items()} == {
        "database": True,
        "schema": True,
        "storage": True,
        "sweeper": True,
    }


def test_fresh_heartbeat_removes_the_no_sweeper_warning(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """A sweeper seen within 90 s that runs the log executor turns "no sweeper seen" into the
    log executor warning."""
    forget_sweepers(api)
    http.post(runs_url(root_id), json=failure())
    assert arm(http, root_id).json()["warnings"] == ["no sweeper seen in the last 90 s"]
    heartbeat(api, api.clock.now)
    assert http.get(mark_url(root_id)).json()["warnings"] == [
        "executor is log: nothing will be resumed"
    ]


@pytest.mark.parametrize(
    ("sweepers", "warnings"),
    [
        ([("command", 0)], []),
        ([("log", 0), ("command", 0)], []),  # one sweeper that resumes is enough
        ([("command", 91), ("log", 0)], ["executor is log: nothing will be resumed"]),
        ([("command", 91)], ["no sweeper seen in the last 90 s"]),
        ([(None, 0)], []),  # an older rewake's sweeper does not say: no claim is made
    ],
)
def test_a_marks_warnings_come_from_the_sweepers_seen(
    api: Api, http: httpx.Client, root_id: str,
    sweepers: list[tuple[str | None, int]], warnings: list[str],
) -> None:  # fmt: skip
    """The mark's warnings follow the executors the sweepers seen in the last 90 s report in
    their heartbeats, never the API process's own executor setting."""
    forget_sweepers(api)
    for n, (executor, age_s) in enumerate(sweepers):
        heartbeat(api, api.clock.now - timedelta(seconds=age_s), executor, name=f"s{n}")
    http.post(runs_url(root_id), json=failure())
    assert arm(http, root_id).json()["warnings"] == warnings


def test_metrics_count_failures_refusals_and_marks(http: httpx.Client, root_id: str) -> None:
    """/metrics has failures by provider and kind, refusals by code, marks by state."""
    http.post(runs_url(root_id), json=failure(message=NOT_STATED))
    http.post(runs_url(root_id, "r2"), json=failure())
    text = http.get("/metrics").text
    assert 'rewake_failures_total{kind="provider_quota",provider="claude"}' in text
    assert 'rewake_refusals_total{code="not_stated"}' in text
    assert 'rewake_marks{state="armed"}' in text


def test_metrics_name_the_build_the_process_and_each_routes_durations(
    api: Api, http: httpx.Client, root_id: str
) -> None:
    """/metrics carries rewake_build_info, the process's memory, request durations by route
    template and status (the auth's refusals and unknown paths as one `unrouted` route), and no
    `_created` series."""
    http.post(runs_url(root_id), json=failure())
    with api.client({}) as anonymous:  # no token: refused by the auth, and still timed
        assert anonymous.get(f"/api/agent/runs/{root_id}").status_code == 401
    http.get("/no/such/path")
    text = http.get("/metrics").text
    assert 'rewake_build_info{python="' in text and 'version="' in text
    assert "process_resident_memory_bytes" in text
    duration = "rewake_http_request_duration_seconds_count"
    route = "/api/agent/runs/{root_id}/runs/{run_id}/failures"
    assert f'{duration}{{method="POST",route="{route}",status="201"}}' in text
    assert f'{duration}{{method="GET",route="unrouted",status="401"}}' in text
    assert f'{duration}{{method="GET",route="unrouted",status="404"}}' in text
    assert [line for line in text.splitlines() if "_created" in line] == []


def test_parse_route_returns_the_verdict_json(http: httpx.Client) -> None:
    """POST /api/parse answers exactly what rewake.parsers.parse gives, and stores nothing."""
    body = {"message": QUOTA, "observed_at": OBSERVED, "zone": "Europe/Berlin"}
    answer = http.post("/api/parse", json=body)
    expected = parse(QUOTA, observed_at=datetime.fromisoformat(OBSERVED), zone="Europe/Berlin")
    assert answer.json() == expected.to_json()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic YWxpY2U6c2VjcmV0"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer alice-secret-0123456789x"},
    ],
)
def test_missing_or_wrong_token_is_401(api: Api, headers: dict[str, str]) -> None:
    """Every route but /healthz needs a configured bearer token: else 401 unauthorized."""
    with api.client(headers) as client:
        for answer in (
            client.get("/metrics"),
            client.get("/openapi.json"),
            client.post("/api/parse", content=b"not json"),
            client.get("/api/agent/runs"),
        ):
            assert answer.status_code == 401
            assert answer.json()["code"] == "unauthorized"
            assert answer.headers["www-authenticate"].startswith("Bearer")


def test_the_token_name_is_who_acted(api: Api, root_id: str) -> None:
    """armed_by is the name of the token used."""
    with api.client({"Authorization": "Bearer bob-secret-0123456789"}) as bob:
        bob.post(runs_url(root_id), json=failure())
        assert arm(bob, root_id).json()["armed_by"] == "bob"


def test_without_tokens_loopback_callers_act_as_local(sqlite_url: str, root_id: str) -> None:
    """With no token configured, a loopback caller needs none and acts as `local`."""
    with serve_api(sqlite_url, api_tokens=None) as api, api.client({}) as client:
        client.post(runs_url(root_id), json=failure())
        assert arm(client, root_id).json()["armed_by"] == "local"


def test_a_database_that_cannot_grow_is_storage_full_until_a_write_succeeds(
    tmp_path: Path,
) -> None:
    """SQLite stopped from growing (PRAGMA max_page_count at its size: SQLITE_FULL, the result
    code it gives when the disk is full) makes a report 503 storage_full and /readyz 503 on
    its storage check; once it may grow again, the next write succeeds and readiness returns.
    Runs without root; tests/e2e/test_service_storage.py fills a real file system."""
    from sqlalchemy import event

    from tests.support.api import ALICE
    from tests.support.db import migrate

    url = f"sqlite:///{tmp_path / 'full.db'}"
    migrate(url)
    limit: dict[str, int | None] = {"pages": None}
    with serve_api(url) as api:
        heartbeat(api, api.clock.now)

        @event.listens_for(api.database.engine, "connect")
        def _cap(dbapi_connection: Any, _record: Any) -> None:
            if limit["pages"] is not None:
                dbapi_connection.execute(f"PRAGMA max_page_count={limit['pages']}")

        with api.database.engine.connect() as connection:
            limit["pages"] = connection.exec_driver_sql("PRAGMA page_count").scalar()
        api.database.engine.dispose()  # every connection from now on is capped
        with httpx.Client(base_url=api.url, headers=ALICE, timeout=30) as client:
            big = failure() | {"message": "x" * 200_000}
            refused = client.post(runs_url("full-1"), json=big)
            assert (refused.status_code, refused.json()["code"]) == (503, "storage_full")
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["checks"]["storage"] == {"ok": False, "error": "storage_full"}
            limit["pages"] = None
            api.database.engine.dispose()
            assert client.post(runs_url("full-2"), json=failure()).status_code == 201
            assert client.get("/readyz").status_code == 200
