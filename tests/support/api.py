"""The API served by a real uvicorn on loopback, on a clock the tests set."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.support.slowdown import Wait

#: The instant most service tests stand at: one minute after their reports were observed.
T0 = datetime(2026, 11, 30, 13, 6, tzinfo=UTC)
TOKENS = "alice:alice-secret-0123456789,bob:bob-secret-0123456789"
ALICE = {"Authorization": "Bearer alice-secret-0123456789"}
#: How long a test's client waits for the in-process server. Not httpx's 5 s: at the start of
#: a parallel run (eight workers and the real CLIs on two cores) a fresh server's first answer
#: has taken longer than that, twice; a hung server still fails the test, 30 s later.
LOOPBACK_TIMEOUT_S = 30.0


def loopback_client(base_url: str, **options: Any) -> httpx.Client:
    """An httpx client of a server a test started on loopback, waiting LOOPBACK_TIMEOUT_S;
    `options` are httpx.Client's (headers, cookies, follow_redirects)."""
    return httpx.Client(base_url=base_url, timeout=LOOPBACK_TIMEOUT_S, **options)


@dataclass
class Clock:
    """A clock the tests set; the app reads it once per request."""

    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


class LiveServer:
    """An app served by uvicorn in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        wait = Wait(10)
        while not self.server.started:
            if wait.over() or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@dataclass
class Api:
    """A running API: its base URL, its clock, and its database."""

    url: str
    clock: Clock
    database: Any

    def client(self, headers: dict[str, str] | None = None) -> httpx.Client:
        return loopback_client(self.url, headers=ALICE if headers is None else headers)


@contextmanager
def serve_api(database_url: str, **settings: Any) -> Iterator[Api]:
    """The API over `database_url`, with tokens unless told otherwise, on a settable clock."""
    from rewake.db.engine import Database
    from rewake.main import create_app
    from rewake.settings import Settings

    settings.setdefault("api_tokens", TOKENS)
    settings.setdefault("display_zone", "Europe/Berlin")
    clock = Clock()
    database = Database(database_url)
    config = Settings(database_url=database_url, **settings)
    app = create_app(config, database=database, clock=clock)
    with LiveServer(app) as url:
        yield Api(url=url, clock=clock, database=database)
    database.dispose()


def mark_url(root_id: str) -> str:
    """The session's auto-resume route."""
    return f"/api/agent/runs/{root_id}/auto-resume"


def arm(http: httpx.Client, root_id: str, **extra: object) -> httpx.Response:
    """PUT enabled=true on the session's mark, with `extra` in the body."""
    return http.put(mark_url(root_id), json={"enabled": True, **extra})


def drive(api: Api, root_id: str, to: str, at: datetime | None = None) -> str:
    """Move the session's armed mark as the sweeper would: claimed, sending, or an outcome."""
    from rewake.marks import lifecycle as sweeper

    now = at or api.clock.now + timedelta(hours=6)
    with api.database.writer() as db, db.begin():
        claimed = sweeper.claim_due(db, now, 10_000, "test-sweeper", 60)
    mine = next(mark for mark in claimed if mark.root_id == root_id)
    assert mine.id is not None and mine.attempt_key is not None
    if to != "claimed":
        with api.database.durable_writer() as db, db.begin():
            assert sweeper.start_sending(db, [(mine.id, mine.attempt_key)], now, 60) != []
    if to not in ("claimed", "sending"):
        with api.database.writer() as db, db.begin():
            sends = [sweeper.SendResult(mine.id, mine.attempt_key, to)]
            assert sweeper.settle(db, sends, now) != []
    return mine.attempt_key
