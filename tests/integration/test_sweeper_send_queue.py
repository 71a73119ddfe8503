"""The send queue: a mark turns `sending` only as its send leaves (its lease and its signed
timestamp start then), and a sweeper holds no more claims than its workers can send within a
lease; so a healthy host slower than the queue drains loses no resume and sees none reaped
uncertain. In-process sweepers, the example host over loopback, a fresh SQLite file and a
fresh PostgreSQL schema."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from rewake.db.engine import Database
from rewake.db.models import MarkRow
from rewake.executors.factory import build_executor
from rewake.executors.webhook import WebhookExecutor
from rewake.marks.pacing import PacingRules
from rewake.settings import Settings
from rewake.sweeper.config import SweeperConfig
from rewake.sweeper.dispatcher import Dispatcher
from rewake.sweeper.metrics import SweeperMetrics
from rewake.sweeper.runtime import Sweeper
from rewake.sweeper.timer import utc_now
from tests.hosts.example_host import Call, ExampleHost
from tests.support.slowdown import Slowdown
from tests.support.sweeper import (
    count_in_states,
    fresh_database_url,
    mark_events,
    marks_by_root,
    seed_marks,
    utc,
    wait_until,
)

SECRET = "queue-secret-0123456789"
NO_PACING = PacingRules(max_in_flight=100, stagger_s=0)
UNSETTLED = ("armed", "claimed", "sending", "uncertain")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fresh_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    with fresh_database_url(request.param, tmp_path_factory.mktemp("queue")) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def own_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with fresh_database_url(request.param, tmp_path) as url:
        yield url


@dataclass
class SlowHostRun:
    """What a sweeper did against a host that takes a second per resume."""

    rows: dict[str, MarkRow]
    calls: list[Call]
    resumed: list[str]
    uncertain_ever: set[int]
    settled: bool
    #: How many times slower than idle the machine ran while the queue drained.
    slowdown: float = 1.0


@pytest.fixture(scope="module")
def slow_host_run(fresh_url: str) -> Iterator[SlowHostRun]:
    """Sixteen marks due at once, two workers, a healthy host taking 1 s a resume, a 3 s
    timeout and a 5 s lease, the lookup configured: run until every mark is settled. The queue
    takes 8 s to drain, longer than a lease; the timeout leaves the host's second 2 s to spare,
    and the lease the timeout 2 s more (on a loaded machine a request can wait that long for
    a core, and a send that outlived its timeout or lease would rightly be uncertain)."""
    database = Database(fresh_url)
    roots = seed_marks(database, 16, prefix=f"q-{uuid.uuid4().hex[:6]}", due_at=lambda _n: utc(-1))
    with ExampleHost(SECRET) as host:
        host.state.delay_s = 1.0
        executor = WebhookExecutor(
            host.resume_template, SECRET, lookup_template=host.lookup_template, timeout_s=3.0
        )
        config = SweeperConfig(
            interval_s=0.5, lease_s=5.0, workers=2, pacing=NO_PACING, jitter_s=0, heartbeat_s=5
        )
        sweeper = Sweeper(database, executor, config, SweeperMetrics(CollectorRegistry()))
        sweeper.start()
        try:
            with Slowdown() as slow:
                settled = wait_until(lambda: count_in_states(database, UNSETTLED) == 0, 30)
        finally:
            sweeper.stop()
        with host.state.lock:
            resumed = list(host.state.resumed)
        calls = host.calls()
    yield SlowHostRun(
        rows=marks_by_root(database, roots),
        calls=calls,
        resumed=resumed,
        uncertain_ever=set(mark_events(database, "mark_uncertain")),
        settled=settled,
        slowdown=slow.ratio(),
    )
    database.dispose()


def test_slow_healthy_host_loses_no_resume(slow_host_run: SlowHostRun) -> None:
    """Every mark queued behind a slow host is resumed once and recorded done; none is
    settled not_sent while its request was still waiting, none refused as a retired key."""
    run = slow_host_run
    assert run.settled
    assert Counter(row.state for row in run.rows.values()) == {"done": len(run.rows)}
    keys = {row.attempt_key for row in run.rows.values()}
    assert Counter(run.resumed) == Counter(dict.fromkeys(keys, 1))
    assert [call.status for call in run.calls if call.status != 202] == []


def test_no_mark_reaped_uncertain_while_it_waited(slow_host_run: SlowHostRun) -> None:
    """No mark sent to a host that answered every resume within the timeout was ever
    reaped uncertain."""
    ids = {row.id for row in slow_host_run.rows.values()}
    assert slow_host_run.uncertain_ever & ids == set()


def test_sent_at_is_when_the_request_left(slow_host_run: SlowHostRun) -> None:
    """Each resume's sent_at (the signed timestamp, the start of its lease) is the moment its
    request left, not the moment it was put in a queue."""
    gaps = []
    for call in slow_host_run.calls:
        sent_at = datetime.fromisoformat(call.body["mark"]["sent_at"])
        gaps.append(round(call.arrived - sent_at.timestamp(), 3))
    assert len(gaps) == len(slow_host_run.rows)
    # A send queued behind another would arrive at least one host delay (1 s) after sent_at.
    # One not queued arrives within 0.8 s on an idle machine; on a busy one that is scaled by
    # the slowdown measured while the queue drained, and stays under the host's 1 s.
    bound = min(0.8 * slow_host_run.slowdown, 0.95)
    assert all(-0.05 <= gap <= bound for gap in gaps), (gaps, bound)


def test_holds_no_more_claims_than_its_workers_send_within_a_lease(own_url: str) -> None:
    """With 2 workers, a 5 s webhook timeout and a 10 s lease (REWAKE_* settings), one fire
    claims at most 4 of 12 due marks (2 sends a worker a lease), and only the 2 whose sends
    leave at once are sending."""
    database = Database(own_url)
    seed_marks(database, 12, prefix=f"c-{uuid.uuid4().hex[:6]}", due_at=lambda _n: utc(-1))
    with ExampleHost(SECRET) as host:
        host.state.delay_s = 2.0
        settings = Settings(
            executor="webhook", webhook_url=host.resume_template, webhook_secret=SECRET,
            sweep_workers=2, webhook_timeout_s=5, sweep_lease_s=10,
        )  # fmt: skip
        config = SweeperConfig.from_settings(settings)
        dispatcher = Dispatcher(
            database, build_executor(settings), config, SweeperMetrics(CollectorRegistry()),
            sweeper_id=f"t-{uuid.uuid4().hex[:6]}", clock=utc_now,
        )  # fmt: skip
        try:
            dispatcher.fire(utc_now())
            held = count_in_states(database, ("claimed", "sending"))
            sending = count_in_states(database, ("sending",))
        finally:
            dispatcher.close(utc_now())
            assert wait_until(lambda: count_in_states(database, ("sending",)) == 0, 10)
    database.dispose()
    assert (held, sending) == (4, 2)
