"""`rewake serve`'s access log: one `request` event per answer, at INFO, on `rewake.access`,
refusals answered before routing included; never the query string, never a body."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from rewake.api.problems import MAX_BODY_BYTES
from tests.support.api import ALICE, Api, serve_api
from tests.support.reports import failure, runs_url
from tests.support.slowdown import Wait


@pytest.fixture(scope="module")
def live(sqlite_url: str) -> Iterator[Api]:
    with serve_api(sqlite_url) as api:
        yield api


def access_lines(caplog: pytest.LogCaptureFixture, count: int = 0) -> list[dict[str, object]]:
    """The access lines logged so far, once `count` of them have come (or 5 s passed): the
    server thread writes a line after the answer's last byte, which the client may read first."""
    wait = Wait(5)
    while True:
        lines = [
            dict(record.rewake_fields)  # type: ignore[attr-defined]
            for record in caplog.records
            if record.name == "rewake.access"
        ]
        if len(lines) >= count or wait.over():
            return lines
        time.sleep(0.01)


def test_one_access_line_per_request_with_its_fields(
    live: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """A request answered by a route logs exactly one `request` event at INFO with the
    method, the path without its query string, the status, the time in ms and the actor."""
    caplog.set_level(logging.INFO, logger="rewake.access")
    with live.client() as client:
        assert client.get("/api/agent/runs", params={"token": "q-secret-1"}).status_code == 200
    [line] = access_lines(caplog, 1)
    assert line.keys() == {"method", "path", "status", "ms", "actor"}
    assert (line["method"], line["path"], line["status"], line["actor"]) == (
        "GET", "/api/agent/runs", 200, "alice",
    )  # fmt: skip
    assert isinstance(line["ms"], float) and line["ms"] >= 0
    assert [r.levelno for r in caplog.records if r.name == "rewake.access"] == [logging.INFO]
    assert "q-secret-1" not in caplog.text


def test_refusals_before_routing_are_logged_once(
    live: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 from the auth and a 413 from the body limit, both answered before any route,
    each log one access line; the refused caller is `-`, and no body is logged."""
    caplog.set_level(logging.INFO, logger="rewake.access")
    with live.client({}) as anonymous:
        assert anonymous.get("/api/agent/runs").status_code == 401
    with live.client() as client:
        body = failure(message="x" * (MAX_BODY_BYTES + 1))
        assert client.post(runs_url("s-big"), json=body).status_code == 413
    lines = access_lines(caplog, 2)
    assert [(line["status"], line["actor"]) for line in lines] == [(401, "-"), (413, "alice")]
    assert "xxxxxxxx" not in caplog.text


def test_warning_level_silences_the_access_log(live: Api, caplog: pytest.LogCaptureFixture) -> None:
    """With the log level at WARNING (REWAKE_LOG_LEVEL=WARNING) no access line is written."""
    caplog.set_level(logging.WARNING)
    with live.client(ALICE) as client:
        client.get("/healthz")
    assert access_lines(caplog) == []
